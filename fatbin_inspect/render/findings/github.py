"""Findings -> GitHub Actions workflow commands (``::error file=...::``) plus a job summary.

GitHub shows at most 10 error and 10 warning annotations per step (50 per job), so annotations
are capped per severity and one ``::notice`` says how many were left out; the full list goes to
the Markdown job summary, which the command appends to ``$GITHUB_STEP_SUMMARY`` when it is set.
"""

from __future__ import annotations

from fatbin_inspect.release.findings import FindingsReport, split_path
from fatbin_inspect.render.escape import shown, utf8
from fatbin_inspect.render.findings import markdown
from fatbin_inspect.render.wording import plural

CAP = 10  # per severity, GitHub's per-step display limit
_COMMAND = {"error": "error", "warning": "warning", "note": "notice"}


def escape_data(s: str) -> str:
    """Workflow-command data: ``%``, CR, LF encoded; other controls shown, bytes U+FFFD."""
    return utf8(shown(s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")))


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def render(report: FindingsReport, fail_on: str = "error", color: bool = False, cap: int = CAP) -> str:
    """Workflow commands for stdout; at most ``cap`` annotations per severity."""
    lines: list[str] = []
    shown = dict.fromkeys(_COMMAND, 0)
    left = 0
    for f in report.findings:
        if shown[f.severity] >= cap:
            left += 1
            continue
        shown[f.severity] += 1
        container, _member = split_path(f.path)  # the real file, so file= points at it
        title = f"{f.rule_id} {f.rule.name}"
        lines.append(
            f"::{_COMMAND[f.severity]} file={escape_property(container)},line=1,"
            f"title={escape_property(title)}::{escape_data(f'{f.path}: {f.message}')}"
        )
    if left:
        lines.append(
            f"::notice title=fatbin-inspect::{plural(left, 'more finding', 'more findings')} not annotated (see the job summary)"
        )
    return "".join(line + "\n" for line in lines)


def job_summary(report: FindingsReport, fail_on: str = "error") -> str:
    """The Markdown for ``$GITHUB_STEP_SUMMARY``: every finding, uncapped."""
    return markdown.render(report, fail_on)
