"""Findings -> Markdown: a pull-request comment, or the GitHub job summary (``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from fatbin_inspect.checks.findings import RULE_BY_ID, FindingsReport, counts, fails, findings_for

ICON = {"error": "❌", "warning": "⚠️", "note": "ℹ️"}


def cell(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def render(report: FindingsReport, fail_on: str = "error", color: bool = False) -> str:
    n = counts(report.findings)
    artifacts = sorted({c.path for c in report.checks})
    verdict = "failed" if fails(report.findings, fail_on) else "passed"
    out: list[str] = [f"## fatbin-inspect {report.command}: {verdict}", ""]
    out.append(
        f"{len(artifacts)} artifacts, {len(report.checks)} checks; "
        f"{n['error']} errors, {n['warning']} warnings, {n['note']} notes (fail on: {fail_on})."
    )
    if report.targets:
        out.append(f"Targets: {', '.join(f'`{t}`' for t in report.targets)}.")
    out.append("")
    if report.findings:
        out += ["| | rule | artifact | target | finding |", "|---|---|---|---|---|"]
        for f in report.findings:
            out.append(
                f"| {ICON[f.severity]} {f.severity} | `{f.rule_id}` {f.rule.name} | `{cell(f.path)}` | "
                f"{cell(f.target or '')} | {cell(f.message)} |"
            )
        out.append("")
    failing = [c for c in report.checks if fails(findings_for(c, report.findings), fail_on)]
    if artifacts:
        out += [
            "<details><summary>Checks per artifact</summary>",
            "",
            "| artifact | target | result |",
            "|---|---|---|",
        ]
        for c in report.checks:
            out.append(
                f"| `{cell(c.path)}` | {cell(c.target or 'policy')} | {'fail' if c in failing else 'pass'} |"
            )
        out += ["", "</details>", ""]
    used = sorted({f.rule_id for f in report.findings})
    if used:
        out += ["<details><summary>Rules</summary>", ""]
        for rid in used:
            r = RULE_BY_ID[rid]
            out.append(f"- **{r.id} {r.name}** ({r.severity}): {r.summary}. {r.help}")
        out += ["", "</details>", ""]
    return "\n".join(out)
