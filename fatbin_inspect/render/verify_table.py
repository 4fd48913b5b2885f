"""``verify`` as text: each image with prediction and reality, the findings, the summary."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from fatbin_inspect.render.console import render
from fatbin_inspect.verify.compare import (
    Disagreement,
    FileCheck,
    ImageCheck,
    describe_actual,
    describe_prediction,
    summary,
)

_AGREE = {True: ("yes", "green"), False: ("NO", "red"), None: ("-", "dim")}


def _table(checks: list[ImageCheck]) -> Table:
    tab = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("file", "fatbin", "image", "predicted", "driver says", "ms", "agree"):
        tab.add_column(col, justify="right" if col == "ms" else "left")
    last = None
    for c in checks:
        ms = c.load.ms if c.load and c.load.ms is not None else None
        word, style = _AGREE[c.agree]
        tab.add_row(
            c.path if c.path != last else "",
            f"{c.fatbin_offset:#x}",
            c.what,
            describe_prediction(c.predicted) if c.predicted else "",
            describe_actual(c),
            f"{ms:.1f}" if ms is not None else "",
            Text(word, style=style),
        )
        last = c.path
    return tab


def _files_table(files: list[FileCheck]) -> Table:
    tab = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("file", "predicted (R-FILE)", "from the loads", "loaded", "failed", "agree"):
        tab.add_column(col, justify="right" if col in ("loaded", "failed") else "left")
    for f in files:
        word, style = _AGREE[f.agree]
        tab.add_row(
            f.path, f.predicted, f.actual or "-", str(f.loaded), str(f.failed), Text(word, style=style)
        )
    return tab


def _finding_line(f: Disagreement) -> Text:
    where = "file" if f.fatbin_offset is None else f"fatbin {f.fatbin_offset:#x} {f.what}"
    return Text(
        f"finding: {f.path} {where}: predicted {f.predicted}, "
        f"driver says {f.actual}. Prediction's reason: {f.reason}",
        style="red",
    )


def _files_summary(files: list[FileCheck]) -> Text:
    agree = sum(1 for f in files if f.agree)
    against = sum(1 for f in files if f.agree is False)
    return Text(f"file verdicts (R-FILE) confirmed {agree}, contradicted {against}", style="bold")


def render_verify(
    target: str,
    checks: list[ImageCheck],
    findings: list[Disagreement],
    color: bool = False,
    images: bool = True,
    width: int | None = None,
    files: list[FileCheck] | None = None,
) -> str:
    out: list = [Text(f"target: {target}", style="bold")]
    if images:
        out.append(_table(checks))
    if files:
        out.append(_files_table(files))
    out += [_finding_line(f) for f in findings]
    if files:
        out.append(_files_summary(files))
    out.append(Text(", ".join(f"{label} {n}" for label, n in summary(checks)), style="bold"))
    return render(out, color, width)
