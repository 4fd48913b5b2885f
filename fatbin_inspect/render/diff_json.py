"""``diff --format json``: the ``diff`` member (every file's and distribution's changes); the
rest of the document is the findings JSON of the drops."""

from __future__ import annotations

from typing import Any

from fatbin_inspect.release.diff import DiffReport
from fatbin_inspect.release.findings import FindingsReport
from fatbin_inspect.render import jsondump


def render_diff_json(
    d: DiffReport, report: FindingsReport, fail_on: str, color: bool = False, width: int | None = None
) -> str:
    """The findings JSON of the drops, with every change under ``diff``."""
    from fatbin_inspect.render.findings import json as findings_json

    return jsondump.dumps({**findings_json.document(report, fail_on), "diff": diff_dict(d)})


def diff_dict(d: DiffReport) -> dict[str, Any]:
    return {
        "old": d.old,
        "new": d.new,
        "files": [
            {
                "key": f.key,
                "status": f.status,
                "renamed_from": f.renamed_from,
                "old_path": f.old_path,
                "new_path": f.new_path,
                "distribution": f.distribution,
                "archs_added": list(f.archs_added),
                "archs_dropped": list(f.archs_dropped),
                "kernels_added": list(f.kernels_added),
                "kernels_dropped": list(f.kernels_dropped),
            }
            for f in d.files
        ],
        "distributions": [
            {
                "name": x.name,
                "old_version": x.old_version,
                "new_version": x.new_version,
                "archs_old": list(x.archs_old),
                "archs_new": list(x.archs_new),
                "archs_added": list(x.archs_added),
                "archs_dropped": list(x.archs_dropped),
            }
            for x in d.distributions
        ],
    }
