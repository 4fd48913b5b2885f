"""``gpus --format json``: the packaged data's fields for each GPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fatbin_inspect.compat import data
from fatbin_inspect.render import jsondump

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


def render_gpus_json(rows: Sequence[dict[str, Any]], color: bool = False, width: int | None = None) -> str:
    """The document, schema_version 1, with the date of the GPU data."""
    doc = {
        "schema_version": jsondump.SCHEMA_VERSION,
        "as_of": data.load("gpus")["as_of"],
        "gpus": gpu_dicts(rows),
    }
    return jsondump.dumps(doc)
