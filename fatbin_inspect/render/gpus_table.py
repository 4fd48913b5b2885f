"""Table for ``gpus``: what the packaged data knows about each GPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from fatbin_inspect.render.console import drop_empty_columns, grid, render


def render_gpus(rows: Sequence[dict[str, Any]], color: bool = False, width: int | None = None) -> str:
    """One GPU a line in the order given: CC first, the name last (the column that wraps)."""
    cells = [
        [
            r["compute_capability"],
            r["architecture"] or "",
            r["segment"] or "",
            "yes" if r["tegra_igpu"] else "",
            r["confidence"],
            r["name"],
        ]
        for r in rows
    ]
    headers, cells = drop_empty_columns(
        ["CC", "architecture", "segment", "tegra", "confidence", "name"], cells
    )
    return render(
        [*grid(headers, cells, width), Text(f"{len(rows)} GPU{'' if len(rows) == 1 else 's'}")], color, width
    )
