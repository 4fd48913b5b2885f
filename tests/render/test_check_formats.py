"""`check --format jsonl|sarif|junit|github|markdown`: verdicts as the findings of `gate`.

One run over A100 and B200 with driver R535 gives every verdict rule: case8 209 (FBI001), case9
JIT-only (FBI002, a warning), case38 222 (FBI003), case43 35 (FBI004), and R535 predates the B200
(100, FBI013) for every file but case43, whose CUDA 13 runtime fails first (R-DRV before R-GPU:
the runtime initialises before it enumerates devices); case1 loads natively on the A100.
"""

import json
import os
import xml.etree.ElementTree as ET

import builders as B
import jsonschema
import pytest
from conftest import TESTS, cli, fixture_path

FILES = ("case1.fatbin", "case8.fatbin", "case9.fatbin", "case38.fatbin", "case43_cudart13.so")
A100, B200 = "NVIDIA A100 80GB PCIe (CC 8.0), driver 535", "NVIDIA B200 (CC 10.0), driver 535"
EXPECTED = {
    ("case8.fatbin", A100, "FBI001", "error"),
    ("case9.fatbin", A100, "FBI002", "warning"),
    ("case38.fatbin", A100, "FBI003", "error"),
    ("case43_cudart13.so", A100, "FBI004", "error"),
    ("case43_cudart13.so", B200, "FBI004", "error"),
} | {(f, B200, "FBI013", "error") for f in FILES if not f.startswith("case43")}


@pytest.fixture(scope="module")
def paths():
    out = [fixture_path("compat", f) for f in FILES]
    if not all(map(os.path.exists, out)):
        pytest.skip("fixtures/compat not built")
    return out


def check(paths, fmt, *extra, env=None):
    args = ["check", *paths, "--gpu", "A100", "--gpu", "B200", "--driver", "535", "--format", fmt, *extra]
    return cli(*args, env=env)


def test_jsonl_has_one_finding_per_failing_file_and_target(paths):
    res = check(paths, "jsonl")
    lines = [json.loads(line) for line in res.out.splitlines()]
    got = {(os.path.basename(x["path"]), x["target"], x["rule_id"], x["severity"]) for x in lines[:-1]}
    assert got == EXPECTED and len(lines) == len(EXPECTED) + 1
    assert lines[-1] == {**lines[-1], "type": "summary", "command": "check", "failed": True, "checks": 10}
    assert res.code == 1


def test_sarif_is_valid_2_1_0(paths):
    with open(os.path.join(TESTS, "data", "sarif-2.1.0.schema.json"), encoding="utf-8") as fh:
        schema = json.load(fh)
    res = check(paths, "sarif")
    doc = res.json()
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)
    run = doc["runs"][0]
    assert run["automationDetails"]["id"] == "fatbin-inspect/check/"
    assert {r["ruleId"] for r in run["results"]} == {e[2] for e in EXPECTED}
    fbi013 = next(r for r in run["tool"]["driver"]["rules"] if r["id"] == "FBI013")
    assert "(100)" in fbi013["help"]["text"]
    assert res.code == 1


@pytest.mark.parametrize("fail_on,jit_fails", [("error", False), ("warning", True)])
def test_junit_one_case_per_artifact_and_target(paths, fail_on, jit_fails):
    res = check(paths, "junit", "--fail-on", fail_on)
    cases = ET.fromstring(res.out).findall(".//testcase")
    assert {(os.path.basename(c.get("classname")), c.get("name")) for c in cases} == {
        (f, t) for f in FILES for t in (A100, B200)
    }
    failed = {
        (os.path.basename(c.get("classname")), c.get("name")) for c in cases if c.find("failure") is not None
    }
    assert failed == {(f, t) for f, t, _, sev in EXPECTED if sev == "error" or jit_fails}
    assert res.code == 1


def test_jit_only_fails_only_on_warning(paths):
    case9 = [p for p in paths if p.endswith("case9.fatbin")]
    args = ["check", *case9, "--gpu", "A100", "--driver", "535", "--format", "sarif"]
    assert cli(*args).code == 0
    assert cli(*args, "--fail-on", "warning").code == 1


def test_github_annotations_and_step_summary(paths, tmp_path):
    summary = tmp_path / "summary.md"
    res = check(paths, "github", env={"GITHUB_STEP_SUMMARY": str(summary)})
    lines = res.out.splitlines()
    assert len(lines) == len(EXPECTED) and all(
        line.startswith(("::error file=", "::warning file=")) for line in lines
    )
    assert sum(line.startswith("::warning ") and "title=FBI002 jit-only::" in line for line in lines) == 1
    assert ",line=1," in lines[0]
    assert summary.read_text().startswith("## fatbin-inspect check: failed")
    assert res.code == 1


def test_markdown_has_the_findings_table(paths):
    text = check(paths, "markdown").out
    assert "| | rule | artifact | target | finding |" in text
    assert f"| `FBI003` ptx-newer-than-driver | `{paths[3]}` | {A100} |" in text


def test_unreadable_input_is_fbi008_and_exits_2(paths, tmp_path):
    bad = tmp_path / "bad.so"
    bad.write_bytes(B.host_elf([(".nv_fatbin", B.sample_fatbin()[:40])]))
    res = check([paths[0], str(bad)], "junit")
    cases = ET.fromstring(res.out).findall(".//testcase")
    unreadable = [c for c in cases if c.get("classname") == str(bad)]
    assert len(cases) == 3 and len(unreadable) == 1 and unreadable[0].find("failure").get("type") == "FBI008"
    assert res.code == 2
