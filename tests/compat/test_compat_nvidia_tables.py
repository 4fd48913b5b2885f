"""Issue 22 items 4-6 and issue 25 item 5: Jetson driver numbers read as NVIDIA publishes them,
forward compatibility by NVIDIA's package x branch table, the data rows of the audit, GPU names
typed together. The cuda-compat cases also run on a real wheel (nvidia-curand 10.4.0.35: CUDA 13.0,
static cudart in ``nvidia/cu13/lib``) when the corpus is there."""

import json
import os

import pytest
from conftest import BIN, CORPUS, cli, device_only
from record_builders import E, report

from fatbin_inspect.compat import data, rules
from fatbin_inspect.compat.engine import evaluate
from fatbin_inspect.compat.targets import Target, resolve_driver, resolve_gpu, resolve_targets
from fatbin_inspect.errors import UsageError

CURAND = os.path.join(CORPUS, "nvidia_curand-10.4.0.35-py3-none-manylinux_2_27_x86_64.whl")


def T(gpu: str, driver: str, compat: str | None = None) -> Target:
    return device_only(resolve_targets([gpu], driver, compat=compat))[0]


# ------------------------------------------------------------------ R-FWD: NVIDIA's table
@pytest.mark.parametrize(
    "pkg,branch,cell",
    [("13.4", 535, "C"), ("13.4", 610, "C"), ("13.4", 615, "N/A"), ("12.9", 570, "C"), ("12.9", 580, "X")],
)
def test_the_table_is_in_the_data_with_its_source(pkg, branch, cell):
    assert data.fwd_cell(pkg, branch) == cell
    m = data.forward_compat()["matrix"]
    assert "forward-compatibility.html" in m["source"] and m["as_of"] == "2026-12-01"
    assert data.fwd_cell(pkg, 550) == "unlisted" and data.fwd_cell("13.5", 580) is None


@pytest.mark.parametrize(
    "gpu,driver,compat,ok,error,words",
    [
        ("H100", "535.230.02", "13.4", True, None, "end of life (R535's was 2026-06)"),  # C, R535 ended
        ("H100", "570.211.01", "13.4", True, None, "end of life (R570's was 2026-02)"),  # C, R570 ended
        ("H100", "610.43.02", "13.4", True, None, "new feature branches"),  # C, prose says no
        ("H100", "580.95.05", "13.4", True, None, None),  # C, nothing to warn about
        ("H100", "550.54.15", "13.4", False, 803, "no column for R550"),
        ("H100", "580.95.05", "12.9", False, 803, "older than the installed driver"),
        ("RTX 4090", "535.230.02", "13.4", False, 804, "geforce"),
        ("GB10", "580.95.05", "13.4", False, 804, "GB10"),
        ("DGX Spark", "580.95.05", "13.4", False, 804, "GB10"),
    ],
)
def test_fwd_follows_the_table(gpu, driver, compat, ok, error, words):
    t = T(gpu, driver, compat)
    o = rules.forward_compat(t)
    assert (o.ok, o.error) == (ok, error), o.reason
    if ok and words:  # where prose and table disagree: a warning, in the reason and beside the target
        assert "warning" in o.reason and words in o.reason and words in (t.driver.note or "")
        assert o.confidence == "medium"
    elif ok:
        assert "warning" not in o.reason and not t.driver.note and o.confidence == "high"
    else:
        assert words in o.reason and not t.driver.note


def test_gb10_is_one_row_and_not_a_forward_compatibility_part():
    rows = [g for g in data.gpus() if "NVIDIA GB10" in g.get("nvidia_smi_names", ())]
    assert len(rows) == 1 and rows[0]["segment"] == "workstation" and rows[0]["source"]
    assert resolve_gpu("DGX Spark").name == resolve_gpu("GB10").name == "NVIDIA GB10"


def test_compat_12_8_loads_on_r535_and_the_cuda_13_runtime_then_fails_35():
    """The user's case: cuda-compat-12-8 loads on R535 (C), the CUDA 13 runtime then fails with 35."""
    v = evaluate(report(E("sm_90")), T("H100", "535.230.02", "12.8"))
    assert v.verdict == "fail" and v.error.code == 35 and v.rule == "R-DRV" and "12.8" in v.reason


def test_a_package_without_a_row_is_judged_by_the_prose_with_low_confidence():
    o = rules.forward_compat(T("H100", "580.95.05", "13.5"))
    assert o.ok and o.confidence == "low" and "not in NVIDIA's forward-compatibility table" in o.reason
    o = rules.forward_compat(T("H100", "590.44.01", "13.5"))
    assert not o.ok and o.error == 803 and o.confidence == "low"


@pytest.mark.corpus
@pytest.mark.parametrize(
    "gpu,driver,compat,verdict,error,rule",
    [
        ("H100", "535.230.02", "12.8", "fail", 35, "R-DRV"),
        ("H100", "535.230.02", "13.4", "native", None, "R-SASS-1"),
        ("H100", "570.211.01", "13.4", "native", None, "R-SASS-1"),
        ("H100", "610.43.02", "13.4", "native", None, "R-SASS-1"),
        ("H100", "550.54.15", "13.4", "fail", 803, "R-FWD"),
        ("RTX 4090", "535.230.02", "13.4", "fail", 804, "R-FWD"),
        # an x86_64 wheel never loads on DGX Spark's aarch64 host: R-HOST decides before R-FWD
        # (the 804 of a compat package on GB10 is tested on device code alone, above)
        ("GB10", "580.95.05", "13.4", "fail", None, "R-HOST"),
    ],
)
def test_cuda_compat_on_a_real_cuda13_wheel(gpu, driver, compat, verdict, error, rule):
    if not os.path.exists(CURAND):
        pytest.skip(f"{CURAND} not downloaded (scripts/fetch_corpus.sh)")
    res = cli("check", CURAND, "--gpu", gpu, "--driver", driver, "--compat", compat, "--format", "json")
    (v,) = res.json()["results"]
    assert (v["verdict"], (v["error"] or {}).get("code"), v["rule"]) == (verdict, error, rule), v["reason"]
    assert v["runtime"]["version"].startswith("13")


# ---------------------------------------------------------------------- R-FWD on Jetson
@pytest.mark.parametrize(
    "gpu,driver,compat,ok",
    [
        ("Jetson AGX Orin", "jetpack-6.2", "12.8", True),
        ("Jetson AGX Orin", "jetpack-6.2", "13.4", False),  # JetPack 6.x: 13.0 onwards X
        ("Jetson AGX Orin", "jetpack-7.2", "13.4", True),  # cuda-compat-orin-13-4
        ("Jetson AGX Thor", "jetpack-7.0", "13.4", False),  # JetPack 7.0: 13.1 onwards X
        ("Jetson AGX Thor", "jetpack-7.2", "13.3", True),
        ("Jetson AGX Orin", "540.4.0", "12.9", True),
    ],
)
def test_fwd_on_jetson_follows_the_tegra_table(gpu, driver, compat, ok):
    o = rules.forward_compat(T(gpu, driver, compat))
    assert o.ok == ok and (ok or o.error == 803), o.reason


# ------------------------------------------------------------------ Jetson driver numbers
def test_jetpack_6_2_driver_number_is_l4t_36_4_not_desktop_r535():
    d = resolve_driver("540.4.0")
    assert d.platform == "jetson" and d.cuda == "12.6" and d.jetpack.startswith("6.1")
    assert "L4T 36.4" in d.note and "desktop" not in d.note
    v = evaluate(report(E("sm_87"), needs=("libcudart.so.12",)), T("Jetson AGX Orin", "540.4.0"))
    assert v.verdict == "native" and not any("desktop driver number" in n for n in v.notes)


@pytest.mark.parametrize(
    "number,jetpack,cuda,listed",
    [("540.4.0", "6.1", "12.6", True), ("540.5.0", "6.2.2", "12.6", True), ("540.7.0", "6.x", "12.6", False)],
)
def test_every_540_number_is_jetpack_6(number, jetpack, cuda, listed):
    """JetPack 6 prints 540.<L4T revision>.0; a number not listed is read by that rule, said so."""
    d = resolve_driver(number)
    assert d.platform == "jetson" and d.jetpack.startswith(jetpack) and d.cuda == cuda
    assert ("low confidence" in d.note) != listed


@pytest.mark.parametrize("text", ["jetpack-7.2", "JetPack 7.2", "l4t-39.2", "r39.2", "jetpack-7.2.1"])
def test_jetpack_7_2_is_known(text):
    d = resolve_driver(text)
    assert d.platform == "jetson" and d.cuda == "13.2" and d.branch == 595


def test_thor_prints_580_00_which_on_a_jetson_is_jetpack_7():
    assert resolve_driver("580.00").platform is None  # alone: desktop R580's branch
    t = T("Jetson AGX Thor", "580.00")
    assert t.driver.platform == "jetson" and t.driver.jetpack == "7.0" and t.driver.cuda == "13.0"


def test_desktop_number_for_a_jetson_is_said_in_the_table_header_and_the_matrix():
    f = os.path.join(BIN, "t12_lib_sm86_c89.so")
    for extra in ([], ["--long"]):
        res = cli("check", f, "--gpu", "Jetson AGX Orin", "--driver", "580", "--color", "never", *extra)
        assert "580 is a desktop driver number" in res.out, res.out
    matrix = cli("check", f, f, "--gpu", "H100,Jetson AGX Orin", "--driver", "580", "--color", "never")
    assert "580 is a desktop driver number" in matrix.out


def test_a_doctor_report_with_the_jetson_driver_number_is_a_jetson_target(tmp_path):
    from fatbin_inspect.judging import fleet

    doc = {
        "schema_version": 1,
        "stack": {
            "gpus": [{"index": 0, "name": "Orin (nvgpu)", "cc": "8.7", "tegra": True, "uuid": None}],
            "kernel_driver": {"version": "540.4.0", "source": "nvml"},
            "user_driver": {"path": "/usr/lib/aarch64-linux-gnu/nvidia/libcuda.so.1", "build": None},
            "host": "orin1",
        },
    }
    p = tmp_path / "doctor-orin1.json"
    p.write_text(json.dumps(doc))
    (t,) = fleet.read_targets(str(p), None)
    assert (
        t.driver.platform == "jetson" and t.driver.cuda == "12.6" and "desktop" not in (t.driver.note or "")
    )


@pytest.mark.parametrize(
    "gpu,driver,words",
    [
        ("Jetson AGX Orin", "jetpack-7.0", "JetPack 7.0 does not support Jetson AGX Orin"),
        ("Jetson AGX Thor", "jetpack-6.2", "JetPack 6.2 does not support Jetson AGX Thor"),
        ("H100", "540.4.0", "NVIDIA H100 is no Jetson"),
        ("Jetson AGX Orin", "jetpack-7.2", None),
        ("Jetson AGX Thor", "jetpack-7.2", None),
    ],
)
def test_a_jetpack_release_for_a_module_it_does_not_support_is_noted(gpu, driver, words):
    note = T(gpu, driver).driver.note or ""
    assert (words in note) if words else "does not support" not in note


# ------------------------------------------------------------------------- data rows (6)
def test_windows_616_is_r615_and_the_r616_row_is_gone():
    d = resolve_driver("616.41")
    assert (d.branch, d.platform, d.cuda) == (615, "windows", "13.4")
    assert data.branch_row(616) is None


def test_windows_floors_of_12_8_and_12_9_update_2():
    rows = {r["release"]: r for t in data.toolkits() for r in t["driver_table"]}
    assert rows["CUDA 12.8 Update 2"]["windows_x86_64_min_driver"] == "572.61"
    assert rows["CUDA 12.9 Update 2"]["windows_x86_64_min_driver"] == "576.57"
    assert all(
        rows[r]["windows_source"] in data.load("toolkits")["source_keys"] for r in ("CUDA 12.8 Update 2",)
    )


def test_r575_type_and_first_branch_rows_carry_sources():
    b = data.branch_row(575)
    assert b["type"] == "new-feature" and b["lifecycle_source"] and b["lifecycle_as_of"] == "2026-12-01"
    rows = {r["cc"]: r for r in data.load("drivers")["first_branch_for_cc_derived"]}
    assert all("Derived" in rows[cc]["source"] and rows[cc]["as_of"] for cc in ("10.3", "12.1"))


def test_tile_ir_names_nvidias_versions():
    named = data.tile_ir()["named_versions"]
    assert "r580" in named["driver"] and "13.1" in named["toolkit"] and named["source"]


# ------------------------------------------------------------------------------ GPU names
@pytest.mark.parametrize(
    "query,name",
    [
        ("RTX5090", "NVIDIA GeForce RTX 5090"),
        ("rtx-5090", "NVIDIA GeForce RTX 5090"),
        ("GeForceRTX4090", "NVIDIA GeForce RTX 4090"),
        ("rtx4070tisuper", "NVIDIA GeForce RTX 4070 Ti SUPER"),
        ("H100SXM5", "NVIDIA H100"),
        ("JetsonAGXOrin", "Jetson AGX Orin"),
        ("dgxspark", "NVIDIA GB10"),
        ("RTXPRO6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition"),
    ],
)
def test_names_typed_together_resolve(query, name):
    assert resolve_gpu(query).name == name


@pytest.mark.parametrize(
    "query,want,shared",
    [
        ("RTX5900", "NVIDIA GeForce RTX 5090", "rtx"),
        ("RTX 4900", "NVIDIA GeForce RTX 4090", "rtx"),
        ("GTX 1008", "GeForce GTX 1080", "gtx"),
        ("L4O", "NVIDIA L40", None),
        ("Jetson Orn", "Jetson AGX Orin", "jetson"),
        ("GB100", "NVIDIA GB200", None),
    ],
)
def test_closest_names_are_sensible(query, want, shared):
    with pytest.raises(UsageError) as exc:
        resolve_gpu(query)
    closest = str(exc.value).split("closest: ", 1)[1].split(" (see", 1)[0].split(", ")
    assert want in closest, closest
    assert "NVIDIA T500" not in closest
    if shared:
        assert all(shared in c.lower() for c in closest), closest


@pytest.mark.parametrize("query", ["H1000", "B200X", "GB100", "rtx40900"])
def test_run_together_splitting_invents_no_match(query):
    """Pieces are words (no lone letter, no unit, no cut digit run): these stay unknown."""
    with pytest.raises(UsageError):
        resolve_gpu(query)


def test_the_table_warning_is_not_given_where_the_table_does_not_apply():
    """On a Jetson the JetPack table decides R-FWD; on GeForce the package is refused (804)."""
    assert "forward-compatibility table" not in (T("Jetson AGX Orin", "610.43.02", "13.4").driver.note or "")
    assert "forward-compatibility table" not in (T("RTX 4090", "610.43.02", "13.4").driver.note or "")
    assert "forward-compatibility table" in T("H100", "610.43.02", "13.4").driver.note
