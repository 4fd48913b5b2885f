"""``extract --format table``: the files written, one name a line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def render_written(
    output_dir: str, written: Sequence[dict[str, Any]], color: bool = False, width: int | None = None
) -> str:
    return "".join(w["file"] + "\n" for w in written)
