"""Options and output shared by the commands that report findings (``gate``, ``check``, ``diff``).

The ``--format`` choices are the findings-format registry (``render.findings.FORMATS``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from fatbin_inspect.cli import options
from fatbin_inspect.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    format_option,
    look,
    open_output,
    write_output,
)
from fatbin_inspect.release.findings import FindingsReport, fails
from fatbin_inspect.render.findings import FORMATS

findings_format_option = format_option(list(FORMATS))


fail_options = options.fail_options(None)  # gate: the policy file may set the level


def emit_findings(
    report: FindingsReport,
    fmt: str,
    fail_on: str,
    output: str | None,
    exit_zero: bool,
    inputs: Iterable[str] = (),
) -> None:
    """``write_findings``, then exit 0/1 by the fail level. Shared by every command that reports findings."""
    write_findings(report, fmt, fail_on, output, inputs)
    if fails(report.findings, fail_on) and not exit_zero:
        raise SystemExit(EXIT_FINDINGS)
    raise SystemExit(EXIT_OK)


def write_findings(
    report: FindingsReport, fmt: str, fail_on: str, output: str | None, inputs: Iterable[str] = ()
) -> None:
    """Render ``report`` in ``fmt`` to ``output`` (stdout; never one of ``inputs`` or of the
    report's artifacts) and append the job summary (``github``) to ``$GITHUB_STEP_SUMMARY``, once,
    when it is set."""
    from fatbin_inspect.render import findings

    inputs = [*inputs, *(c.path for c in report.checks)]
    mod = findings.module(fmt)
    stream = getattr(mod, "write", None)  # a format that can stream does
    if stream is not None:
        with open_output(output, inputs) as out:
            stream(report, fail_on, out)
        job = getattr(mod, "job_summary", None)
        summary = job(report, fail_on) if job else None
    else:
        text, summary = findings.render(report, fmt, fail_on, **look(output))
        write_output(text, output, inputs)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary is not None and step_summary:
        from fatbin_inspect.cli.outfile import append_summary

        append_summary(step_summary, summary + "\n")


def with_views(report: FindingsReport, reports, verdicts=()) -> FindingsReport:
    """``report`` with the coverage matrix of ``reports`` and the inventory attached (``--format
    html`` draws them); ``verdicts``: the engine's file verdicts, shown per row and target."""
    import dataclasses

    from fatbin_inspect.scanning import coverage

    per_path: dict[str, Sequence[coverage.Verdict]] = {}
    for v in verdicts:
        per_path[v.path] = [*per_path.get(v.path, ()), coverage.verdict_of(v, v.path)]
    labels = report.targets if verdicts or report.judged else ()
    if not verdicts and report.judged:  # gate: one verdict per file and requirement, when judged
        per_path = _judged(report, reports)
    cov = coverage.build(reports, per_path or None, labels)
    return dataclasses.replace(report, coverage=cov, files=tuple(reports))


def _judged(report: FindingsReport, reports) -> dict[str, Sequence]:
    """The gate's verdicts per file in ``report.targets`` order; a file the gate did not judge on
    a target is ``not-checked`` there (ignored, unreadable, another override's requirements), one
    without code that can load ``no-device-code``."""
    from fatbin_inspect.release.gate import counted_fatbins
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
