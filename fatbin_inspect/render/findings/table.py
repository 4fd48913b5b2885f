"""Findings -> terminal table: one block per artifact, worst first, and a one-line verdict."""

from __future__ import annotations

from rich.text import Text

from fatbin_inspect.release.findings import Finding, FindingsReport, counts, fails
from fatbin_inspect.render import console, escape
from fatbin_inspect.render.wording import plural

STYLE = {"error": "bold red", "warning": "yellow", "note": "cyan"}
TERMINAL = True  # takes the terminal's width (render.findings.render)
WIDE = 100  # from this width on, the rule's name stands beside its id


def render(
    report: FindingsReport, fail_on: str = "error", color: bool = False, width: int | None = None
) -> str:
    by_path: dict[str, list[Finding]] = {}
    for f in report.findings:
        by_path.setdefault(f.path, []).append(f)
    out: list = []
    for path, fs in by_path.items():
        out += _block(path, fs, width)
    out.append(_verdict_line(report, fail_on))
    return console.render(out, color, width)


def _block(path: str, fs: list[Finding], width: int | None) -> list:
    """An artifact's findings: its path (and distribution), then one row per finding."""
    head = escape.text(path, "bold")
    if fs[0].distribution:
        head.append(f"  [{fs[0].distribution}]", style="cyan")
    wide = width is None or width >= WIDE
    rows = [
        [
            Text(f.severity, style=STYLE[f.severity]),
            f"{f.rule_id} {f.rule.name}" if wide else f.rule_id,
            f.target or "",
            f.message,
        ]
        for f in fs
    ]
    _, rows = console.drop_empty_columns(["severity", "rule", "target", "message"], rows)
    return [console.Hanging(head, 4), *console.grid(None, rows, width, indent=2), Text("")]


def _verdict_line(report: FindingsReport, fail_on: str) -> Text:
    n = counts(report.findings)
    artifacts = len({c.path for c in report.checks})
    failed = fails(report.findings, fail_on)
    line = Text("FAIL" if failed else "PASS", style="bold red" if failed else "bold green")
    line.append(
        f"  {plural(artifacts, 'artifact')}, {plural(len(report.checks), 'check')}: "
        f"{plural(n['error'], 'error')}, {plural(n['warning'], 'warning')}, {plural(n['note'], 'note')} "
        f"(fail on {fail_on})"
    )
    if report.targets:
        line.append(f"; targets {', '.join(report.targets)}", style="dim")
    return line
