"""The views of ``check`` over a ``judging.check_run.CheckRun``: the matrix or the long table,
the check document (streamed: each result written as it is judged), and the findings of the
other formats (FBI001-FBI004, FBI013, FBI008 for unreadable inputs; JIT-only is a warning)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from fatbin_inspect.judging.check_run import CheckRun
    from fatbin_inspect.judging.needs import Needs
    from fatbin_inspect.release.findings import FindingsReport
    from fatbin_inspect.render.sink import Sink


class Shown(NamedTuple):
    """What the check views are asked for besides the verdicts."""

    long: bool = False  # table: one block per file and target, never the matrix
    per_fatbin: bool = False  # JSON: every fatbin's verdict and every entry's
    kernels: bool = False  # table: the kernels without an image (``--kernels`` decoded them)


def write_table(run: CheckRun, sink: Sink, shown: Shown | None) -> None:
    """Several targets or files: the matrix, a verdict per file and target on one line each; one
    file and target, or ``long``: every verdict with its reasons."""
    from fatbin_inspect.render.check_matrix import render_matrix
    from fatbin_inspect.render.check_table import render_check

    shown = shown or Shown()
    verdicts = list(run.verdicts())
    matrix = not shown.long and (len(run.targets) > 1 or len({v.path for v in verdicts}) > 1)
    draw = render_matrix if matrix else render_check
    color, width = sink.look
    sink.text(draw(run.targets, verdicts, kernels=shown.kernels, cache=run.cache, color=color, width=width))


def write_json(run: CheckRun, sink: Sink, shown: Shown | None) -> None:
    """The check document, streamed: each result written as it is judged, then the errors."""
    from fatbin_inspect.render import jsondump
    from fatbin_inspect.render.check_json import check_document, result_dict

    per_fatbin = (shown or Shown()).per_fatbin
    index = {t: i for i, t in enumerate(run.targets)}

    def results() -> Iterator[dict[str, Any]]:
        for v in run.verdicts():
            yield result_dict(v, index[v.target], per_fatbin, run.cache)

    errors = (
        {"path": r.path, "message": r.error.message, "offset": r.error.offset}
        for r in run.unreadable
        if r.error is not None
    )
    doc = check_document(run.targets, [], per_fatbin, [])
    doc.update(results=jsondump.Items(results()), errors=jsondump.Items(errors))
    with sink.stream() as out:
        jsondump.write(out, doc)


def findings_report(run: CheckRun, needs: Needs) -> tuple[FindingsReport, str]:
    """The verdicts as check findings; with the judged records (``needs.kept``: the HTML report)."""
    from fatbin_inspect.release.check_findings import check_findings
    from fatbin_inspect.render.findings_views import with_views

    verdicts = list(run.verdicts())
    report = check_findings(run.paths, run.targets, verdicts, run.unreadable)
    if needs.kept:
        report = with_views(report, run.kept or [], verdicts)
    return report, run.fail_on
