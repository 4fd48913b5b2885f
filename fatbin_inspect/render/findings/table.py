"""Findings -> terminal table: one block per artifact, worst first, and a one-line verdict."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from fatbin_inspect.checks.findings import Finding, FindingsReport, counts, fails
from fatbin_inspect.render import console

STYLE = {"error": "bold red", "warning": "yellow", "note": "cyan"}


def render(report: FindingsReport, fail_on: str = "error", color: bool = False) -> str:
    by_path: dict[str, list[Finding]] = {}
    for f in report.findings:
        by_path.setdefault(f.path, []).append(f)
    out: list = []
    for path, fs in by_path.items():
        head = Text(path, style="bold")
        if fs[0].distribution:
            head.append(f"  [{fs[0].distribution}]", style="cyan")
        out.append(head)
        tab = Table(box=None, pad_edge=False, show_header=False)
        for col in ("severity", "rule", "target", "message"):
            tab.add_column(col, no_wrap=col != "message")
        for f in fs:
            tab.add_row(
                Text(f.severity, style=STYLE[f.severity]),
                f"{f.rule_id} {f.rule.name}",
                f.target or "",
                f.message,
            )
        out += [tab, Text("")]
    n = counts(report.findings)
    artifacts = len({c.path for c in report.checks})
    failed = fails(report.findings, fail_on)
    line = Text("FAIL" if failed else "PASS", style="bold red" if failed else "bold green")
    line.append(
        f"  {artifacts} artifacts, {len(report.checks)} checks: {n['error']} errors, "
        f"{n['warning']} warnings, {n['note']} notes (fail on {fail_on})"
    )
    if report.targets:
        line.append(f"; targets {', '.join(report.targets)}", style="dim")
    out.append(line)
    return console.render(out, color)
