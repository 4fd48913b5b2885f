"""``diff`` -> table, Markdown, and the ``diff`` member of its JSON document.

Machine formats (json, jsonl, sarif, junit, github) render the drops as findings; json also
carries every file's changes under ``diff``.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from fatbin_inspect.checks.diff import DiffReport, FileDiff
from fatbin_inspect.render.console import render
from fatbin_inspect.render.markdown import cell


def diff_dict(d: DiffReport) -> dict[str, Any]:
    return {
        "old": d.old,
        "new": d.new,
        "files": [
            {
                "key": f.key,
                "status": f.status,
                "old_path": f.old_path,
                "new_path": f.new_path,
                "distribution": f.distribution,
                "archs_added": list(f.archs_added),
                "archs_dropped": list(f.archs_dropped),
                "kernels_added": list(f.kernels_added),
                "kernels_dropped": list(f.kernels_dropped),
            }
            for f in d.files
        ],
        "distributions": [
            {
                "name": x.name,
                "old_version": x.old_version,
                "new_version": x.new_version,
                "archs_old": list(x.archs_old),
                "archs_new": list(x.archs_new),
                "archs_added": list(x.archs_added),
                "archs_dropped": list(x.archs_dropped),
            }
            for x in d.distributions
        ],
    }


def _kernels(f: FileDiff) -> str:
    parts = []
    if f.kernels_added:
        parts.append(f"+{len(f.kernels_added)}")
    if f.kernels_dropped:
        parts.append(f"-{len(f.kernels_dropped)}")
    return " ".join(parts)


def render_diff_table(d: DiffReport, color: bool = False) -> str:
    out: list = [Text(f"{d.old} -> {d.new}", style="bold")]
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
            f.key,
            Text(f.status, style=style[f.status]),
            ", ".join(f.archs_added),
            Text(", ".join(f.archs_dropped), style="red"),
            _kernels(f),
        )
    out.append(tab)
    return render(out, color)


def render_diff_markdown(d: DiffReport) -> str:
    out: list[str] = [f"## fatbin-inspect diff: `{cell(d.old)}` → `{cell(d.new)}`", ""]
    if d.distributions:
        out += ["| distribution | old | new | archs added | archs dropped |", "|---|---|---|---|---|"]
        for x in d.distributions:
            out.append(
                f"| {cell(x.name)} | {x.old_version or '-'} | {x.new_version or '-'} | "
                f"{', '.join(x.archs_added)} | {', '.join(x.archs_dropped)} |"
            )
        out.append("")
    out += ["| file | status | archs added | archs dropped | kernels |", "|---|---|---|---|---|"]
    for f in d.files:
        out.append(
            f"| `{cell(f.key)}` | {f.status} | {', '.join(f.archs_added)} | "
            f"{', '.join(f.archs_dropped)} | {_kernels(f)} |"
        )
    return "\n".join(out) + "\n"
