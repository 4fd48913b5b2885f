"""Findings -> JUnit XML: one test case per artifact and target (CI test tabs, GitLab reports).

A test case fails when it has findings at or above the fail level; findings below it are listed
in ``system-out`` so the case stays green, as the exit code does. Test suites group by the
container (wheel, archive or file) the artifacts came from.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable

from fatbin_inspect.release.findings import Check, Finding, FindingsReport, fails, findings_for, split_path
from fatbin_inspect.render.escape import shown, utf8

FILE_WIDE_NAME = "policy"  # test case name of the file-wide rules (no target)


def _x(s: str) -> str:
    """Input text as XML 1.0 allows it: control characters escaped, undecodable bytes U+FFFD."""
    return utf8(shown(s))


def _lines(fs: Iterable[Finding]) -> str:
    return "\n".join(f"{f.severity} {f.rule_id} {f.rule.name}: {_x(f.message)}" for f in fs)


def _case(suite: ET.Element, c: Check, report: FindingsReport, fail_on: str) -> bool:
    """One test case: failed (True) by its findings at or above ``fail_on``, the rest as output."""
    case = ET.SubElement(suite, "testcase", classname=_x(c.path), name=_x(c.target or FILE_WIDE_NAME))
    fs = findings_for(c, report.findings)
    bad = [f for f in fs if fails([f], fail_on)]
    rest = [f for f in fs if f not in bad]
    if bad:
        fail = ET.SubElement(case, "failure", message=_x(bad[0].message), type=bad[0].rule_id)
        fail.text = _lines(bad)
    if rest:
        ET.SubElement(case, "system-out").text = _lines(rest)
    return bool(bad)


def render(report: FindingsReport, fail_on: str = "error", color: bool = False) -> str:
    suites: dict[str, list[Check]] = {}
    for c in report.checks:
        suites.setdefault(split_path(c.path)[0], []).append(c)
    root = ET.Element("testsuites", name=f"fatbin-inspect {report.command}")
    total = failed = 0
    for container, checks in suites.items():
        suite = ET.SubElement(root, "testsuite", name=_x(container))
        n_fail = sum(_case(suite, c, report, fail_on) for c in checks)
        suite.set("tests", str(len(checks)))
        suite.set("failures", str(n_fail))
        suite.set("errors", "0")
        suite.set("skipped", "0")
        total += len(checks)
        failed += n_fail
    root.set("tests", str(total))
    root.set("failures", str(failed))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
