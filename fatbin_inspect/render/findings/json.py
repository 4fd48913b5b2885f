"""Findings -> the JSON contract of ``gate.schema.json`` (``--format json``; ``jsonl`` reuses its records).

schema_version 1. Fields are only ever added. ``jsonl`` streams one ``finding`` line per finding
and ends with one ``summary`` line, so ``jq 'select(.type=="finding")'`` works line by line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from fatbin_inspect.release.findings import (
    RULE_BY_ID,
    Finding,
    FindingsReport,
    counts,
    fails,
    findings_for,
    split_path,
)
from fatbin_inspect.render import jsondump
from fatbin_inspect.render.jsondump import SCHEMA_VERSION, tool


def finding_dict(f: Finding) -> dict[str, Any]:
    container, member = split_path(f.path)
    return {
        "rule_id": f.rule_id,
        "rule_name": f.rule.name,
        "severity": f.severity,
        "message": f.message,
        "path": f.path,
        "container": container if member else None,
        "member": member,
        "target": f.target,
        "arch": f.arch,
        "distribution": f.distribution,
        "offset": f.offset,
        "fingerprint": f.fingerprint,
    }


def summary_dict(report: FindingsReport, fail_on: str) -> dict[str, Any]:
    return {
        "fail_on": fail_on,
        "failed": fails(report.findings, fail_on),
        "counts": counts(report.findings),
        "artifacts": len({c.path for c in report.checks}),
        "checks": len(report.checks),
    }


def _checks(report: FindingsReport, fail_on: str) -> Iterator[dict[str, Any]]:
    for c in report.checks:
        fs = findings_for(c, report.findings)
        yield {
            "path": c.path,
            "target": c.target,
            "distribution": c.distribution,
            "passed": not fails(fs, fail_on),
            "findings": len(fs),
        }


def document(report: FindingsReport, fail_on: str, stream: bool = False) -> dict[str, Any]:
    """The gate document; ``stream``: its lists as ``jsondump.Items`` for ``jsondump.write``."""
    used = sorted({f.rule_id for f in report.findings})
    findings = (finding_dict(f) for f in report.findings)
    checks = _checks(report, fail_on)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": tool(),
        "command": report.command,
        "inputs": list(report.inputs),
        "targets": list(report.targets),
        "summary": summary_dict(report, fail_on),
        "rules": [
            {"id": r.id, "name": r.name, "severity": r.severity, "summary": r.summary, "help": r.help}
            for r in (RULE_BY_ID[i] for i in used)
        ],
        "findings": jsondump.Items(findings) if stream else list(findings),
        "checks": jsondump.Items(checks) if stream else list(checks),
        **({"config": report.config} if report.command == "gate" else {}),  # the policy file read
    }


def render(report: FindingsReport, fail_on: str = "error", color: bool = False) -> str:
    return jsondump.dumps(document(report, fail_on))


def write(report: FindingsReport, fail_on: str, out: BinaryIO) -> None:
    """``render`` streamed to the binary stream ``out``, each finding written as it is encoded."""
    jsondump.write(out, document(report, fail_on, stream=True))


def report(doc: dict[str, Any]) -> FindingsReport:
    """The ``FindingsReport`` a ``--format json`` document was rendered from (its findings,
    checks, targets and inputs), so one gate run can also be written in other formats (the GitHub
    Action renders annotations and SARIF from it). A name that was not UTF-8 comes back with
    U+FFFD, as the document holds it. KeyError/TypeError on a document of another shape."""
    from fatbin_inspect.release.findings import Check

    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"schema_version {doc.get('schema_version')!r}, expected {SCHEMA_VERSION}")
    findings = tuple(
        Finding(
            f["rule_id"],
            f["severity"],
            f["message"],
            f["path"],
            f["target"],
            f["arch"],
            f["distribution"],
            f["offset"],
        )
        for f in doc["findings"]
    )
    checks = tuple(Check(c["path"], c["target"], c["distribution"]) for c in doc["checks"])
    return FindingsReport(doc["command"], findings, checks, tuple(doc["targets"]), tuple(doc["inputs"]))
