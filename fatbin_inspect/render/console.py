"""Rich consoles that render to a string at a width the caller chose, honouring NO_COLOR / FORCE_COLOR.

``width=None`` means "no wrapping": output that goes to a pipe or a file keeps one record a line,
so ``grep`` and ``cut`` work; the CLI passes the terminal's width (or ``COLUMNS``) otherwise.
Every renderable goes through ``escape.safe`` (and markup is off), so no renderer can pass an
input's control characters or ``[link=...]`` to the terminal. Lines never carry trailing blanks. Wrapped text breaks between words only (a single word wider
than the line is folded) and continues under its first word (``hang``).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.text import Text

from fatbin_inspect.render.escape import safe, shown

UNBOUNDED = 1 << 15  # "no wrapping": wider than any line a report holds
COLOR_MODES = ("auto", "always", "never")
_SGR_PARAMS = "0123456789;"


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
        height=UNBOUNDED,  # both given: rich never reads COLUMNS/LINES (5,000 digits: ValueError)
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
    )
    for r in renderables:
        con.print(safe(r))
    return "".join(_rstrip(line) + "\n" for line in buf.getvalue().splitlines())


def _rstrip(line: str) -> str:
    """``line`` without the spaces and tabs that pad it before its trailing SGR codes (colour
    resets), in one pass from its end. A regex with a lookahead for "only SGR codes to the end"
    retried that lookahead at each space of every padding run: a column padded to a 100,000-
    character name cost the square of its width on each of the table's lines."""
    end = len(line)
    while end >= 3 and line[end - 1] == "m":  # peel ``ESC [ digits;... m`` codes off the end
        start = line.rfind("\x1b[", 0, end)
        if start < 0 or line[start + 2 : end - 1].strip(_SGR_PARAMS):
            break
        end = start
    return line[:end].rstrip(" \t") + line[end:]


# a word wider than its line breaks after a path separator before it is folded (``a/b!c``)
_WORD = re.compile(r"\S+\s*")
_PATH_PIECE = re.compile(r"[^/!]*[/!]+|[^/!]+")


def _pieces(plain: str, width: int) -> list[tuple[int, int]]:
    """(start, end) of the units a line is filled with: words with their trailing blanks; a word
    wider than ``width`` as its path components (after each ``/`` or ``!``), and a component still
    wider than ``width`` in ``width``-cell chunks (the only place a name is ever cut)."""
    out: list[tuple[int, int]] = []
    for m in _WORD.finditer(plain):
        word = m.group(0)
        if cell_len(word.rstrip()) <= width:
            out.append(m.span())
            continue
        for p in _PATH_PIECE.finditer(word):
            out += _chunks(plain, m.start() + p.start(), m.start() + p.end(), width)
    return out


def _chunks(plain: str, start: int, end: int, width: int) -> list[tuple[int, int]]:
    """``plain[start:end]`` in chunks of at most ``width`` cells (a character wider than that
    alone), its trailing blanks with the last: in one pass over its characters (measuring what
    was left after each cut cost the square of a long name's length)."""
    body = start + len(plain[start:end].rstrip())
    out: list[tuple[int, int]] = []
    cut, used = start, 0
    for i in range(start, body):
        w = cell_len(plain[i])
        if used and used + w > width:
            out.append((cut, i))
            cut, used = i, 0
        used += w
    out.append((cut, end))
    return out


def wrap(text: Text, width: int) -> list[Text]:
    """``text`` in lines of at most ``width`` cells, broken between words, or inside a path
    wider than the line after a ``/`` or ``!``; never inside a name that fits on a line."""
    plain = text.plain
    lead = len(plain) - len(plain.lstrip(" "))
    width = max(1, width)
    cuts: list[int] = []  # where each line after the first starts in ``plain``
    used = min(lead, width - 1) if lead else 0  # the current line's cells so far
    for a, b in _pieces(plain, width):
        piece = plain[a:b]
        if used and used + cell_len(piece.rstrip()) > width:
            cuts.append(a)
            used = 0
        used += cell_len(piece)
    # one division (a slice of a ``Text`` copies all of it past the cut: slicing line by line
    # cost the square of a long name's length)
    lines = list(text.divide(cuts))
    for line in lines:
        line.rstrip()
    if len(lines) > 1 and not lines[-1].plain:
        lines.pop()
    return lines


class PathCell:
    """A table cell holding a path: its column may be as narrow as its longest component, and it
    wraps after a ``/`` or ``!`` (``wrap``), never inside a file name."""

    def __init__(self, text: Text):
        self.text = text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        parts = [cell_len(p) for p in _PATH_PIECE.findall(self.text.plain)] or [0]
        return Measurement(min(max(parts), options.max_width), min(self.text.cell_len, options.max_width))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from wrap(self.text, options.max_width)


class Hanging:
    """Text wrapped between words whose second and later lines start ``indent`` columns in (at
    most a third of the width, so a long head never squeezes the text to nothing)."""

    def __init__(self, text: Text, indent: int, cap: bool = True):
        self.text = text
        self.indent = indent
        self.cap = cap

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        indent = min(self.indent, width // 3) if self.cap else min(self.indent, width - 1)
        lines = wrap(self.text, width)
        if not lines:
            return
        yield lines[0]
        rest = self.text[len(lines[0].plain) :]
        rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")) :]
        if rest.plain:
            for line in wrap(rest, max(1, width - indent)):
                yield Text(" " * indent) + line


def hang(head: str | Text, body: str | Text = "", style: str = "") -> Hanging:
    """``head`` then ``body``; wrapped lines start under the first character of ``body``."""
    h = Text(head, style=style) if isinstance(head, str) else head
    b = Text(body, style=style) if isinstance(body, str) else body
    return Hanging(h + b, h.cell_len)


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
        if h in keep or any(_plain(r[i]).strip() for r in rows if i < len(r) and r[i] is not None)
    ]
    return [headers[i] for i in used], [[r[i] for i in used] for r in rows]


def _plain(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else "" if cell is None else str(cell)


def _text(cell: object) -> Text:
    """A cell as ``Text``; a string escaped first (``shown``), since rich's ``Text`` drops BEL, BS,
    VT, FF and CR where the one escaping shows them (``\\x07``), as every other format does."""
    return cell if isinstance(cell, Text) else Text(shown(_plain(cell)))


def natural_width(headers: Sequence[str], rows: Sequence[Sequence[object] | Text], gap: int = 2) -> int:
    """Columns one unwrapped row of ``grid`` takes (Text rows, notes, not counted)."""
    widths = [len(h) for h in headers]
    for r in rows:
        if not isinstance(r, Text):
            for i, c in enumerate(r[: len(widths)]):
                widths[i] = max(widths[i], _text(c).cell_len)
    return sum(widths) + gap * (len(widths) - 1)


MIN_LAST = 32  # narrower than this, the last column moves to its own line under the row


def grid(
    headers: Sequence[str] | None,
    rows: Sequence[Sequence[object] | Text],
    width: int | None,
    right: Sequence[str] = (),
    indent: int = 0,
    gap: int = 2,
) -> list[RenderableType]:
    """A borderless table as lines. Every column but the last is as wide as its widest cell and
    never wraps; the last one wraps between words under its own first character, or, when fewer
    than ``MIN_LAST`` columns are left for it, goes on its own line(s) under the row. Unbounded
    (``width=None``): one row a line. A row is a sequence of cells (str or Text); a row that is a
    single Text is printed as it is (a note or a group title), wrapped 2 columns in."""
    lay = _layout(headers, [r for r in rows if not isinstance(r, Text)], width, right, indent, gap)
    cols = lay.cols
    out: list[RenderableType] = []
    if headers:
        out += lay.line(list(headers), style="bold")
    for row in rows:
        if isinstance(row, Text):
            out.append(Hanging(row, len(row.plain) - len(row.plain.lstrip(" ")) + 2))
        else:
            out += lay.line([*row, *[""] * (cols - len(row))])
    return out


def _layout(
    headers: Sequence[str] | None,
    table_rows: Sequence[Sequence[object]],
    width: int | None,
    right: Sequence[str],
    indent: int,
    gap: int,
) -> _Layout:
    cols = len(headers) if headers else max((len(r) for r in table_rows), default=0)
    widths = _widths(cols, ([list(headers)] if headers else []) + [list(r) for r in table_rows])
    aligned = {i for i, n in enumerate(headers[:cols]) if n in right} if headers else set()
    return _Layout(cols, widths, aligned, _last_below(widths, width, indent, gap), indent, gap)


def _last_below(widths: list[int], width: int | None, indent: int, gap: int) -> bool:
    """Fewer than ``MIN_LAST`` columns (or the last one's width) are left for the last column."""
    cols = len(widths)
    lead = indent + sum(widths[:-1]) + gap * (cols - 1) if cols else indent
    return width is not None and cols > 1 and width - lead < min(MIN_LAST, widths[-1])


def _widths(cols: int, rows: list[list]) -> list[int]:
    """The widest cell of each of the first ``cols`` columns."""
    widths = [0] * cols
    for r in rows:
        for i, c in enumerate(r[:cols]):
            widths[i] = max(widths[i], _text(c).cell_len)
    return widths


@dataclass(frozen=True)
class _Layout:
    """How ``grid`` lays out a row: column widths, right-aligned columns, the last one below."""

    cols: int
    widths: list[int]
    right: set[int]  # columns aligned right
    below: bool  # the last column goes on its own line(s) under the row
    indent: int
    gap: int

    def cell(self, c: object, i: int, style: str) -> Text:
        t = _text(c).copy()
        if style:
            t.stylize(style)
        if i == self.cols - 1 and self.below:
            return t
        pad = Text(" " * (self.widths[i] - t.cell_len))
        return pad + t if i in self.right else t + pad

    def line(self, cells: Sequence[object], style: str = "") -> list[RenderableType]:
        parts = [self.cell(c, i, style) for i, c in enumerate(cells[: self.cols])]
        gap = Text(" " * self.gap)
        if self.below:
            head = Text(" " * self.indent) + gap.join(parts[:-1])
            head.rstrip()
            tail = parts[-1]
            below_row: list[RenderableType] = [head]
            if tail.plain:
                below_row.append(Hanging(Text(" " * (self.indent + 4)) + tail, self.indent + 4))
            return below_row
        head = Text(" " * self.indent) + gap.join([*parts[:-1], Text("")])
        return [Hanging(head + parts[-1], head.cell_len, cap=False)]


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
