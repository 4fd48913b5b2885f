"""Deployment situations of issue #17: forward-compatibility packages (R-FWD 803/804), Windows driver
numbers, Jetson releases, and the data rows of the December 2026 update (each row has a source)."""

import json
import os

import pytest
from conftest import COMPAT, cli
from record_builders import E, report

from fatbin_inspect.compat import data, rules
from fatbin_inspect.compat.engine import evaluate
from fatbin_inspect.compat.explain import explain
from fatbin_inspect.compat.runtime import RuntimeNeed, from_needs
from fatbin_inspect.compat.targets import (
    Target,
    gpu_for_cc,
    resolve_compat,
    resolve_driver,
    resolve_gpu,
    resolve_targets,
)
from fatbin_inspect.errors import UsageError

RT13 = RuntimeNeed("13", "DT_NEEDED libcudart.so.13")


def T(gpu: str, driver: str, compat: str | None = None) -> Target:
    return resolve_targets([gpu], driver, compat=compat)[0]


# ------------------------------------------------------------------------------------- R-FWD
def test_fwd_allowed_on_a_supported_base_raises_the_jit_limit_to_the_package():
    """PTX ISA 9.4 cannot be JIT-compiled by R580 (ISA 9.0); with cuda-compat-13-4 it can."""
    r = report(E("compute_90", isa="9.4"))
    plain = evaluate(r, T("H100", "580.65.06"))
    assert plain.verdict == "fail" and plain.error.code == 222
    fwd = evaluate(r, T("H100", "580.65.06", compat="13.4"))
    assert fwd.verdict == "jit", fwd.reason
    o = rules.forward_compat(T("H100", "580.65.06", compat="13.4"))
    assert o.ok and o.rule == "R-FWD" and "CUDA 13.4" in o.reason


def test_fwd_runtime_check_uses_the_package_cuda():
    """A 13.x runtime on an H100 with R535 (CUDA 12.2): 35 alone, fine with cuda-compat-13-4 (C in
    NVIDIA's table); on a Jetson Orin with JetPack 6.2 the 12.8 package lifts the JIT to PTX 8.7."""
    plain = T("H100", "535.230.02")
    assert not rules.driver_for_runtime(RT13, plain).ok
    fwd = T("H100", "535.230.02", compat="13.4")
    assert rules.forward_compat(fwd).ok
    assert rules.driver_for_runtime(RT13, fwd).ok
    r = report(E("compute_87", isa="8.7"), needs=())
    assert evaluate(r, T("Jetson AGX Orin", "jetpack-6.2")).error.code == 222
    assert evaluate(r, T("Jetson AGX Orin", "jetpack-6.2", compat="12.8")).verdict == "jit"
    # minor-version note follows the package too: runtime 13.4 on R580 alone runs under R-MVC
    assert rules.mvc(RuntimeNeed("13.4", "pin"), T("H100", "580")) is not None
    assert rules.mvc(RuntimeNeed("13.4", "pin"), T("H100", "580", compat="13.4")) is None


@pytest.mark.parametrize(
    "driver,compat,why",
    [
        ("550.54.15", "13.4", "no column for R550"),  # not in NVIDIA's table: end of life
        ("575.57.08", "13.0", "no column for R575"),
        ("580.65.06", "12.9", "older than the installed driver"),  # X
        ("590.44.01", "13.0", "older than the installed driver"),  # X
    ],
)
def test_fwd_803_outside_nvidias_table(driver, compat, why):
    v = evaluate(report(E("sm_90")), T("H100", driver, compat=compat))
    assert v.verdict == "fail" and v.error.code == 803 and v.rule == "R-FWD"
    assert why in v.reason


def test_fwd_803_when_the_package_is_older_than_the_driver():
    o = rules.forward_compat(T("H100", "620", compat="13.4"))
    assert not o.ok and o.error == 803 and "older" in o.reason


def test_fwd_804_on_geforce_and_803_on_a_jetpack_line_without_the_package():
    v = evaluate(report(E("sm_89")), T("RTX 4090", "580.65.06", compat="13.4"))
    assert v.verdict == "fail" and v.error.code == 804 and v.rule == "R-FWD"
    o = rules.forward_compat(T("Jetson AGX Orin", "jetpack-6.2", compat="13.2"))
    assert not o.ok and o.error == 803 and "JetPack 6.x" in o.reason


def test_fwd_server_edition_rtx_is_accepted():
    o = rules.forward_compat(T("RTX PRO 4500 Blackwell Server Edition", "580.65.06", compat="13.4"))
    assert o.ok, o.reason


def test_fwd_gpu_given_by_cc_is_assumed_capable_with_low_confidence():
    o = rules.forward_compat(Target(gpu_for_cc((8, 9)), resolve_driver("580"), compat=resolve_compat("13.4")))
    assert o.ok and o.confidence == "low"


def test_compat_spellings_and_errors():
    assert resolve_compat("cuda-compat-13-4").driver.branch == 615  # not the R616 developer driver
    assert resolve_compat("13.5").driver.branch == 620
    with pytest.raises(UsageError):
        resolve_compat("thirteen")
    with pytest.raises(UsageError):
        resolve_compat("14.9")


@pytest.mark.parametrize("number,word", [(803, "cuda-compat"), (804, "CUDA_VISIBLE_DEVICES")])
def test_explain_803_804_say_what_to_do(number, word):
    res = cli("explain", str(number))
    assert res.code == 0 and word in res.out
    assert "R-FWD" in explain(str(number)).rules


def test_check_cli_compat_option_and_json_target():
    f = os.path.join(COMPAT, "case43_cudart13.so")
    res = cli("check", str(f), "--gpu", "RTX 4090", "--driver", "580.65.06", "--compat", "13.4")
    assert res.code == 1 and "804" in res.out and "cuda-compat-13-4" in res.out
    res = cli(
        "check", str(f), "--gpu", "H100", "--driver", "580.65.06", "--compat", "13.4", "--format", "json"
    )
    assert res.code == 0, res.out
    assert '"package": "cuda-compat-13-4"' in res.out


# ---------------------------------------------------------------------------- Windows numbers
@pytest.mark.parametrize(
    "text,branch,version",
    [
        ("581.29", 580, "581.29"),
        ("591.44", 590, "591.44"),
        ("596.36", 595, "596.36"),
        ("32.0.15.8129", 580, "581.29"),
        ("31.0.15.3623", 535, "536.23"),
        ("30.0.14.7212", 470, "472.12"),
    ],
)
def test_windows_driver_numbers(text, branch, version):
    d = resolve_driver(text)
    assert (d.branch, d.version, d.platform) == (branch, version, "windows")
    assert "Windows" in d.note


def test_windows_family_floors():
    """12.x needs 527.41 on Windows (525.60.13 on Linux): 527.27 is too old, 528.02 is enough."""
    rt12 = RuntimeNeed("12", "imports cudart64_12.dll", windows=True)
    assert not rules.driver_for_runtime(rt12, T("RTX 4090", "527.27")).ok
    assert rules.driver_for_runtime(rt12, T("RTX 4090", "528.02")).ok
    rt11 = RuntimeNeed("11", "imports cudart64_110.dll", windows=True)
    assert not rules.driver_for_runtime(rt11, T("RTX 3090", "451.48")).ok
    assert rules.driver_for_runtime(rt11, T("RTX 3090", "452.39")).ok
    assert rules.driver_for_runtime(RT13, T("RTX 4090", "581.29")).ok


def test_pe_binary_is_judged_against_windows_floors():
    rt = from_needs(["cudart64_12.dll"])
    assert rt.windows and not from_needs(["libcudart.so.12"]).windows
    o = rules.driver_for_runtime(rt, T("RTX 4090", "525"))
    assert o.ok and "Windows" in o.reason and "527.41" in o.reason


# ------------------------------------------------------------------------------------ Jetson
@pytest.mark.parametrize(
    "text,cuda",
    [
        ("jetpack-6.2", "12.6"),
        ("l4t-36.4", "12.6"),
        ("JetPack 6.0", "12.2"),
        ("jetpack-5.1.2", "11.4"),
        ("l4t-32.7", "10.2"),
        ("jetpack-7.0", "13.0"),
    ],
)
def test_jetpack_and_l4t_map_to_their_cuda(text, cuda):
    d = resolve_driver(text)
    assert d.cuda == cuda and d.platform == "jetson" and "JetPack" in d.note


def test_unknown_jetpack_is_a_usage_error():
    with pytest.raises(UsageError):
        resolve_driver("jetpack-9.9")


# ----------------------------------------------------------------------- Rubin on R615 / R610
def test_vr200_runs_sm_100f_on_615_and_is_not_driven_by_610():
    g = resolve_gpu("VR200")
    assert g.cc == (10, 7) and g.architecture == "Rubin"
    r = report(E("sm_100f"))
    ok = evaluate(r, T("VR200", "615"))
    assert ok.verdict == "native" and ok.rule == "R-SASS-F"
    old = evaluate(r, T("VR200", "610"))
    assert old.verdict == "fail" and old.error.code == 100 and old.rule == "R-GPU" and "615" in old.reason


def test_gpus_cli_finds_vr200_and_rtx_spark():
    res = cli("gpus", "VR200")
    assert res.code == 0 and "10.7" in res.out and "Rubin" in res.out
    res = cli("gpus", "RTX Spark")
    assert res.code == 0 and "12.1" in res.out


# ---------------------------------------------------------------------------- data rows (#17)
def _driver_rows(version):
    return {r["release"]: r for t in data.toolkits() if t["version"] == version for r in t["driver_table"]}


@pytest.mark.parametrize(
    "version,release,linux",
    [
        ("12.8", "CUDA 12.8 Update 2", "570.211.01"),
        ("12.9", "CUDA 12.9 Update 2", "575.57.08"),
        ("13.0", "CUDA 13.0 Update 3", "580.126.20"),
        ("13.1", "CUDA 13.1 Update 2", "590.48.01"),
    ],
)
def test_toolkit_updates_added_with_source(version, release, linux):
    row = _driver_rows(version)[release]
    assert row["linux_x86_64_min_driver"] == linux
    assert row["source"] in data.load("toolkits")["source_keys"] and row["as_of"] == "2026-12-01"
    assert row["confidence"] != "high"  # stated by the check, not re-read here


def test_toolkit_13_3_and_13_4_drivers():
    assert all(
        r["confidence"] == "high" and r["linux_x86_64_min_driver"] == "610.43.02"
        for r in _driver_rows("13.3").values()
    )
    rows = _driver_rows("13.4")
    assert "615.31" in rows["CUDA 13.4 GA (13.4.1)"]["linux_x86_64_min_driver"]  # NVIDIA's example build
    assert any("615.71.09" in r["linux_x86_64_min_driver"] for r in rows.values())
    assert "CUDA 13.4 Update 1 (13.4.2)" in rows and "Developer Preview" in " ".join(rows)
    assert next(t for t in data.toolkits() if t["version"] == "13.4")["driver_bundled"] is False


@pytest.mark.parametrize(
    "branch,kind,eol",
    [
        (535, "long-term", "2026-06"),
        (570, "production", "2026-02"),
        (580, "long-term", "2028-06"),
        (590, "new-feature", None),
        (595, "production", "2027-03"),
        (610, "new-feature", "2026-08"),
        (615, "new-feature", None),
        (575, "new-feature", "ended"),
        (620, "long-term", "2029-09"),
    ],
)
def test_branch_type_and_end_of_life(branch, kind, eol):
    row = data.branch_row(branch)
    assert (row["type"], row["end_of_life"]) == (kind, eol)
    assert row["lifecycle_source"] and row["lifecycle_as_of"] == "2026-12-01"


def test_default_driver_is_the_newest_confirmed_branch_r620():
    d = resolve_driver(None)
    assert d.assumed and d.branch == 620 and d.cuda == "13.5"


@pytest.mark.parametrize(
    "query,cc,segment,conf",
    [
        ("VR200", (10, 7), "datacenter", "medium"),
        ("RTX Spark N1X", (12, 1), "geforce", "medium"),
        ("RTX PRO 4500 Blackwell Server Edition", (12, 0), "datacenter", "medium"),
        ("RTX PRO 6000 Blackwell Server Edition", (12, 0), "datacenter", "high"),  # issue 56
        ("RTX PRO 6000 Blackwell Workstation Edition", (12, 0), "workstation", "high"),
        ("DRIVE P2021", (10, 0), "jetson/embedded", "low"),
    ],
)
def test_gpu_rows(query, cc, segment, conf):
    g = resolve_gpu(query)
    assert (g.cc, g.segment, g.confidence) == (cc, segment, conf)


def test_changed_gpu_rows_carry_source_and_as_of():
    rows = [g for g in data.gpus() if "as_of" in g]
    assert len(rows) >= 5
    assert all(g["source"] and g["as_of"] in ("2026-12-01", "2026-12-07") for g in rows)
    names = [g["name"] for g in data.gpus()]
    assert names.count("GeForce GT 1030") == 1
    assert not any(n.startswith("Rubin (GR100") for n in names)


def test_cuda_13_minor_version_floor_has_no_os_split():
    """NVIDIA's minor-version-compatibility table: CUDA 13.x >= 580, one cell for every OS."""
    for t in data.toolkits():
        if t["version"].startswith("13."):
            mvc = t["min_driver_minor_version_compat"]
            assert mvc["linux"] == mvc["windows"] == ">=580" and mvc["as_of"] == "2026-12-07", t["version"]
    assert data.mvc_floor(13, "windows") == data.mvc_floor(13) == (580,)


def test_generation_support_going_forward():
    assert data.last_branch_for_architecture("Pascal") == 580
    assert data.last_branch_for_architecture("Volta") == 580
    assert data.last_branch_for_architecture("Turing") is None  # still supported by 13.x drivers
    assert rules.gpu_supported(T("RTX 2080", "620")).ok
    assert not rules.gpu_supported(T("GTX 1080", "590")).ok


def test_every_data_file_is_dated_by_its_last_source():
    for name in ("drivers", "gpus", "toolkits", "target_rules", "errors"):
        assert data.load(name)["as_of"] == "2026-12-01", name


# ------------------------------------------------------------- fleet: doctor reports carry R-FWD
def _doctor_report(tmp_path, name, gpu, kernel, libcuda_path, build, api):
    doc = {
        "schema_version": 1,
        "stack": {
            "gpus": [{"index": 0, "name": gpu[0], "cc": gpu[1], "tegra": False, "uuid": None}],
            "kernel_driver": {"version": kernel, "source": "nvml"},
            "user_driver": {"path": libcuda_path, "build": build, "api_version": api, "error": None},
            "host": name,
        },
    }
    p = tmp_path / f"doctor-{name}.json"
    p.write_text(json.dumps(doc))
    return str(p)


def test_doctor_report_with_a_compat_libcuda_is_a_compat_target(tmp_path):
    from fatbin_inspect.judging import fleet

    p = _doctor_report(
        tmp_path,
        "node1",
        ("NVIDIA H100 80GB HBM3", "9.0"),
        "580.95.05",
        "/usr/local/cuda-13.4/compat/libcuda.so.1",
        "615.71.09",
        13040,
    )
    (t,) = fleet.read_targets(p, None)
    assert t.compat is not None and t.compat.package == "cuda-compat-13-4" and t.driver.branch == 580
    assert rules.forward_compat(t).ok
    plain = _doctor_report(
        tmp_path,
        "node2",
        ("NVIDIA H100 80GB HBM3", "9.0"),
        "580.95.05",
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "580.95.05",
        13000,
    )
    assert fleet.read_targets(plain, None)[0].compat is None


def test_scan_takes_compat_too():
    res = cli("scan", COMPAT, "--gpu", "RTX 4090", "--driver", "580", "--compat", "13.4")
    assert res.code == 1 and "804" in res.out and "cuda-compat-13-4" in res.out


@pytest.mark.parametrize(
    "text,branch,platform",
    [
        ("550.54.14", 550, "linux"),
        ("430.50.01", 418, "linux"),
        ("572.61", 570, "windows"),
        ("580.88", 580, None),
    ],
)
def test_linux_three_part_numbers_are_never_windows(text, branch, platform):
    d = resolve_driver(text)
    assert (d.branch, d.platform) == (branch, platform)
