"""Findings (and, when the command attaches them, the coverage matrix and inventory) -> one HTML file.

Self-contained: inline CSS and SVG, no script, no link or image loaded from anywhere, so it can be
mailed, archived as a CI artifact or opened offline. Sections: the coverage heatmap (rows ×
architectures: green SASS, amber PTX only), the verdict heatmap (rows × target GPUs: green native,
amber JIT, red fail), a ``<details>`` drill-down from each row to its files and from each file to
its fatbins and entries, the findings, and the ``as_of`` date of the packaged NVIDIA data.
Every string that comes from an input (paths, names, messages) goes through ``escape``:
``html.escape`` of ``render.escape.shown`` (control and bidi characters shown, never raw).
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence

from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.release.findings import Finding, FindingsReport, counts, fails
from fatbin_inspect.render import escape as text
from fatbin_inspect.render.console import human
from fatbin_inspect.render.scan_table import common_dir
from fatbin_inspect.render.wording import plural
from fatbin_inspect.scanning.coverage import PTX, SASS, Coverage, Row
from fatbin_inspect.version import __version__


def escape(s: object) -> str:
    """Input text for HTML: ``html.escape`` of ``shown`` (controls as ``\\x1b``), bytes as U+FFFD."""
    return html.escape(text.utf8(text.shown(s)))


CELL, GAP = 26, 2  # heatmap geometry in px: cell, gap
CHAR = 6.6  # px per character of 12px text, to make room for the rotated column titles
LABEL_CHAR = 7.4  # px per character of a row label, with room to spare (digits and "_" are wide)
FILE_ROWS = 200  # folder rows are drawn file by file when there are at most this many files
FATBINS_SHOWN = 100  # per file in the drill-down (libtorch_cuda.so has over 20,000)
NOT_CHECKED = "not-checked"  # a row the command did not judge on a target (ignored, unreadable)

# The one mapping of every state an HTML view draws to its colour, its glyph (the state without
# colour: print, colour blindness) and its legend text. Verdict cells are the engine's verdicts
# as ``check`` gives them (the gate's too: the verdict its findings were drawn from), never a
# finding's severity.
STATES: dict[str, tuple[str, str, str]] = {
    SASS: (
        "#2e9d4f",
        "S",
        "SASS (cubin); Sa / Sf: only arch- / family-specific cubins (sm_90a, sm_100f); SP: and PTX",
    ),
    PTX: ("#e0a526", "P", "PTX only (the driver JIT-compiles it)"),
    "none": ("#e4e6ea", "", "no code"),
    "native": ("#2e9d4f", "✓", "native: a cubin loads as is (~: partial coverage)"),
    "jit": ("#e0a526", "J", "JIT: the driver compiles PTX at the first launch"),
    "fail": ("#d23b3b", "✗", "fails (the CUDA error is in the tooltip)"),
    "link-time": ("#3b7bd2", "L", "link-time input (.o, .a member)"),
    "no-device-code": ("#c9ccd1", "–", "no device code"),
    NOT_CHECKED: ("#ffffff", "", "not checked"),
}
COLOURS = {k: v[0] for k, v in STATES.items()}
GLYPH = {k: v[1] for k, v in STATES.items()}
COVERAGE_STATES = (SASS, PTX, "none")
VERDICT_STATES = ("native", "jit", "fail", "link-time", "no-device-code")

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1d232b;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #dde1e6;padding-bottom:4px}
.meta{color:#5b6470;margin:0 0 12px}.pill{display:inline-block;border-radius:10px;padding:1px 9px;margin-right:6px;
color:#fff;font-weight:600;font-size:12px;white-space:nowrap}.error{background:#d23b3b}.warning{background:#c98a0b}.note{background:#3b7bd2}
.ok{background:#2e9d4f}svg text{font:12px system-ui,sans-serif;fill:#1d232b}svg .dim{fill:#5b6470}
table{border-collapse:collapse;margin:6px 0;width:100%}td,th{border-bottom:1px solid #eceef1;padding:3px 10px 3px 0;text-align:left;
vertical-align:top;overflow-wrap:break-word}th{font-weight:600}td:first-child{white-space:nowrap}
td.msg{min-width:16em}code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace}
details{margin:2px 0 2px 14px}summary{cursor:pointer}.legend span{display:inline-block;width:12px;height:12px;
margin:0 4px 0 12px;vertical-align:-1px;border-radius:2px;border:1px solid #c9ccd1}.scroll{overflow-x:auto}
.count{color:#5b6470;font-weight:600;font-size:12px}
@media (max-width:600px){body{margin:12px}
table.findings,table.findings tbody,table.findings tr,table.findings td{display:block;width:auto}
table.findings tr:first-child{display:none}table.findings tr{border-bottom:1px solid #dde1e6;padding:6px 0}
table.findings td{border:0;padding:1px 0;white-space:normal;min-width:0}
table.findings td[data-label]:not(:first-child)::before{content:attr(data-label) ": ";color:#5b6470}
table.findings td[data-label=target]:empty{display:none}}
"""


def breakable(s: object) -> str:
    """``escape(s)`` with a line-break opportunity after each ``/`` and ``!``: a long path wraps
    between its parts on a narrow screen, never inside a name."""
    return escape(s).replace("/", "/<wbr>").replace("!", "!<wbr>")


def _svg_heatmap(
    rows: Sequence[tuple[str, Sequence[tuple[str, ...]]]], columns: Sequence[str], title: str
) -> str:
    """An SVG grid: ``rows`` of (label, [(state, tooltip[, glyph]) per column]); ``state`` picks the
    colour and, unless a glyph is given, the glyph. Labels are drawn whole (the label column is
    as wide as the longest; the page scrolls sideways), each rect names its row and column."""
    longest = max((len(c) for c in columns), default=0) * CHAR * 0.71
    left = int(max((len(label) for label, _ in rows), default=0) * LABEL_CHAR) + 16
    top = int(longest) + 28
    width = int(left + len(columns) * (CELL + GAP) + longest + 8)
    height = top + len(rows) * (CELL + GAP) + 4
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><title>{escape(title)}</title>'
    ]
    for j, col in enumerate(columns):
        x = left + j * (CELL + GAP) + CELL // 2
        out.append(f'<text x="{x}" y="{top - 8}" transform="rotate(-45 {x} {top - 8})">{escape(col)}</text>')
    for i, (label, cells) in enumerate(rows):
        y = top + i * (CELL + GAP)
        out.append(f'<text x="{left - 8}" y="{y + CELL * 0.68:.0f}" text-anchor="end">{escape(label)}</text>')
        for j, (state, tip, *given) in enumerate(cells):
            x = left + j * (CELL + GAP)
            colour = COLOURS.get(state, COLOURS[NOT_CHECKED])
            out.append(
                f'<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" rx="3" fill="{colour}" '
                f'stroke="#c9ccd1" stroke-width="{1 if state == NOT_CHECKED else 0}" '
                f'data-state="{escape(state)}" data-row="{i}" data-col="{j}"><title>{escape(tip)}</title></rect>'
            )
            glyph = given[0] if given else GLYPH.get(state)
            if glyph:  # the state in a glyph too, for print and colour blindness
                out.append(
                    f'<text x="{x + CELL / 2:.0f}" y="{y + CELL * 0.68:.0f}" text-anchor="middle" '
                    f'style="fill:#fff;font-weight:700" aria-hidden="true">{glyph}</text>'
                )
    out.append("</svg>")
    return "".join(out)


def _legend(states: Sequence[str]) -> str:
    """The legend of the states a heatmap draws, in the words of ``STATES``."""
    return (
        '<p class="legend">'
        + "".join(f'<span style="background:{STATES[k][0]}"></span>{escape(STATES[k][2])}' for k in states)
        + "</p>"
    )


def coverage_glyph(state: str, arches: Sequence[str]) -> str:
    """``S``, ``SP`` (and PTX), ``Sa``/``Sf`` (only arch- or family-specific cubins: they run on
    that exact GPU or family only), ``P``; as the terminal's ``SASS a``."""
    if state != SASS:
        return GLYPH.get(state, "")
    sass = [a for a in arches if a.startswith("sm_")]
    glyph = "S"
    if sass and not any(a[-1].isdigit() for a in sass):
        glyph += "".join(sorted({a[-1] for a in sass}))
    return glyph + ("P" if any(a.startswith("compute_") for a in arches) else "")


def heat_rows(cov: Coverage, expand: bool = True) -> list[Row]:
    """Distributions as they are; folders file by file (``expand``: check and gate, whose rows are
    the inputs) unless that would be over ``FILE_ROWS`` rows. ``scan`` keeps its table's rows."""
    files = sum(len(r.children) for r in cov.rows if r.kind != "distribution")
    if not expand or files > FILE_ROWS:
        return list(cov.rows)
    return [x for r in cov.rows for x in ((r,) if r.kind == "distribution" else r.children)]


def short_target(label: str) -> str:
    """``NVIDIA GeForce RTX 5090 (CC 12.0), driver 580`` -> ``RTX 5090, driver 580``."""
    out = label.replace("NVIDIA ", "").replace("GeForce ", "")
    head, sep, rest = out.partition(" (CC ")
    return head + rest[rest.index(")") + 1 :] if sep and ")" in rest else out


def _labels(rows: Sequence[Row]) -> tuple[list[str], str]:
    """Row labels without the folder prefix they all share, and that prefix."""
    cut = common_dir([r.name for r in rows]) if len(rows) > 1 else 0
    return [r.name[cut:] for r in rows], rows[0].name[:cut] if cut else ""


def _in(prefix: str) -> str:
    return f'<p class="meta">in <code>{escape(prefix)}</code></p>' if prefix else ""


def _coverage_section(cov: Coverage, shown: Sequence[Row]) -> str:
    cols = [f"sm_{sm}" for sm in cov.columns]
    rows = []
    names, prefix = _labels(shown)
    for name, r in zip(names, shown, strict=True):
        cells = []
        for sm in cov.columns:
            c = r.cells.get(sm)
            state = c.state if c is not None else "none"
            arches = " ".join(c.arches) if c is not None else "nothing"
            glyph = coverage_glyph(state, c.arches if c is not None else ())
            cells.append((state, f"{r.name} · sm_{sm}: {arches}", glyph))
        rows.append((name, cells))
    return (
        "<h2>Coverage: architectures</h2>"
        + _legend(COVERAGE_STATES)
        + _in(prefix)
        + f'<div class="scroll">{_svg_heatmap(rows, cols, "coverage by architecture")}</div>'
    )


def _row_verdicts(report: FindingsReport, shown: Sequence[Row]) -> list[tuple[str, list[tuple[str, ...]]]]:
    """Per row and target: the engine's verdict, as ``check`` gives it (``check`` and ``scan``
    attach theirs; the gate the verdicts its findings came from); a row without one was not
    checked there."""
    out: list[tuple[str, list[tuple[str, ...]]]] = []
    names, _prefix = _labels(shown)
    for name, r in zip(names, shown, strict=True):
        cells: list[tuple[str, ...]] = []
        for i, label in enumerate(report.targets):
            if i < len(r.verdicts):
                v = r.verdicts[i]
                tip = f"{r.name} on {label}: {v.verdict}" + (f" ({v.error})" if v.error else "")
                tip += f": {v.reason}" if v.reason else ""
                glyph = GLYPH.get(v.verdict, "")
                if v.coverage == "partial":  # some fatbins (or files) set aside or without code for it
                    glyph, tip = glyph + "~", tip + " (partial coverage)"
                if v.set_aside:
                    tip += f"; set aside: {', '.join(v.set_aside[:5])}" + (
                        " …" if len(v.set_aside) > 5 else ""
                    )
                cells.append((v.verdict, tip, glyph))
                continue
            cells.append((NOT_CHECKED, f"{r.name}: not checked against {label}"))
        out.append((name, cells))
    return out


def _targets_section(report: FindingsReport, shown: Sequence[Row]) -> str:
    if not report.targets:
        return ""
    titles = [short_target(t) for t in report.targets]
    return (
        "<h2>Verdicts: target GPUs</h2>"
        + _legend(VERDICT_STATES)
        + _in(_labels(shown)[1])
        + f'<div class="scroll">{_svg_heatmap(_row_verdicts(report, shown), titles, "verdict by target")}</div>'
        + "<ol>"
        + "".join(f"<li><code>{escape(t)}</code></li>" for t in report.targets)
        + "</ol>"
    )


def _fatbins(report: FileReport) -> str:
    if not report.fatbins:
        return "<p>no fatbin</p>"
    parts = []
    for fb in report.fatbins[:FATBINS_SHOWN]:
        where = f"{fb.section or '-'} @ {fb.offset:#x}"
        archs = ", ".join(dict.fromkeys(e.arch for e in fb.entries)) or "empty"
        rows = "".join(
            f"<tr><td>{escape(e.kind)}</td><td><code>{escape(e.arch)}</code></td>"
            f"<td>{escape(e.compression)}</td><td>{escape(human(e.size))}</td>"
            f"<td>{escape(e.ptx_isa or '')}</td></tr>"
            for e in fb.entries
        )
        parts.append(
            f"<details><summary><code>{escape(where)}</code> · {escape(archs)}</summary>"
            "<table><tr><th>kind</th><th>arch</th><th>compression</th><th>size</th><th>PTX ISA</th></tr>"
            f"{rows}</table></details>"
        )
    more = len(report.fatbins) - FATBINS_SHOWN
    if more > 0:
        parts.append(
            f"<p>… and {plural(more, 'more fatbin', 'more fatbins')} (<code>fatbin-inspect PATH</code> lists every one)</p>"
        )
    return "".join(parts)


def _drilldown(cov: Coverage, files: Sequence[FileReport], findings: Sequence[Finding]) -> str:
    by_path = {f.path: f for f in files}
    per_path: dict[str, int] = {}
    for f in findings:
        per_path[f.path] = per_path.get(f.path, 0) + 1
    parts = ["<h2>Files and fatbins</h2>"]
    for r in cov.rows:
        n = sum(per_path.get(c.name, 0) for c in r.children)
        tag = f' <span class="pill error">{plural(n, "finding")}</span>' if n else ""
        parts.append(
            f"<details><summary><b>{breakable(r.name)}</b> · {plural(r.files, 'file')}{tag}</summary>"
            + "".join(_file(c, by_path.get(c.name), per_path.get(c.name, 0)) for c in r.children)
            + "</details>"
        )
    return "".join(parts)


def _file(child: Row, report: FileReport | None, n_findings: int) -> str:
    archs = " ".join(a for c in child.cells.values() for a in c.arches)
    extra = f" · {plural(n_findings, 'finding')}" if n_findings else ""
    body = _fatbins(report) if report is not None else ""
    if report is not None and report.error is not None:
        body = f"<p>unreadable: {escape(report.error.message)}</p>" + body
    return (
        f"<details><summary><code>{breakable(child.name)}</code> · {escape(archs or 'no device code')}"
        f"{extra}</summary>{body}</details>"
    )


def _grouped(findings: Sequence[Finding]) -> list[tuple[Finding, list[str]]]:
    """Findings that say the same (severity, rule, target, message) of several artifacts, as one
    with their artifacts, in the order each first appears."""
    groups: dict[tuple[str, str, str, str], tuple[Finding, list[str]]] = {}
    for f in findings:
        key = (f.severity, f.rule_id, f.target or "", f.message)
        if key in groups:
            groups[key][1].append(f.path)
        else:
            groups[key] = (f, [f.path])
    return list(groups.values())


def _artifacts(paths: Sequence[str]) -> str:
    if len(paths) == 1:
        return f"<code>{breakable(paths[0])}</code>"
    listed = "<br>".join(f"<code>{breakable(p)}</code>" for p in paths)
    return f"<details><summary>{len(paths)} artifacts</summary>{listed}</details>"


def _findings_section(report: FindingsReport) -> str:
    """One row a group of identical findings (``_grouped``), with a count; under 600 px wide each
    row is a block of labelled lines (CSS), so rule, target and message stay on screen."""
    if not report.findings:
        return "<h2>Findings</h2><p>No findings.</p>"
    rows = "".join(
        f'<tr><td data-label="severity"><span class="pill {escape(f.severity)}">{escape(f.severity)}</span>'
        f"{f'<span class=count>×{len(paths)}</span>' if len(paths) > 1 else ''}</td>"
        f'<td data-label="rule"><code>{escape(f.rule_id)}</code> {escape(f.rule.name)}</td>'
        f'<td data-label="artifact">{_artifacts(paths)}</td>'
        f'<td data-label="target">{escape(f.target or "")}</td><td class="msg" data-label="message">{escape(f.message)}</td></tr>'
        for f, paths in _grouped(report.findings)
    )
    return (
        '<h2>Findings</h2><div class="scroll"><table class="findings"><tr><th>severity</th><th>rule</th>'
        f"<th>artifact</th><th>target</th><th>message</th></tr>{rows}</table></div>"
    )


def _as_of() -> str:
    from fatbin_inspect.compat import data

    return max(data.load(name)["as_of"] for name in ("gpus", "drivers", "toolkits", "errors"))


def render(report: FindingsReport, fail_on: str = "error", color: bool = False) -> str:
    """The whole document; ``color`` is ignored (the page always has its colours)."""
    c = counts(report.findings)
    verdict = "FAIL" if fails(report.findings, fail_on) else "PASS"
    pills = "".join(
        f'<span class="pill {sev}">{plural(c[sev], sev)}</span>' for sev in ("error", "warning", "note")
    )
    inputs = _inputs(report.inputs)
    cov = report.coverage
    body = [
        f"<h1>fatbin-inspect {escape(report.command)}: "
        f'<span class="pill {"error" if verdict == "FAIL" else "ok"}">{verdict}</span></h1>',
        f'<p class="meta">{pills} fail level: {escape(fail_on)} · inputs: {inputs or "-"}</p>',
    ]
    if cov is not None and cov.rows:
        shown = heat_rows(cov, expand=report.command != "scan")
        body += [_coverage_section(cov, shown), _targets_section(report, shown)]
    body.append(_findings_section(report))
    if cov is not None and cov.rows:
        body.append(_drilldown(cov, report.files, report.findings))
    body.append(
        f'<p class="meta">fatbin-inspect {escape(__version__)} · NVIDIA data as of '
        f'<time class="as-of">{escape(_as_of())}</time></p>'
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>fatbin-inspect {escape(report.command)} report</title><style>{CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def _inputs(paths: Sequence[str], shown: int = 20) -> str:
    """ "PATH (image facts)": the path shortened, the facts kept; the first ``shown`` of them."""
    out = ", ".join(f'<code title="{escape(p)}">{escape(_short_input(p))}</code>' for p in paths[:shown])
    return out + (f" and {len(paths) - shown} more" if len(paths) > shown else "")


def _short_input(p: str) -> str:
    path, paren, facts = p.partition(" (")
    return (os.path.basename(path.rstrip("/")) or path) + paren + facts
