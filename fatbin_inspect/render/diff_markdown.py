"""``diff --format markdown``: the distributions' and files' changes as Markdown tables."""

from __future__ import annotations

from fatbin_inspect.release.diff import DiffReport
from fatbin_inspect.release.findings import FindingsReport
from fatbin_inspect.render.diff_table import file_name, kernels_cell
from fatbin_inspect.render.findings.markdown import cell, code


def render_diff_markdown(
    d: DiffReport,
    report: FindingsReport | None = None,
    fail_on: str = "error",
    color: bool = False,
    width: int | None = None,
) -> str:
    """A document: ``color`` and ``width`` are ignored, and so are the findings (``report``)."""
    out: list[str] = [f"## fatbin-inspect diff: {code(d.old)} → {code(d.new)}", ""]
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
            f"| {code(file_name(f))}"
            f"{f' (was {code(f.renamed_from)})' if f.renamed_from else ''} | {f.status} | {', '.join(f.archs_added)} | "
            f"{', '.join(f.archs_dropped)} | {kernels_cell(f)} |"
        )
    return "\n".join(out) + "\n"
