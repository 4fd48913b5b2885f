"""``releases --format markdown``: the versions × targets table and the answers, for a PR or
a job summary. Every text from an index or a target name is escaped (``escape.shown``, then
the Markdown table's ``|``)."""

from __future__ import annotations

from fatbin_inspect.judging.releases import ReleasesReport
from fatbin_inspect.render.escape import shown
from fatbin_inspect.render.releases_table import answers, cell_text, target_name


def _md(text: str) -> str:
    return shown(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def render_releases_markdown(report: ReleasesReport, color: bool = False, width: int | None = None) -> str:
    names = [target_name(report, i) for i in range(len(report.targets))]
    lines = [f"### Releases of {_md(report.name)}", ""]
    lines.append("| version | " + " | ".join(_md(n) for n in names) + " |")
    lines.append("|---|" + "---|" * len(names))
    for row in report.rows:
        lines.append(f"| {_md(row.version)} | " + " | ".join(_md(cell_text(c)) for c in row.cells) + " |")
    lines.append("")
    lines += [f"- {_md(a)}" for a in answers(report)]
    return "\n".join(lines) + "\n"
