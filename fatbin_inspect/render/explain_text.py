"""Plain text for ``explain``: condition, why, what to check, and the ``check`` command."""

from __future__ import annotations

from fatbin_inspect.compat.explain import Explanation


def explanation_text(e: Explanation) -> str:
    names = " / ".join(n for n in (e.runtime_name, e.driver_name) if n)
    lines = [
        f"{e.number}  {names}",
        f"  message: {e.message}",
        f"  matched: {e.matched_as}",
        f"  when:    {e.phase}",
        f"  what:    {e.meaning}",
        f"  why:     {e.signals}",
    ]
    if e.legacy_number is not None:
        lines.append(f"  note:    CUDA <= 10.0 runtimes reported this as {e.legacy_number}")
    if e.checks:
        lines.append("  check:")
        lines += [f"    - {c}" for c in e.checks]
    if e.command:
        lines.append(f"  catch it before deploying:\n    {e.command}")
    return "\n".join(lines) + "\n"
