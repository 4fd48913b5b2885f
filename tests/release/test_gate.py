"""The release gate: policy precedence, each rule on synthesized libraries, exit codes per fail level."""

import dataclasses
import json
import os

import builders as B
import pytest
from conftest import cli

from fatbin_inspect.errors import UsageError
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path
from fatbin_inspect.release import policy as P
from fatbin_inspect.release.gate import gate


def write(path, data: bytes) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    return str(path)


def run_gate(paths, **policy):
    reports = [r for p in paths for r in inspect_path(str(p), Options(details=True))]
    return gate(reports, P.Policy(**policy))


def rules_of(report, target=...):
    return sorted(
        (f.rule_id, f.target, f.severity) for f in report.findings if target is ... or f.target == target
    )


# ------------------------------------------------------------------------------------ policy
def test_normalize_arch_spellings():
    assert [P.normalize_arch(a) for a in ("sm_90a", "90a", "9.0a", "8.6", "120f", "compute_120")] == [
        "sm_90a",
        "sm_90a",
        "sm_90a",
        "sm_86",
        "sm_120f",
        "compute_120",
    ]
    with pytest.raises(UsageError):
        P.normalize_arch("sm_80a")  # no arch-specific targets before 9.0
    with pytest.raises(UsageError):
        P.normalize_arch("hopper")


def test_flags_win_over_pyproject(tmp_path):
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(
        '[tool.fatbin-inspect]\nrequire = ["sm_70", "sm_80"]\nfail-on = "warning"\nrequire-ptx = true\n'
    )
    pol, given = P.load(str(cfg), {"require": "sm_90,sm_100", "fail_on": None})
    assert pol.require == ("sm_90", "sm_100")  # the flag
    assert pol.fail_on == "warning" and pol.require_ptx  # from the file, no flag given
    assert given == {"require": ("sm_90", "sm_100")}
    pol2, _ = P.load(str(cfg), {})
    assert pol2.require == ("sm_70", "sm_80")


def test_nearest_pyproject_is_found(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.fatbin-inspect]\nforbid = ["sm_50"]\n')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    pol, _ = P.load(None, {}, search_from=str(sub))
    assert pol.forbid == ("sm_50",) and pol.source == str(tmp_path / "pyproject.toml")


def test_overrides_apply_by_distribution_and_flags_still_win(tmp_path):
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(
        '[tool.fatbin-inspect]\nrequire = ["sm_80"]\n'
        '[[tool.fatbin-inspect.overrides]]\nmatch = "bitsandbytes"\nrequire = ["sm_70"]\n'
        'disable = ["FBI007"]\n'
    )
    pol, given = P.load(str(cfg), {})
    bnb = pol.for_artifact("d/bitsandbytes-0.42.0-py3-none-any.whl!x.so", "bitsandbytes 0.42.0")
    assert bnb.require == ("sm_70",) and bnb.disable == ("FBI007",)
    assert pol.for_artifact("other.so", None).require == ("sm_80",)
    pol, given = P.load(str(cfg), {"require": "sm_120"})
    assert pol.for_artifact("x.so", "bitsandbytes 0.42.0", given).require == ("sm_120",)


def test_every_policy_field_has_one_validator():
    assert set(P.VALIDATORS) == {f.name for f in dataclasses.fields(P.Policy)} - {"overrides", "source"}


@pytest.mark.parametrize(
    "text,needle",
    [
        ('[tool.fatbin-inspect]\nrequre = ["sm_80"]\n', "unknown key 'requre'"),
        ('[tool.fatbin-inspect]\nrequire = ["sm_8o"]\n', "not an architecture"),
        ('[tool.fatbin-inspect]\nfail-on = "fatal"\n', "fail-on"),
        ('[tool.fatbin-inspect]\nseverity = { FBI999 = "error" }\n', "unknown rule id"),
        ("[tool.fatbin-inspect\n", "invalid TOML"),
        ('[tool.fatbin-inspect]\nptx-counts = "yes"\n', "ptx-counts: expected true or false"),
        ("[tool.fatbin-inspect]\ngpus = [1]\n", "gpus: expected a list of strings"),
        ('[tool.fatbin-inspect]\nmin-driver = "r535"\n', "min-driver: expected a driver version"),
        ('[tool.fatbin-inspect]\nseverity = { FBI001 = "fatal" }\n', "severity.FBI001: expected one of"),
        ('[tool.fatbin-inspect]\nseverity = "error"\n', "expected a table of rule id"),
        ('[tool.fatbin-inspect]\ndisable = "FBI001, FBI777"\n', "unknown rule id 'FBI777'"),
    ],
)
def test_bad_policy_files_are_usage_errors(tmp_path, text, needle):
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(text)
    with pytest.raises(UsageError) as exc:
        P.load(str(cfg), {})
    assert needle in str(exc.value) and str(cfg) in str(exc.value)


# ------------------------------------------------------------------------------------- rules
def test_required_archs_per_fatbin(tmp_path):
    # TU 1 covers everything; TU 2 lacks sm_120 and has PTX only for sm_90
    lib = write(
        tmp_path / "lib.so", B.arch_library(B.arch_fatbin(["80", "90", "120"]), B.arch_fatbin(["80"], ["90"]))
    )
    rep = run_gate([lib], require=("sm_80", "sm_86", "sm_90", "sm_120"))
    # compute_90 PTX JITs for 9.0 and 12.0; sm_80 SASS serves 8.6
    assert rules_of(rep) == [("FBI002", "sm_120", "error"), ("FBI002", "sm_90", "error")]
    msg = {f.target: f.message for f in rep.findings}
    assert "1 of 2 fatbins" in msg["sm_90"]
    assert len(rep.checks) == 5  # file-wide + one per required arch


def test_no_code_is_fbi001_and_ptx_counts_makes_jit_a_note(tmp_path):
    lib = write(tmp_path / "lib.so", B.arch_library(B.arch_fatbin(["80"], ["80"])))
    strict = run_gate([lib], require=("sm_75", "sm_90"))
    assert rules_of(strict) == [("FBI001", "sm_75", "error"), ("FBI002", "sm_90", "error")]
    lenient = run_gate([lib], require=("sm_75", "sm_90"), ptx_counts=True)
    assert rules_of(lenient) == [("FBI001", "sm_75", "error"), ("FBI002", "sm_90", "note")]


def test_arch_specific_only_is_fbi005_but_fine_for_an_a_target(tmp_path):
    lib = write(tmp_path / "lib.so", B.arch_library(B.arch_fatbin(["90a", "100a"])))
    rep = run_gate([lib], require=("sm_90", "sm_90a", "sm_100f", "sm_103"))
    assert rules_of(rep) == [
        ("FBI001", "sm_103", "error"),
        ("FBI005", "sm_100f", "warning"),
        ("FBI005", "sm_90", "warning"),
    ]


def test_tegra_target_needs_its_exact_cubin(tmp_path):
    lib = write(tmp_path / "lib.so", B.arch_library(B.arch_fatbin(["80", "86"])))
    rep = run_gate([lib], require=("sm_87", "sm_89"))
    assert rules_of(rep) == [("FBI001", "sm_87", "error")]  # sm_86 serves 8.9, never Orin's 8.7


def test_forward_ptx_surplus_and_forbidden(tmp_path):
    lib = write(tmp_path / "lib.so", B.arch_library(B.arch_fatbin(["50", "80", "90"], ["80"])))
    rep = run_gate(
        [lib], require=("sm_80", "sm_90"), require_ptx=True, forbid=("sm_50",), allow_surplus=False
    )
    got = sorted((f.rule_id, f.arch, f.severity) for f in rep.findings)
    assert got == [("FBI006", "compute_90", "warning"), ("FBI007", "sm_50", "error")]
    rep = run_gate([lib], require=("sm_90",), allow_surplus=False)
    assert sorted((f.rule_id, f.arch) for f in rep.findings) == [("FBI007", "sm_50"), ("FBI007", "sm_80")]


def test_min_driver_gives_fbi003_and_fbi004(tmp_path):
    # PTX ISA 9.0 (CUDA 13.0) is too new for R535's JIT (8.2); libcudart.so.13 needs R580
    fb = B.arch_fatbin(["80"], ["80"], ptx_version=(9, 0))
    lib = write(tmp_path / "lib.so", B.arch_library(fb))
    rep = run_gate([lib], require=("sm_80", "sm_90"), min_driver="535")
    # the library links no cudart and declares none: the driver check is not made, and says so
    assert rules_of(rep) == [("FBI003", "sm_90", "error"), ("FBI019", None, "warning")]
    assert "8.2" in next(f for f in rep.findings if f.rule_id == "FBI003").message
    assert rules_of(run_gate([lib], require=("sm_90",), min_driver="580")) == [
        ("FBI002", "sm_90", "error"),
        ("FBI019", None, "warning"),
    ]


def test_gpu_targets_go_through_the_engine(tmp_path):
    lib = write(tmp_path / "lib.so", B.arch_library(B.arch_fatbin(["80", "90"])))
    rep = run_gate([lib], gpus=("H100", "RTX 5090"))
    (f,) = rep.findings
    assert f.rule_id == "FBI001" and "5090" in f.target and "CC 12.0" in f.target
    assert {c.target for c in rep.checks if c.target} == {t for t in rep.targets}


def test_unreadable_input_ignore_and_disable(tmp_path):
    bad = write(tmp_path / "bad.so", B.host_elf([(".nv_fatbin", B.sample_fatbin()[:40])]))
    rep = run_gate([bad], require=("sm_80",))
    (f,) = [f for f in rep.findings if f.rule_id == "FBI008"]
    assert f.severity == "error" and f.offset is not None
    # ignoring everything leaves nothing to check: that is a finding of its own (FBI015)
    (f,) = run_gate([bad], require=("sm_80",), ignore=("bad.*",)).findings
    assert (f.rule_id, f.severity) == ("FBI015", "error") and "ignored" in f.message
    assert not run_gate([bad], require=("sm_80",), disable=("FBI008",)).findings


def test_severity_regrade(tmp_path):
    lib = write(tmp_path / "lib.so", B.arch_library(B.arch_fatbin(["90a"])))
    rep = run_gate([lib], require=("sm_90",), severity=(("FBI005", "error"),))
    assert rules_of(rep) == [("FBI005", "sm_90", "error")]


def test_match_torch_reports_narrower_extensions(tmp_path):
    site = tmp_path / "site-packages"
    torch_lib = write(
        site / "torch" / "lib" / "libtorch_cuda.so", B.arch_library(B.arch_fatbin(["80", "90", "120"]))
    )
    write(site / "torch" / "lib" / "libc10_cuda.so", B.arch_library(B.arch_fatbin(["80"])))
    ext = write(site / "ext" / "_C.so", B.arch_library(B.arch_fatbin(["80", "90"])))
    reports = [r for r in inspect_path(ext, Options(details=True))]
    reports += list(inspect_path(str(site / "torch" / "lib" / "libc10_cuda.so"), Options(details=True)))
    ref = next(iter(inspect_path(torch_lib, Options())))
    rep = gate(reports, P.Policy(), reference=ref)
    assert [(f.rule_id, f.path, f.arch) for f in rep.findings] == [("FBI009", ext, "sm_120")]


# ------------------------------------------------------------------------------- exit codes
@pytest.fixture
def two_libs(tmp_path):
    ok = write(tmp_path / "ok.so", B.arch_library(B.arch_fatbin(["80", "90"], ["90"])))
    warn = write(tmp_path / "warn.so", B.arch_library(B.arch_fatbin(["80", "90a"], ["90"])))
    return ok, warn


@pytest.mark.parametrize(
    "fail_on,exit_zero,expect_ok,expect_warn",
    [
        ("error", False, 0, 0),
        ("warning", False, 0, 1),
        ("never", False, 0, 0),
        ("warning", True, 0, 0),
    ],
)
def test_exit_codes_for_every_fail_level(two_libs, fail_on, exit_zero, expect_ok, expect_warn):
    ok, warn = two_libs
    extra = ["--exit-zero"] if exit_zero else []
    base = [
        "gate",
        "--isolated",
        "--require",
        "sm_80,sm_90",
        "--fail-on",
        fail_on,
        "--format",
        "json",
    ] + extra
    assert cli(*base, ok).code == expect_ok
    ran = cli(*base, warn)
    assert ran.code == expect_warn
    assert ran.json()["summary"]["failed"] == (fail_on == "warning")


def test_error_findings_exit_1_and_usage_exits_2(two_libs, tmp_path):
    ok, _ = two_libs
    assert cli("gate", "--isolated", "--require", "sm_100", ok).code == 1
    ran = cli("gate", "--isolated", "--require", "sm_1oo", ok)
    assert ran.code == 2 and "not an architecture" in ran.err and ran.out == ""
    ran = cli("gate", "--isolated", ok)
    assert ran.code == 2 and "nothing to check" in ran.err
    assert cli("gate", "--isolated", "--require", "sm_80", "--format", "xml", ok).code == 2


def test_environment_defaults_and_pyproject_in_cwd(two_libs, tmp_path, monkeypatch):
    _, warn = two_libs
    env = {
        "FATBIN_INSPECT_REQUIRE": "sm_90",
        "FATBIN_INSPECT_FAIL_ON": "warning",
        "FATBIN_INSPECT_FORMAT": "jsonl",
    }
    ran = cli("gate", "--isolated", warn, env=env)
    lines = [json.loads(line) for line in ran.out.splitlines()]
    assert ran.code == 1 and lines[0]["rule_id"] == "FBI005" and lines[-1]["type"] == "summary"
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fatbin-inspect]\nrequire = ["sm_90"]\ndisable = ["FBI005"]\n'
    )
    monkeypatch.chdir(tmp_path)
    ran = cli("gate", "--fail-on", "warning", warn, env={"FATBIN_INSPECT_FORMAT": "jsonl"})
    assert ran.code == 0 and json.loads(ran.out.splitlines()[-1])["counts"]["warning"] == 0


def test_output_file_and_github_step_summary(two_libs, tmp_path):
    _, warn = two_libs
    summary = tmp_path / "summary.md"
    out_file = tmp_path / "gate.txt"
    ran = cli(
        *("gate", "--isolated", "--require", "sm_90", "--format", "github", "-o", out_file, warn),
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert ran.code == 0 and ran.out == ""
    assert out_file.read_text().startswith("::warning file=")
    assert "FBI005" in summary.read_text()


def test_require_is_an_architecture_some_toolkit_or_gpu_has():
    """Issue 25 item 5: ``--require sm_800`` is a usage error, not a bogus FBI002."""
    from fatbin_inspect.errors import UsageError
    from fatbin_inspect.release.policy import normalize_arch

    for bad in ("sm_800", "sm_99", "1000"):
        with pytest.raises(UsageError):
            normalize_arch(bad, "require")
    assert [normalize_arch(a) for a in ("sm_80", "90a", "12.1", "sm_20")] == [
        "sm_80",
        "sm_90a",
        "sm_121",
        "sm_20",
    ]
