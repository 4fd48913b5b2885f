"""Rich consoles that render to a string at a width the caller chose, honouring NO_COLOR / FORCE_COLOR.

``width=None`` means "no wrapping": output that goes to a pipe or a file keeps one record a line,
so ``grep`` and ``cut`` work; the CLI passes the terminal's width (or ``COLUMNS``) otherwise.
Lines never carry trailing blanks. Wrapped text breaks between words only (a single word wider
than the line is folded) and continues under its first word (``hang``).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Sequence

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

UNBOUNDED = 1 << 15  # "no wrapping": wider than any line a report holds
COLOR_MODES = ("auto", "always", "never")
_TRAILING = re.compile(r"[ \t]+(?=(?:\x1b\[[0-9;]*m)*$)")


def want_color(stream_isatty: bool, mode: str = "auto") -> bool:
    """``--color always|never`` wins; under ``auto``, NO_COLOR, then FORCE_COLOR, then the stream."""
    if mode != "auto":
        return mode == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream_isatty


def render(renderables: Iterable[RenderableType], color: bool, width: int | None = None) -> str:
    buf = io.StringIO()
    con = Console(
        file=buf,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        width=width or UNBOUNDED,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
    )
    for r in renderables:
        con.print(r)
    return "".join(_TRAILING.sub("", line) + "\n" for line in buf.getvalue().splitlines())


def hang(head: str | Text, body: str | Text, style: str = "") -> Table:
    """``head`` then ``body``; wrapped lines of ``body`` start under its first character."""
    grid = Table.grid(padding=0)
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(
        Text(head, style=style) if isinstance(head, str) else head,
        Text(body, style=style) if isinstance(body, str) else body,
    )
    return grid


def bounded(items: Sequence[str], limit: int | None) -> tuple[list[str], str | None]:
    """At most ``limit`` items (all when ``None``) and the ``… and N more`` line for the rest."""
    if limit is None or len(items) <= limit:
        return list(items), None
    return list(items[:limit]), f"… and {len(items) - limit} more (--kernels shows all)"


def drop_empty_columns(
    headers: Sequence[str], rows: Sequence[Sequence[object]], keep: Sequence[str] = ()
) -> tuple[list[str], list[list[object]]]:
    """The columns of ``rows`` with at least one non-empty cell (and those named in ``keep``)."""
    used = [
        i
        for i, h in enumerate(headers)
        if h in keep or any(str(r[i]).strip() for r in rows if i < len(r) and r[i] is not None)
    ]
    return [headers[i] for i in used], [[r[i] for i in used] for r in rows]


def human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
