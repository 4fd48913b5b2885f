"""The ``FindingsReport`` each command's findings views write (``render.findings.write``), and the
records the HTML report drills into (``with_views``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fatbin_inspect.compat.verdict import FileVerdict
    from fatbin_inspect.formats.model import FileReport
    from fatbin_inspect.judging.gate_run import GateRun
    from fatbin_inspect.judging.needs import Needs
    from fatbin_inspect.release.findings import FindingsReport
    from fatbin_inspect.scanning.coverage import Verdict


def gate_report(run: GateRun, needs: Needs) -> tuple[FindingsReport, str]:
    """The gate's findings; with the records of the files that hold device code or failed
    (``needs.kept``: the HTML report's heatmaps and inventory)."""
    report = run.report
    if needs.kept:
        report = with_views(report, [r for r in run.reports if r.fatbins or r.error])
    return report, run.fail_on


def diff_report(run: Mapping[str, Any], needs: Needs) -> tuple[FindingsReport, str]:
    """The drops between two releases as findings (FBI010-FBI012)."""
    return run["report"], run["fail_on"]


def with_views(
    report: FindingsReport, reports: Sequence[FileReport], verdicts: Sequence[FileVerdict] = ()
) -> FindingsReport:
    """``report`` with the coverage matrix of ``reports`` and the inventory attached (``--format
    html`` draws them); ``verdicts``: the engine's file verdicts, shown per row and target."""
    from fatbin_inspect.scanning import coverage

    per_path: dict[str, Sequence[Verdict]] = {}
    for v in verdicts:
        per_path[v.path] = [*per_path.get(v.path, ()), coverage.verdict_of(v, v.path)]
    labels = report.targets if verdicts or report.judged else ()
    if not verdicts and report.judged:  # gate: one verdict per file and requirement, when judged
        per_path = _judged(report, reports)
    cov = coverage.build(reports, per_path or None, labels)
    return dataclasses.replace(report, coverage=cov, files=tuple(reports))


def _judged(report: FindingsReport, reports: Sequence[FileReport]) -> dict[str, Sequence[Verdict]]:
    """The gate's verdicts per file in ``report.targets`` order; a file the gate did not judge on
    a target is ``not-checked`` there (ignored, unreadable, another override's requirements), one
    without code that can load ``no-device-code``."""
    from fatbin_inspect.release.requirements import counted_fatbins
    from fatbin_inspect.scanning import coverage

    by = {(v.path, label): v for label, v in report.judged}
    out: dict[str, Sequence[coverage.Verdict]] = {}
    for r in reports:
        default = "not-checked" if r.error is not None or counted_fatbins(r) else "no-device-code"
        out[r.path] = [
            coverage.verdict_of(by[(r.path, t)], r.path) if (r.path, t) in by else coverage.Verdict(default)
            for t in report.targets
        ]
    return out
