"""``explain --format json``: one CUDA error explained, schema_version 1."""

from __future__ import annotations

from typing import Any

from fatbin_inspect.compat.explain import Explanation
from fatbin_inspect.render import jsondump


def render_explanation_json(e: Explanation, color: bool = False, width: int | None = None) -> str:
    return jsondump.dumps(explanation_dict(e))


def explanation_dict(e: Explanation) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "number": e.number,
        "runtime_name": e.runtime_name,
        "driver_name": e.driver_name,
        "message": e.message,
        "meaning": e.meaning,
        "signals": e.signals,
        "rules": list(e.rules),
        "phase": e.phase,
        "checks": list(e.checks),
        "command": e.command,
        "legacy_number": e.legacy_number,
        "matched_as": e.matched_as,
        "title": e.title,
    }
