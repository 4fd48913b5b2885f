"""Findings -> JSON Lines (``--format jsonl``): one ``finding`` line per finding, then one ``summary``.

Same fields as ``json`` (gate.schema.json), so ``jq 'select(.type=="finding")'`` works line by line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from fatbin_inspect.release.findings import FindingsReport
from fatbin_inspect.render import jsondump
from fatbin_inspect.render.findings.json import SCHEMA_VERSION, finding_dict, summary_dict


def _records(report: FindingsReport, fail_on: str) -> Iterator[dict[str, Any]]:
    for f in report.findings:
        yield {"schema_version": SCHEMA_VERSION, "type": "finding", **finding_dict(f)}
    yield {
        "schema_version": SCHEMA_VERSION,
        "type": "summary",
        "command": report.command,
        **summary_dict(report, fail_on),
    }


def render(report: FindingsReport, fail_on: str = "error", color: bool = False) -> str:
    return "".join(jsondump.dumps_line(r) for r in _records(report, fail_on))


def write(report: FindingsReport, fail_on: str, out: BinaryIO) -> None:
    """``render`` streamed to the binary stream ``out``, a line at a time."""
    jsondump.write_lines(out, _records(report, fail_on))
