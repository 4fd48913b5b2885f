"""Findings -> a GitLab Code Quality report (``artifacts: reports: codequality``), as ruff's
``--output-format gitlab`` writes one.

GitLab reads a JSON array of issues with ``description``, ``check_name``, ``fingerprint``,
``severity`` (``info``/``minor``/``major``/``critical``/``blocker``), ``location.path`` (relative
to the repository) and ``location.lines.begin`` (docs.gitlab.com/ci/testing/code_quality,
"Implement a custom tool"); it shows issues with one fingerprint as one, so a fingerprint is
unique within a report: the finding's own (rule, artifact, target, arch), and for a second
finding with the same one, a hash of it and its message. Binaries have no lines: every issue is
on line 1 of the container file, and the description names the archive member. Severities:
error -> ``major``, warning -> ``minor``, note -> ``info``. No byte order mark (GitLab refuses one).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from fatbin_inspect.release.findings import Finding, FindingsReport, split_path
from fatbin_inspect.render.escape import utf8
from fatbin_inspect.render.json_encode import to_json

SEVERITY = {"error": "major", "warning": "minor", "note": "info"}


def location_path(container: str) -> str:
    """The file as GitLab links it: relative to the working directory (the checkout in CI) when
    it lies below it, with ``/`` separators; undecodable bytes as U+FFFD."""
    p = container
    if os.path.isabs(p):
        rel = os.path.relpath(p)
        p = rel if not rel.startswith(os.pardir) else p
    p = p.replace(os.sep, "/")
    return utf8(p[2:] if p.startswith("./") else p)


def issue(f: Finding, fingerprint: str) -> dict[str, Any]:
    container, _member = split_path(f.path)
    return {
        "description": utf8(f"{f.rule_id} {f.rule.name}: {f.path}: {f.message}"),
        "check_name": f.rule_id,
        "fingerprint": fingerprint,
        "severity": SEVERITY[f.severity],
        "location": {"path": location_path(container), "lines": {"begin": 1}},
    }


def document(report: FindingsReport) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for f in report.findings:
        fp = f.fingerprint
        while fp in seen:  # the same rule, artifact, target and arch said twice: keep both
            fp = hashlib.sha256(f"{fp}\0{f.message}".encode("utf-8", "surrogateescape")).hexdigest()[:32]
        seen.add(fp)
        out.append(issue(f, fp))
    return out


def render(report: FindingsReport, fail_on: str = "error", color: bool = False) -> str:
    return to_json(document(report), indent=2) + "\n"
