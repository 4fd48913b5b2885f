"""Findings -> JSON Lines (``--format jsonl``): one ``finding`` line per finding, then one ``summary``.

Same fields as ``json`` (gate.schema.json), so ``jq 'select(.type=="finding")'`` works line by line.
"""

from __future__ import annotations

from fatbin_inspect.checks.findings import FindingsReport
from fatbin_inspect.render import jsondump
from fatbin_inspect.render.findings.json import SCHEMA_VERSION, finding_dict, summary_dict


def render(report: FindingsReport, fail_on: str = "error", color: bool = False) -> str:
    lines = [
        jsondump.dumps_line({"schema_version": SCHEMA_VERSION, "type": "finding", **finding_dict(f)})
        for f in report.findings
    ]
    lines.append(
        jsondump.dumps_line(
            {
                "schema_version": SCHEMA_VERSION,
                "type": "summary",
                "command": report.command,
                **summary_dict(report, fail_on),
            }
        )
    )
    return "".join(lines)
