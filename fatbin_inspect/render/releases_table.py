"""Table for ``releases``: versions (newest first) × targets, then the one-line answers."""

from __future__ import annotations

from rich.text import Text

from fatbin_inspect.judging.releases import Cell, ReleasesReport
from fatbin_inspect.render.console import grid, render
from fatbin_inspect.render.escape import shown


def cell_text(c: Cell) -> str:
    """A cell in words: ``native``, ``jit``, ``fail 209``, ``no wheel``, ``sdist only``..."""
    if c.verdict == "fail":
        code = (c.detail or "").split(" ", 1)[0]
        return f"fail {code}".strip()
    return {"no-wheel": "no wheel", "source-only": "sdist only", "no-device-code": "-"}.get(
        c.verdict, c.verdict
    )


def target_name(report: ReleasesReport, i: int) -> str:
    """``GeForce GTX 1080 (CC 6.1)``: the GPU as the answers name it."""
    t = report.targets[i]
    cc = f"CC {t.cc[0]}.{t.cc[1]}"
    return cc if t.gpu.name == cc else f"{t.gpu.name} ({cc})"


def answers(report: ReleasesReport) -> list[str]:
    """Per target: "newest release that runs natively on G (CC X.Y): V; newest through JIT: W"."""
    out = []
    for i in range(len(report.targets)):
        codeless = any(row.cells[i].verdict == "no-device-code" for row in report.rows)
        none = "none of these with device code" if codeless else "none of these"
        native = report.newest_native[i] or none
        jit = report.newest_jit[i] or none
        out.append(
            f"newest release that runs natively on {target_name(report, i)}: {native}; newest through JIT: {jit}"
        )
    return out


def render_releases(report: ReleasesReport, color: bool = False, width: int | None = None) -> str:
    headers = ["version", *(f"[{i}]" for i in range(len(report.targets)))]
    cells = [[row.version, *(cell_text(c) for c in row.cells)] for row in report.rows]
    legend = [Text(f"[{i}] {shown(t.label)}") for i, t in enumerate(report.targets)]
    tail = [Text(shown(line)) for line in answers(report)]
    if report.skipped:
        tail.append(Text(f"{report.skipped} older release(s) not judged (--since, --limit)"))
    return render([*legend, Text(""), *grid(headers, cells, width), Text(""), *tail], color, width)
