"""Findings -> Markdown: a pull-request comment, or the GitHub job summary (``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

import re

from fatbin_inspect.release.findings import RULE_BY_ID, FindingsReport, counts, fails, findings_for
from fatbin_inspect.render.escape import shown, utf8
from fatbin_inspect.render.wording import plural

ICON = {"error": "❌", "warning": "⚠️", "note": "ℹ️"}


# the characters that start inline Markdown (emphasis, code, links, raw HTML, entities,
# strikethrough) or end a table cell, each backslash-escapable in CommonMark (`_` is left: it
# only emphasises, which neither hides nor links anything)
_PUNCT = re.compile(r"([\\`*\[\]<>&~|])")


def cell(text: str) -> str:
    """Input text as inert Markdown in a table cell: control characters escaped (``shown``),
    every character that starts inline Markdown backslash-escaped (no emphasis, link, code span
    or raw HTML such as ``<img src=...>`` can start), undecodable bytes as U+FFFD."""
    return _PUNCT.sub(r"\\\1", utf8(shown(str(text))))


def code(text: str) -> str:
    """Input text as a code span that it cannot close: the fence is one backtick longer than
    the longest run inside (CommonMark), ``|`` escaped for the table, control characters shown."""
    t = utf8(shown(str(text))).replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall("`+", t)), default=0) + 1)
    pad = " " if t.startswith("`") or t.endswith("`") else ""
    return f"{fence}{pad}{t}{pad}{fence}"


def render(report: FindingsReport, fail_on: str = "error", color: bool = False) -> str:
    n = counts(report.findings)
    artifacts = sorted({c.path for c in report.checks})
    verdict = "failed" if fails(report.findings, fail_on) else "passed"
    out: list[str] = [f"## fatbin-inspect {report.command}: {verdict}", ""]
    out.append(
        f"{plural(len(artifacts), 'artifact')}, {plural(len(report.checks), 'check')}; "
        f"{plural(n['error'], 'error')}, {plural(n['warning'], 'warning')}, {plural(n['note'], 'note')} "
        f"(fail on: {fail_on})."
    )
    if report.targets:
        out.append(f"Targets: {', '.join(code(t) for t in report.targets)}.")
    out.append("")
    out += _findings_table(report)
    if artifacts:
        out += _checks_table(report, fail_on)
    out += _rules_used(report)
    return "\n".join(out)


def _findings_table(report: FindingsReport) -> list[str]:
    if not report.findings:
        return []
    out = ["| | rule | artifact | target | finding |", "|---|---|---|---|---|"]
    for f in report.findings:
        out.append(
            f"| {ICON[f.severity]} {f.severity} | `{f.rule_id}` {f.rule.name} | {code(f.path)} | "
            f"{cell(f.target or '')} | {cell(f.message)} |"
        )
    return [*out, ""]


def _checks_table(report: FindingsReport, fail_on: str) -> list[str]:
    """Each check's result, folded."""
    failing = [c for c in report.checks if fails(findings_for(c, report.findings), fail_on)]
    out = [
        "<details><summary>Checks per artifact</summary>",
        "",
        "| artifact | target | result |",
        "|---|---|---|",
    ]
    for c in report.checks:
        out.append(
            f"| {code(c.path)} | {cell(c.target or 'policy')} | {'fail' if c in failing else 'pass'} |"
        )
    return [*out, "", "</details>", ""]


def _rules_used(report: FindingsReport) -> list[str]:
    """The rules the findings name, folded."""
    used = sorted({f.rule_id for f in report.findings})
    if not used:
        return []
    out = ["<details><summary>Rules</summary>", ""]
    for rid in used:
        r = RULE_BY_ID[rid]
        out.append(f"- **{r.id} {r.name}** ({r.severity}): {r.summary}. {r.help}")
    return [*out, "", "</details>", ""]
