"""``check``'s file verdicts as the gate's findings: one per file and target. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from fatbin_inspect.compat import describe, verdict
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.release.findings import Check, Finding, FindingsReport, sort_key
from fatbin_inspect.release.requirements import JIT, OK, STATE_RULE, state


def verdict_finding(v: verdict.FileVerdict) -> Finding | None:
    """``check``'s verdict for one file and target as a finding; None when it loads natively.
    JIT-only is a warning (it fails under ``--fail-on warning``), every failure an error."""
    s = state(v)
    if s == OK:
        return None
    label = v.target.label
    if v.error is not None:
        why = f"{v.error.name} ({v.error.code}): {v.reason}"
    else:  # a failure without a CUDA error is R-HOST's (the file is never loaded)
        why = describe.host_why(v) if v.verdict == "fail" else f"only PTX (JIT): {v.reason}"
    return Finding(
        "FBI020" if v.rule == "R-HOST" else STATE_RULE[s],
        "warning" if s == JIT else "error",
        f"{label}: {why}",
        v.path,
        label,
        f"sm_{v.target.gpu.sm}",
    )


def check_findings(
    inputs: Sequence[str],
    targets: Sequence[Target],
    verdicts: Sequence[verdict.FileVerdict],
    unreadable: Sequence[FileReport],
) -> FindingsReport:
    """``check`` as findings: one check per file with device code and target, FBI008 per unreadable input."""
    findings = [f for f in map(verdict_finding, verdicts) if f is not None]
    findings += [
        Finding("FBI019", "warning", f"{v.target.label}: {describe.RUNTIME_UNKNOWN}", v.path, v.target.label)
        for v in verdicts
        if describe.RUNTIME_UNKNOWN in v.notes
    ]
    findings += [
        Finding("FBI008", "error", r.error.message, r.path, offset=r.error.offset)
        for r in unreadable
        if r.error is not None
    ]
    checks = [Check(r.path) for r in unreadable]
    checks += [Check(v.path, v.target.label) for v in verdicts if v.verdict != "no-device-code"]
    return FindingsReport(
        "check",
        tuple(sorted(findings, key=sort_key)),
        tuple(checks),
        tuple(t.label for t in targets),
        tuple(inputs),
    )
