"""Terminal view of a scan: the coverage matrix, one row per distribution, verdicts per target.

Cells read without colour too: ``SASS``, ``PTX`` or ``-``; a cell whose cubins are all
arch/family-specific shows the suffix (``SASS a``), since such code runs on that exact GPU only.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from fatbin_inspect.checks.coverage import NONE, PTX, SASS, Cell, Coverage, Row, describe
from fatbin_inspect.render.console import human, render

_CELL_STYLE = {SASS: "green", PTX: "yellow", NONE: "dim"}
_VERDICT_STYLE = {"native": "green", "jit": "yellow", "fail": "bold red", "no-device-code": "dim"}


def _cell_text(cell: Cell | None) -> Text:
    if cell is None or cell.state == NONE:
        return Text("-", style=_CELL_STYLE[NONE])
    if cell.state == PTX:
        return Text("PTX", style=_CELL_STYLE[PTX])
    sass = [a for a in cell.arches if a.startswith("sm_")]
    suffixes = {a[-1] for a in sass if not a[-1].isdigit()}
    plain = any(a[-1].isdigit() for a in sass)
    label = "SASS" if plain or not suffixes else "SASS " + "".join(sorted(suffixes))
    return Text(label, style=_CELL_STYLE[SASS])


def _verdict_text(v) -> Text:
    if v is None:
        return Text("")
    word = v.verdict if not v.error else f"{v.verdict} {v.error.split()[0]}"
    if getattr(v, "coverage", None) == "partial":
        word += " (partial)"
    return Text(word, style=_VERDICT_STYLE.get(v.verdict, ""))


def _add_row(tab: Table, cov: Coverage, row: Row, name: str, style: str = "") -> None:
    cells = [_cell_text(row.cells.get(sm)) for sm in cov.columns]
    verdicts = [
        _verdict_text(row.verdicts[i] if i < len(row.verdicts) else None) for i in range(len(cov.targets))
    ]
    errs = f" ({row.errors} unreadable)" if row.errors else ""
    tab.add_row(Text(name, style=style), f"{row.files}{errs}", *cells, *verdicts)


def common_dir(names: Sequence[str]) -> int:
    """Length of the folder (or ``ARCHIVE!``) prefix the paths share, to show the rest."""
    prefix = os.path.commonprefix(list(names))
    return max(prefix.rfind("/"), prefix.rfind("!")) + 1


def render_coverage(
    cov: Coverage,
    summary: str,
    color: bool = False,
    files: bool = False,
    target_sms: Sequence[int | None] = (),
    headers: Sequence[str] = (),
) -> str:
    """``target_sms``: the SM number of each target, for the one-line explanations under the table;
    ``headers``: short column titles for the targets (default: their labels)."""
    out: list = [Text(summary, style="bold")]
    needed = 0
    if not cov.rows:
        out.append(Text("no device code found", style="dim"))
    else:
        tab, needed = _matrix(cov, files, headers)
        out.append(tab)
    for i, label in enumerate(cov.targets):
        lines = _attention(cov, i, target_sms[i] if i < len(target_sms) else None)
        verdict = f"{len(lines)} of {len(cov.rows)} need attention" if lines else "everything runs natively"
        out.append(Text(f"\n{label}: {verdict}", style="bold"))
        out.extend(lines)
    return render(
        out, color, width=max(needed, shutil.get_terminal_size((120, 24)).columns) if cov.rows else None
    )


def attention(row: Row, v, sm: int | None) -> str:
    """Why a row needs attention, from the file that decided it (never a fact of the whole row
    that could contradict the verdict), with the variant picked and the files set aside."""
    err = f" ({v.error})" if v.error else ""
    who = f"{os.path.basename(v.path.rsplit('!', 1)[-1])}: " if v.path and v.path != row.name else ""
    text = f"{v.verdict}{err}: {who}{v.reason or (describe(row, sm) if sm is not None else '')}"
    if getattr(v, "variants", ()):
        text += f" [variant: {', '.join(os.path.basename(p.rsplit('!', 1)[-1]) for p in v.variants)}]"
    return text


def _matrix(cov: Coverage, files: bool, headers: Sequence[str]) -> tuple[Table, int]:
    """The coverage table and the width it needs (its cells never wrap)."""
    tab = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    width = min(60, max(len(r.name) for r in cov.rows))
    tab.add_column("distribution / folder", min_width=width, overflow="fold")
    tab.add_column("files", justify="right", no_wrap=True)
    for sm in cov.columns:  # cells never wrap: a wide matrix widens the output instead
        tab.add_column(f"sm_{sm}", justify="center", no_wrap=True, min_width=max(6, len(f"sm_{sm}")))
    titles = [headers[i] if i < len(headers) else label for i, label in enumerate(cov.targets)]
    for title in titles:
        tab.add_column(title, no_wrap=True)
    needed = width + 8 + 8 * len(cov.columns) + sum(max(len(t), 12) + 2 for t in titles)
    for row in cov.rows:
        _add_row(tab, cov, row, row.name, "bold" if row.kind == "distribution" else "")
        if files:
            cut = common_dir([c.name for c in row.children])
            for child in row.children:
                _add_row(tab, cov, child, "  " + child.name[cut:], "dim")
    return tab, needed


def _attention(cov: Coverage, i: int, sm: int | None) -> list[Text]:
    """One line per row that does not run natively on target ``i``, with why."""
    lines = []
    for row in cov.rows:
        v = row.verdicts[i] if i < len(row.verdicts) else None
        if v is None or v.verdict in ("native", "no-device-code", "link-time"):
            continue
        lines.append(Text(f"  {row.name}: {attention(row, v, sm)}", style=_VERDICT_STYLE.get(v.verdict, "")))
    return lines


def summary_line(
    n_files: int, n_rows: int, files_seen: int, nbytes: int, seconds: float, hits: int, inspected: int
) -> str:
    cache = f", {hits} of {inspected} binaries from cache" if hits else ""
    return (
        f"{n_files} files with device code in {n_rows} distributions/folders "
        f"(scanned {files_seen} files, {human(nbytes)} in {seconds:.1f} s{cache})"
    )
