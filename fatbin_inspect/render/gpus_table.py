"""Table for ``gpus``: what the packaged data knows about each GPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from fatbin_inspect.render.console import render


def render_gpus(rows: Sequence[dict[str, Any]], color: bool = False) -> str:
    tab = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("name", "CC", "architecture", "segment", "tegra", "confidence"):
        tab.add_column(col)
    for r in rows:
        tab.add_row(
            r["name"],
            r["compute_capability"],
            r["architecture"],
            r["segment"],
            "yes" if r["tegra_igpu"] else "",
            r["confidence"],
        )
    return render([tab, f"{len(rows)} GPUs"], color)
