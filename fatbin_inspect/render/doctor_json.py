"""``doctor --format json``: the probed stack and its diagnosis as plain dicts, schema_version 1.

Field names follow the record attributes; fields are only ever added.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fatbin_inspect.render import jsondump
from fatbin_inspect.render.jsondump import SCHEMA_VERSION, tool
from fatbin_inspect.system.diagnose import Diagnosis
from fatbin_inspect.system.stack import Stack


def render_doctor_json(stack: Stack, diag: Diagnosis, color: bool = False, width: int | None = None) -> str:
    return jsondump.dumps(doctor_document(stack, diag))


def doctor_document(stack: Stack, diag: Diagnosis) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": tool(),
        "stack": dataclasses.asdict(stack),
        "driver_cuda": diag.driver_cuda,
        "driver_cuda_from": diag.driver_cuda_from,
        "max_ptx_isa": diag.max_ptx_isa,
        "runtime_in_use": diag.runtime_in_use.path if diag.runtime_in_use else None,
        "conditions": [dataclasses.asdict(c) for c in diag.conditions],
        "warnings": [dataclasses.asdict(w) for w in diag.warnings],
        "jit_cache": None if diag.jit_cache is None else dataclasses.asdict(diag.jit_cache),
    }
