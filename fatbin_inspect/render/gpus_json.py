"""``gpus --format json``: the packaged data's fields for each GPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FIELDS = (
    "name",
    "compute_capability",
    "architecture",
    "segment",
    "tegra_igpu",
    "nvidia_smi_names",
    "confidence",
)


def gpu_dicts(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: r.get(k) for k in FIELDS} for r in rows]
