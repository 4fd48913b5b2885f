"""``--format cyclonedx`` of ``list``, ``scan`` and ``gate`` (docs/sbom.md): the records are read
with SHA-256 digests (the view's ``Needs.digests``), ``judging.sbom`` builds the bill of
materials and ``render.cyclonedx`` writes it. The renderer needs the ``sbom`` extra
(cyclonedx-python-lib): ``render.view`` stops the command with a usage error before it reads
anything when it is missing."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from fatbin_inspect.errors import UsageError

if TYPE_CHECKING:
    from fatbin_inspect.compat.targets import Target
    from fatbin_inspect.compat.verdict import FileVerdict
    from fatbin_inspect.formats.model import FileReport
    from fatbin_inspect.judging.gate_run import GateRun
    from fatbin_inspect.judging.list_run import ListRun
    from fatbin_inspect.judging.scan_run import ScanRun
    from fatbin_inspect.release.findings import FindingsReport
    from fatbin_inspect.render.sink import Sink


def timestamp() -> datetime:
    """``metadata.timestamp``: ``SOURCE_DATE_EPOCH`` (reproducible builds) when set, else now."""
    raw = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return datetime.now(timezone.utc).replace(microsecond=0)
    if not raw.isdigit():
        raise UsageError(f"SOURCE_DATE_EPOCH: not a number of seconds since 1970: {raw[:40]!r}")
    try:
        return datetime.fromtimestamp(int(raw), timezone.utc)
    except (OverflowError, OSError, ValueError):
        raise UsageError(f"SOURCE_DATE_EPOCH: out of range: {raw[:40]!r}") from None


def sbom_text(
    command: str,
    reports: Sequence[FileReport],
    targets: Sequence[Target] = (),
    verdicts: Mapping[str, list[FileVerdict]] | None = None,
    roll_up: Callable[[Sequence[str]], list[Any]] | None = None,
    findings: FindingsReport | None = None,
    outcome: str | None = None,
) -> str:
    """The CycloneDX document of ``reports`` (``judging.sbom.build`` takes the rest)."""
    from fatbin_inspect.judging.sbom import build
    from fatbin_inspect.render.cyclonedx import render

    sbom = build(command, reports, targets, verdicts, roll_up, findings, outcome)
    return render(sbom, timestamp())


def write_list(run: ListRun, sink: Sink, shown: Any = None) -> None:
    sink.text(sbom_text("list", list(run.reports()), run.targets))


def write_scan(run: ScanRun, sink: Sink, shown: Any = None) -> None:
    sink.text(sbom_text("scan", run.result.reports, run.targets, run.engine, run.roll_up))


def write_gate(run: GateRun, sink: Sink, shown: Any = None) -> None:
    """The files with their findings per target, and whether the gate passed at its level."""
    from fatbin_inspect.release.findings import fails

    outcome = "fail" if fails(run.report.findings, run.fail_on) else "pass"
    sink.refuse(c.path for c in run.report.checks)
    sink.text(sbom_text("gate", run.reports, findings=run.report, outcome=outcome))
