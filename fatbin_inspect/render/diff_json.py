"""``diff --format json``: the ``diff`` member (every file's and distribution's changes); the
rest of the document is the findings JSON of the drops."""

from __future__ import annotations

from typing import Any

from fatbin_inspect.formats.records import as_dict
from fatbin_inspect.release.diff import DiffReport, DistDiff, FileDiff
from fatbin_inspect.release.findings import FindingsReport
from fatbin_inspect.render import jsondump


def render_diff_json(
    d: DiffReport, report: FindingsReport, fail_on: str, color: bool = False, width: int | None = None
) -> str:
    """The findings JSON of the drops, with every change under ``diff``."""
    from fatbin_inspect.render.findings import json as findings_json

    return jsondump.dumps({**findings_json.document(report, fail_on), "diff": diff_dict(d)})


def diff_dict(d: DiffReport) -> dict[str, Any]:
    return as_dict(d, convert={"files": _file_dicts, "distributions": _distribution_dicts})


def _file_dicts(files: tuple[FileDiff, ...]) -> list[dict[str, Any]]:
    return [as_dict(f, lead=("key", "status", "renamed_from")) for f in files]


def _distribution_dicts(dists: tuple[DistDiff, ...]) -> list[dict[str, Any]]:
    return [
        as_dict(x, extra={"archs_added": list(x.archs_added), "archs_dropped": list(x.archs_dropped)})
        for x in dists
    ]
