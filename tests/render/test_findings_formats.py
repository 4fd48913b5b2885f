"""Every findings format: validated (SARIF against the official 2.1.0 schema, JSON against the
package's schema, JUnit as XML) and compared with golden files in tests/golden.

tests/data/sarif-2.1.0.schema.json is the OASIS SARIF TC's sarif-schema-2.1.0.json (draft-07
edition of github.com/oasis-tcs/sarif-spec Schemata/, as bundled by the npm package
@datadog/datadog-ci-plugin-sarif 5.25.0). Regenerate the golden files with
FATBIN_INSPECT_UPDATE_GOLDEN=1 after an intended change, and review the diff.
"""

import json
import os
import xml.etree.ElementTree as ET
from importlib import resources

import builders as B
import jsonschema
import pytest
from conftest import GOLDEN, TESTS

from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path
from fatbin_inspect.release import policy as P
from fatbin_inspect.release.findings import RULES, fails
from fatbin_inspect.release.gate import gate
from fatbin_inspect.render import findings as formats
from fatbin_inspect.render.findings import github
from fatbin_inspect.render.findings.json import render as render_json
from fatbin_inspect.render.findings.jsonl import render as render_jsonl
from fatbin_inspect.render.findings.junit import render as render_junit
from fatbin_inspect.render.findings.markdown import render as render_markdown
from fatbin_inspect.render.findings.sarif import render as render_sarif
from fatbin_inspect.render.findings.table import render as render_gate_table
from fatbin_inspect.version import __version__


@pytest.fixture
def report(tmp_path, monkeypatch):
    """A gate run over synthesized artifacts with relative paths: a clean library, a JIT-only one,
    an arch-specific one, a wheel member without sm_120, and an unreadable file."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    os.makedirs("dist")
    files = {
        "dist/good.so": B.arch_library(B.arch_fatbin(["80", "90", "120"], ["120"])),
        "dist/jit.so": B.arch_library(B.arch_fatbin(["80"], ["80"])),
        "dist/hopper.so": B.arch_library(B.arch_fatbin(["80", "90a", "120"], ["120"])),
        "dist/pkg-1.0-py3-none-any.whl": B.zip_archive(
            [("pkg/ext.so", B.arch_library(B.arch_fatbin(["80", "90"])))]
        ),
        "dist/bad.so": B.host_elf([(".nv_fatbin", B.sample_fatbin()[:40])]),
    }
    for name, data in files.items():
        with open(name, "wb") as fh:
            fh.write(data)
    reports = [r for name in sorted(files) for r in inspect_path(name, Options(details=True))]
    pol = P.Policy(require=("sm_80", "sm_90", "sm_120"), require_ptx=True)
    return gate(reports, pol)


def normalized(text: str) -> str:
    return text.replace(__version__, "VERSION")


def check_golden(name: str, text: str) -> None:
    path = os.path.join(GOLDEN, name)
    text = normalized(text)
    if os.environ.get("FATBIN_INSPECT_UPDATE_GOLDEN"):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    with open(path, encoding="utf-8") as fh:
        assert text == fh.read(), (
            f"{name} differs from the golden file (FATBIN_INSPECT_UPDATE_GOLDEN=1 to rewrite)"
        )


def test_report_has_every_kind_of_finding(report):
    got = {(f.path, f.rule_id) for f in report.findings}
    assert got == {
        ("dist/bad.so", "FBI008"),
        ("dist/jit.so", "FBI002"),
        ("dist/jit.so", "FBI006"),
        ("dist/hopper.so", "FBI005"),
        ("dist/pkg-1.0-py3-none-any.whl!pkg/ext.so", "FBI001"),
        ("dist/pkg-1.0-py3-none-any.whl!pkg/ext.so", "FBI006"),
    }
    ext = next(f for f in report.findings if f.rule_id == "FBI001")
    assert ext.distribution == "pkg 1.0" and ext.target == "sm_120"


def test_sarif_is_valid_2_1_0(report):
    with open(os.path.join(TESTS, "data", "sarif-2.1.0.schema.json"), encoding="utf-8") as fh:
        schema = json.load(fh)
    doc = json.loads(render_sarif(report))
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [r.id for r in RULES]
    for res in run["results"]:
        assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
        assert len(res["partialFingerprints"]["fatbinInspect/v1"]) == 32
    member = next(r for r in run["results"] if r["ruleId"] == "FBI001")
    assert (
        member["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        == "dist/pkg-1.0-py3-none-any.whl"
    )
    assert member["locations"][0]["logicalLocations"][0]["name"] == "pkg/ext.so"
    fps = [r["partialFingerprints"]["fatbinInspect/v1"] for r in run["results"]]
    assert len(set(fps)) == len(fps)
    check_golden("gate.sarif", render_sarif(report))


def test_json_and_jsonl_match_the_package_schema(report):
    schema = json.loads(resources.files("fatbin_inspect").joinpath("schemas", "gate.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    doc = json.loads(render_json(report))
    validator.validate(doc)
    assert doc["schema_version"] == 1 and doc["summary"]["failed"] is True
    assert doc["summary"]["counts"]["error"] == sum(f.severity == "error" for f in report.findings)
    lines = [json.loads(line) for line in render_jsonl(report).splitlines()]
    for line in lines:
        validator.validate(line)
    assert [x["type"] for x in lines] == ["finding"] * len(report.findings) + ["summary"]
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**doc, "schema_version": 2})
    check_golden("gate.json", render_json(report))
    check_golden("gate.jsonl", render_jsonl(report))


def test_junit_one_case_per_artifact_and_target(report):
    root = ET.fromstring(render_junit(report, "error"))
    cases = root.findall(".//testcase")
    assert len(cases) == len(report.checks) == 4 * 4 + 1  # (file-wide + 3 archs) x 4, bad.so file-wide only
    assert {(c.get("classname"), c.get("name")) for c in cases} == {
        (c.path, c.target or "policy") for c in report.checks
    }
    failed = {(c.get("classname"), c.get("name")) for c in cases if c.find("failure") is not None}
    assert failed == {
        ("dist/bad.so", "policy"),
        ("dist/jit.so", "sm_90"),
        ("dist/jit.so", "sm_120"),
        ("dist/pkg-1.0-py3-none-any.whl!pkg/ext.so", "sm_120"),
    }
    assert int(root.get("failures")) == len(failed)
    # under --fail-on warning the arch-specific (hopper sm_90) and missing-PTX (jit, ext) warnings fail too
    assert len(ET.fromstring(render_junit(report, "warning")).findall(".//failure")) == len(failed) + 3
    check_golden("gate.junit.xml", render_junit(report, "error"))


def test_github_annotations_are_capped(report):
    text, summary = github.render(report, "error", cap=2), github.job_summary(report, "error")
    lines = text.splitlines()
    assert sum(line.startswith("::error ") for line in lines) == 2
    assert lines[-1].startswith("::notice ") and "more findings" in lines[-1]
    assert "title=FBI" in lines[0] and ",line=1," in lines[0]
    assert summary.startswith("## fatbin-inspect gate: failed")
    full, _ = formats.render(report, "github", "error")
    check_golden("gate.github.txt", full)


def test_markdown_and_table(report):
    md = render_markdown(report, "error")
    assert md.count("| ❌ error |") == sum(f.severity == "error" for f in report.findings)
    check_golden("gate.md", md)
    table = render_gate_table(report, "error", color=False)
    assert table.rstrip().splitlines()[-1].startswith("FAIL")
    assert "\x1b[" not in table
    check_golden("gate.table.txt", table)
    assert not fails([f for f in report.findings if f.severity == "warning"], "error")


def test_every_findings_format_renders_through_the_registry(report):
    """One signature behind the registry: each --format renders the same report, and gives a job
    summary only where it has one (github)."""
    for fmt in formats.FORMATS:
        text, summary = formats.render(report, fmt, "error")
        assert text and isinstance(text, str), fmt
        assert (summary is not None) == (fmt == "github"), fmt
    assert formats.render(report, "json", "error")[0] == render_json(report, "error")


def _gitlab_validator():
    with open(os.path.join(TESTS, "data", "gitlab-code-quality.schema.json"), encoding="utf-8") as fh:
        return jsonschema.Draft202012Validator(json.load(fh))


def test_gitlab_code_quality_has_gitlabs_shape(report):
    text = formats.render(report, "gitlab", "error")[0]
    assert not text.startswith("\ufeff")  # GitLab's parser refuses a byte order mark
    doc = json.loads(text)
    _gitlab_validator().validate(doc)
    assert len(doc) == len(report.findings)
    assert len({i["fingerprint"] for i in doc}) == len(doc)  # GitLab shows equal ones once
    by_rule = {i["check_name"]: i for i in doc}
    assert by_rule["FBI008"]["severity"] == "major" and by_rule["FBI005"]["severity"] == "minor"
    member = by_rule["FBI001"]
    assert member["location"] == {"path": "dist/pkg-1.0-py3-none-any.whl", "lines": {"begin": 1}}
    assert "pkg/ext.so" in member["description"]
    with pytest.raises(jsonschema.ValidationError):  # the schema can fail: a GitLab-foreign severity
        _gitlab_validator().validate([{**member, "severity": "error"}])
    check_golden("gate.gitlab.json", text)


def test_gitlab_fingerprints_stay_unique_and_paths_relative(tmp_path, monkeypatch):
    from fatbin_inspect.release.findings import Finding, FindingsReport

    monkeypatch.chdir(tmp_path)
    same = [
        Finding("FBI011", "warning", f"kernel k{i} dropped", "lib.so", "sm_90", "sm_90") for i in range(3)
    ]
    absolute = Finding("FBI008", "error", "bad", str(tmp_path / "sub" / "x.so"))
    doc = json.loads(formats.render(FindingsReport("diff", (*same, absolute)), "gitlab")[0])
    _gitlab_validator().validate(doc)
    assert len({i["fingerprint"] for i in doc}) == 4
    assert doc[0]["fingerprint"] == same[0].fingerprint  # the first keeps the finding's own
    assert doc[-1]["location"]["path"] == "sub/x.so"


def test_json_report_reads_back_for_every_other_format(report):
    """One gate run, several formats (the GitHub Action): the JSON document holds the report."""
    from fatbin_inspect.render.findings.json import report as read_report

    back = read_report(json.loads(render_json(report)))
    assert back.findings == report.findings and back.checks == report.checks
    assert (back.command, back.targets, back.inputs) == (report.command, report.targets, report.inputs)
    for fmt in ("sarif", "github", "junit", "markdown", "gitlab", "jsonl", "table"):
        assert formats.render(back, fmt, "error") == formats.render(report, fmt, "error"), fmt
    with pytest.raises(ValueError):
        read_report({**json.loads(render_json(report)), "schema_version": 2})
