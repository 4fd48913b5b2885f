"""``verify`` records -> plain dicts (``--format json``, schema_version 1).

Field names follow the record attributes; fields are only ever added.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from fatbin_inspect.render import jsondump
from fatbin_inspect.render.jsondump import SCHEMA_VERSION, tool
from fatbin_inspect.verify.compare import (
    Disagreement,
    FileCheck,
    ImageCheck,
    describe_actual,
    describe_prediction,
    error_name,
    summary,
)

if TYPE_CHECKING:
    from fatbin_inspect.verify.runner import LoadResult


def _load(r: LoadResult | None) -> dict[str, Any] | None:
    if r is None:
        return None
    d = dataclasses.asdict(r)
    d["name"] = error_name(r.code) if r.code is not None else None
    return d


def check_dict(c: ImageCheck) -> dict[str, Any]:
    e = c.entry
    return {
        "path": c.path,
        "fatbin_offset": c.fatbin_offset,
        "entry_offset": e.offset if e else None,
        "image": c.what,
        "kind": e.kind if e else "fatbin",
        "actual": c.actual,
        "actual_text": describe_actual(c),
        "load": _load(c.load),
        "load_nojit": _load(c.load_nojit),
        "predicted": dataclasses.asdict(c.predicted) if c.predicted else None,
        "predicted_text": describe_prediction(c.predicted),
        "agree": c.agree,
    }


def render_verify_json(
    target: str | None,
    checks: list[ImageCheck],
    findings: list[Disagreement],
    color: bool = False,
    images: bool = True,
    width: int | None = None,
    files: list[FileCheck] | None = None,
) -> str:
    """The document (every image, whatever ``images`` says: it is for the table)."""
    return jsondump.dumps(verify_document(target, checks, findings, files))


def verify_document(
    target: str | None,
    checks: list[ImageCheck],
    findings: list[Disagreement],
    files: list[FileCheck] | None = None,
) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": tool(),
        "target": target,
        "summary": dict(summary(checks)),
        "findings": [dataclasses.asdict(f) for f in findings],
        "images": [check_dict(c) for c in checks],
        "files": [dataclasses.asdict(f) for f in files or ()],
    }
