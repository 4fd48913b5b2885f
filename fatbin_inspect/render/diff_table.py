"""``diff`` table: the distributions' and files' archs and kernels added and dropped."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from fatbin_inspect.release.diff import DiffReport, FileDiff
from fatbin_inspect.release.findings import FindingsReport
from fatbin_inspect.render import escape
from fatbin_inspect.render.console import render


def kernels_cell(f: FileDiff) -> str:
    parts = []
    if f.kernels_added:
        parts.append(f"+{len(f.kernels_added)}")
    if f.kernels_dropped:
        parts.append(f"-{len(f.kernels_dropped)}")
    return " ".join(parts)


def file_name(f: FileDiff) -> str:
    """The file a row is about: its match key, but the new (else old) file's name where two
    files were compared, whose key is ``.``."""
    return f.key if f.key != "." else (f.new_path or f.old_path or ".").rsplit("/", 1)[-1]


def render_diff_table(
    d: DiffReport,
    report: FindingsReport | None = None,
    fail_on: str = "error",
    color: bool = False,
    width: int | None = None,
) -> str:
    """``report``, ``fail_on``: the drops as findings, which only the JSON view writes."""
    out: list = [escape.text(f"{d.old} -> {d.new}", "bold")]
    if d.distributions:
        tab = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("distribution", "old", "new", "archs added", "archs dropped"):
            tab.add_column(col)
        for x in d.distributions:
            tab.add_row(
                x.name,
                x.old_version or "-",
                x.new_version or "-",
                ", ".join(x.archs_added),
                Text(", ".join(x.archs_dropped), style="red"),
            )
        out += [tab, Text("")]
    tab = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("file", "status", "archs added", "archs dropped", "kernels"):
        tab.add_column(col, no_wrap=col in ("file", "status"))
    style = {"added": "green", "dropped": "red", "changed": "yellow", "same": "dim"}
    for f in d.files:
        tab.add_row(
            file_name(f) if f.renamed_from is None else f"{f.key} (was {f.renamed_from.rsplit('/', 1)[-1]})",
            Text(f.status, style=style[f.status]),
            ", ".join(f.archs_added),
            Text(", ".join(f.archs_dropped), style="red"),
            kernels_cell(f),
        )
    out.append(tab)
    return render(out, color, width)
