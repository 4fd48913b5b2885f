"""Counted nouns, worded once for every report (``1 file``, ``2 files``); no rich import, so the
document formats (Markdown, GitHub annotations) pay nothing for it."""

from __future__ import annotations

# nouns whose plural is not ``noun + "s"``
_IRREGULAR = {"distribution/folder": "distributions/folders", "entry": "entries", "match": "matches"}


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``1 file``, ``2 files``, ``0 files``: every count of every report is worded here."""
    return f"{n} {noun if n == 1 else many or _IRREGULAR.get(noun, noun + 's')}"
