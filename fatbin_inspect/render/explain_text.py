"""Text for ``explain`` (``--format table``): condition, why, what to check, and the ``check`` command."""

from __future__ import annotations

from rich.text import Text

from fatbin_inspect.compat.explain import Explanation
from fatbin_inspect.render.console import hang, render


def explanation_text(e: Explanation, color: bool = False, width: int | None = None) -> str:
    """The ``table`` format of ``explain``: one field a line, wrapped under its value."""
    names = " / ".join(n for n in (e.runtime_name, e.driver_name) if n)
    out: list = [Text(f"{e.number}  {names}" if e.number is not None else e.title or "", style="bold")]
    for label, value in (
        ("message", e.message),
        ("matched", e.matched_as),
        ("when", e.phase),
        ("what", e.meaning),
        ("why", e.signals),
    ):
        out.append(hang(f"  {label + ':':<9}", str(value)))
    if e.legacy_number is not None:
        out.append(hang("  note:    ", f"CUDA <= 10.0 runtimes reported this as {e.legacy_number}"))
    if e.checks:
        out.append(Text("  check:"))
        out += [hang("    - ", c) for c in e.checks]
    if e.command:
        out += [Text("  catch it before deploying:"), hang("    ", e.command, style="cyan")]
    return render(out, color, width)
