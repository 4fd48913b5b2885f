"""``releases --format html``: one self-contained page, the table and the answers (every text
escaped with ``html.escape``)."""

from __future__ import annotations

import html

from fatbin_inspect.judging.releases import ReleasesReport
from fatbin_inspect.render.escape import shown
from fatbin_inspect.render.releases_table import answers, cell_text, target_name

_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:.25em .6em}.native{background:#d4f7d4}.jit{background:#fff3c4}"
    ".fail{background:#ffd6d6}"
)


def _e(text: str) -> str:
    return html.escape(shown(text))


def render_releases_html(report: ReleasesReport, color: bool = False, width: int | None = None) -> str:
    head = "".join(f"<th>{_e(target_name(report, i))}</th>" for i in range(len(report.targets)))
    rows = "".join(
        f"<tr><td>{_e(row.version)}</td>"
        + "".join(
            f'<td class="{_e(c.verdict)}" title="{_e(c.detail or c.rule or "")}">{_e(cell_text(c))}</td>'
            for c in row.cells
        )
        + "</tr>"
        for row in report.rows
    )
    items = "".join(f"<li>{_e(a)}</li>" for a in answers(report))
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Releases of {_e(report.name)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>Releases of {_e(report.name)}</h1>"
        f"<table><tr><th>version</th>{head}</tr>{rows}</table><ul>{items}</ul></body></html>\n"
    )
