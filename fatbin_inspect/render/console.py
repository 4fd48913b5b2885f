"""Rich consoles that render to a string, honouring NO_COLOR / FORCE_COLOR."""

from __future__ import annotations

import io
import os
import shutil

from rich.console import Console


def want_color(stream_isatty: bool) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream_isatty


def render(renderables, color: bool, width: int = None) -> str:
    buf = io.StringIO()
    width = width or max(100, shutil.get_terminal_size((120, 24)).columns)
    con = Console(
        file=buf,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        width=width,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )
    for r in renderables:
        con.print(r)
    return buf.getvalue()


def human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
