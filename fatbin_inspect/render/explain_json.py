"""``explain --format json``: one CUDA error explained, schema_version 1."""

from __future__ import annotations

from typing import Any

from fatbin_inspect.compat.explain import Explanation
from fatbin_inspect.formats.records import as_dict
from fatbin_inspect.render import jsondump


def render_explanation_json(e: Explanation, color: bool = False, width: int | None = None) -> str:
    return jsondump.dumps(explanation_dict(e))


def explanation_dict(e: Explanation) -> dict[str, Any]:
    return {"schema_version": jsondump.SCHEMA_VERSION, **as_dict(e)}
