"""The views of ``scan`` over a ``judging.scan_run.ScanRun``: the coverage table, the scan
document (streamed from the workers' texts when the scan kept them) and the HTML report."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from fatbin_inspect.judging.scan_run import ScanRun
    from fatbin_inspect.render.sink import Sink


class Shown(NamedTuple):
    """What the scan views are asked for besides the run."""

    paths: Sequence[str] = ()  # the inputs as given (the HTML report names them)
    files: bool = False  # table: every distribution's files, each with its verdict
    verdicts_only: bool = False  # table: only distributions × targets
    layers: bool = False  # table: each image's layers and the CUDA files each brought


def write_json(run: ScanRun, sink: Sink, shown: Shown | None) -> None:
    from fatbin_inspect.render import jsondump
    from fatbin_inspect.render.scan_json import scan_document, scan_stream_document

    shown_targets = []
    if run.targets:  # (the engine's renderer is imported only when there are verdicts to show)
        from fatbin_inspect.render.check_json import target_dict

        shown_targets = [target_dict(t) for t in run.targets]
    document = scan_document if run.result.texts is None else scan_stream_document
    with sink.stream() as out:
        jsondump.write(out, document(run.result, run.coverage, run.seconds, shown_targets))


def write_html(run: ScanRun, sink: Sink, shown: Shown | None) -> None:
    """The HTML report: the table's matrix (rows rolled up the same way), files and fatbins, and
    the findings ``check`` would give for the files of the rows that fail or need JIT; an image
    input is named with its tag, manifest digest and platform."""
    from fatbin_inspect.release.check_findings import check_findings
    from fatbin_inspect.render import findings
    from fatbin_inspect.scanning.images import image_views

    paths = (shown or Shown()).paths
    images = image_views(run.result.images, run.result.reports)
    reports = run.result.reports
    report = check_findings(paths, run.targets, run.row_findings(), [r for r in reports if r.error])
    report = dataclasses.replace(report, command="scan", coverage=run.coverage, files=tuple(reports))
    if images:
        from fatbin_inspect.render.scan_table import image_head

        named: dict[str, list[str]] = {im["input"]: [] for im in images}
        for im in images:
            named[im["input"]].append(image_head(im))
        shown_inputs = [f"{p} ({'; '.join(named[p])})" if p in named else p for p in report.inputs]
        report = dataclasses.replace(report, inputs=tuple(shown_inputs))
    sink.text(findings.render(report, "html")[0])


def write_table(run: ScanRun, sink: Sink, shown: Shown | None) -> None:
    """The coverage matrix, its summary line, and the files whose CUDA runtime differs from
    torch's (FBI017) when there are targets."""
    from fatbin_inspect.judging.torch import torch_mismatches
    from fatbin_inspect.render.scan_table import render_coverage, summary_line
    from fatbin_inspect.scanning.images import image_views

    shown = shown or Shown()
    result, targets = run.result, run.targets
    s = result.stats
    unreadable = sum(1 for r in result.reports if r.error is not None and not r.fatbins)
    summary = summary_line(
        len(result.reports) - unreadable,
        len(run.coverage.rows),
        s.files,
        s.bytes,
        run.seconds,
        s.cache_hits,
        s.inspected,
        unreadable,
    )
    color, width = sink.look
    text = render_coverage(
        run.coverage,
        summary,
        verdicts_only=shown.verdicts_only,
        color=color,
        width=width,
        files=shown.files,
        target_sms=[t.gpu.sm for t in targets],
        headers=[t.host_label or t.gpu.name.replace("NVIDIA ", "").replace("GeForce ", "") for t in targets],
        images=image_views(result.images, result.reports),
        layers=shown.layers,
    )
    lines = torch_mismatches(result.reports, run.engine) if targets else []
    if lines:
        text += "\nCUDA runtime differs from torch's (FBI017 in gate --match torch):\n"
        text += "".join(f"  {line}\n" for line in lines)
    sink.text(text)
