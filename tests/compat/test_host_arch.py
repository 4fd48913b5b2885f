"""R-HOST (issue 22 item 2): host binaries built for another CPU than the target's host fail,
on every command; targets know their host from doctor reports, fleet entries and the GPU data."""

import glob
import json
import os
import shutil
import zipfile

import pytest
from conftest import CORPUS, cli, fixture_path

import fatbin_inspect as fi
from fatbin_inspect.containers import machine_of

X86 = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")  # x86_64, sm_75 sm_80 sm_90 + compute_90


def _as_aarch64(src, dst):
    """The same file with e_machine EM_AARCH64 (183): what an aarch64 build's header says."""
    data = bytearray(open(src, "rb").read())
    data[18:20] = (183).to_bytes(2, "little")
    open(dst, "wb").write(bytes(data))
    return str(dst)


def test_machine_of_headers():
    head = open(X86, "rb").read(64)
    assert machine_of(head) == "x86_64"
    assert machine_of(open(fixture_path("bin", "t14_sm90a.cubin"), "rb").read(64)) is None  # EM_CUDA
    dll = open(fixture_path("bin", "pe_nv_fatb_2fatbins.dll"), "rb").read(4096)
    assert machine_of(dll) == "x86_64"


@pytest.mark.parametrize("gpu", ["GB10", "DGX Spark", "Jetson AGX Orin", "GH200"])
def test_x86_64_code_fails_on_aarch64_hosts(gpu):
    (v,) = fi.check([X86], gpus=[gpu])
    assert v.verdict == "fail" and v.rule == "R-HOST" and v.error is None
    assert "x86_64" in v.reason and "aarch64" in v.reason


def test_aarch64_code_runs_there_and_pcie_gpus_are_not_judged_by_host(tmp_path):
    arm = _as_aarch64(X86, tmp_path / "app_arm64")
    (v,) = fi.check([arm], gpus=["GB10"], driver="580")
    assert v.rule != "R-HOST"
    (v,) = fi.check([X86], gpus=["H100"])  # PCIe/SXM H100s sit in x86_64 and aarch64 servers
    assert v.verdict == "native"


def test_every_command_and_format_says_it(tmp_path):
    doc = cli("check", X86, "--gpu", "GB10", "--format", "json").json()
    assert doc["results"][0]["rule"] == "R-HOST" and doc["targets"][0]["host_arch"] == "aarch64"
    listed = cli("list", X86, "--gpu", "GB10", "--format", "json").json()
    assert listed["files"][0]["machine"] == "x86_64" and listed["results"][0]["rule"] == "R-HOST"
    sarif = cli("check", X86, "--gpu", "Jetson AGX Orin", "--format", "sarif").json()
    (res,) = sarif["runs"][0]["results"]
    assert res["ruleId"] == "FBI020" and "only PTX" not in res["message"]["text"]
    folder = tmp_path / "app"
    folder.mkdir()
    shutil.copy(X86, folder / "app")
    scan = cli("scan", str(folder), "--no-cache", "--gpu", "GB10", "--format", "json").json()
    assert scan["coverage"]["rows"][0]["verdicts"][0]["verdict"] == "fail"
    gate = fi.gate([X86], gpus="GB10")
    assert [f.rule_id for f in gate.findings] == ["FBI020"]


def test_doctor_report_and_fleet_entry_name_the_host(tmp_path):
    doc = {
        "stack": {
            "host": "grace01",
            "machine": "aarch64",
            "gpus": [{"name": "NVIDIA H100 PCIe", "cc": "9.0"}],
            "kernel_driver": {"version": "580.95.05"},
        }
    }
    (tmp_path / "doctor-grace01.json").write_text(json.dumps(doc))
    toml = tmp_path / "fleet.toml"
    toml.write_text('targets = [{name = "x86box", gpu = "H100", driver = "580", host_arch = "x86_64"}]\n')
    out = cli(
        "check",
        X86,
        "--targets",
        str(tmp_path / "doctor-grace01.json"),
        "--targets",
        str(toml),
        "--format",
        "json",
    ).json()
    by_host = {out["targets"][r["target"]]["hosts"][0]: r["verdict"] for r in out["results"]}
    assert by_host == {"grace01": "fail", "x86box": "native"}
    bad = tmp_path / "bad.toml"
    bad.write_text('targets = [{gpu = "H100", host_arch = "sparc"}]\n')
    assert cli("check", X86, "--targets", str(bad)).code == 2


@pytest.mark.corpus
def test_an_x86_64_wheel_on_gb10_and_orin():
    found = glob.glob(os.path.join(CORPUS, "nvidia_curand-10.4.0.35-*x86_64.whl"))
    if not found:
        pytest.skip("corpus wheel not downloaded (scripts/fetch_corpus.sh)")
    with zipfile.ZipFile(found[0]):
        pass
    vs = [v for v in fi.check(found, gpus=["GB10", "Jetson AGX Orin"]) if v.verdict != "no-device-code"]
    assert vs and all(v.verdict == "fail" and v.rule == "R-HOST" for v in vs)


def test_a_host_mismatch_keeps_the_device_answer(tmp_path):
    """R-HOST stays the verdict; ``device`` is what the device code gives on a host that can load
    the file (issue 56 item 1), and the fatbin counts describe the device code, not the host."""
    gb10, orin = fi.check([X86], gpus=["GB10", "Jetson AGX Orin"], driver="580")
    assert (gb10.verdict, gb10.rule, gb10.coverage) == ("fail", "R-HOST", "none")
    d = gb10.device
    assert (d.verdict, d.chosen.arch, d.coverage, d.device) == ("jit", "compute_90", "full", None)
    assert gb10.counts == d.counts == {"native": 0, "jit": 1, "fail": 0}
    d = orin.device  # a desktop sm_75/80/90 build on Orin's Tegra GPU fails there too
    assert (d.verdict, d.error.code, d.rule) == ("fail", 209, "R-SASS-TEGRA")
    (arm,) = fi.check([_as_aarch64(X86, tmp_path / "arm")], gpus=["GB10"], driver="580")
    assert arm.rule != "R-HOST" and arm.device is None and arm.verdict == "jit"


def test_every_command_carries_the_device_answer(tmp_path):
    line = "jit compute_90 — on a host that can load the file"
    doc = cli("check", X86, "--gpu", "GB10", "--gpu", "H100", "--driver", "580", "--format", "json").json()
    gb10, h100 = doc["results"]
    dev = gb10["device"]
    assert (dev["verdict"], dev["chosen"]["arch"], dev["rule"], dev["summary"]) == (
        "jit",
        "compute_90",
        "R-PTX-TARGET-1",
        line,
    )
    assert gb10["fatbins"] == dev["fatbins"] == {"native": 0, "jit": 1, "fail": 0}
    assert "device" not in h100  # only where R-HOST decided
    table = cli("check", X86, "--gpu", "GB10", "--driver", "580", codes=(1,)).out
    assert f"device code: {line}" in table
    matrix = cli("check", X86, "--gpu", "GB10", "--gpu", "H100", "--driver", "580", codes=(1,)).out
    assert "device code: jit compute_90" in matrix
    sarif = cli("check", X86, "--gpu", "GB10", "--driver", "580", "--format", "sarif", codes=(1,)).json()
    (res,) = sarif["runs"][0]["results"]
    assert res["ruleId"] == "FBI020" and "device code: jit compute_90" in res["message"]["text"]
    gate = fi.gate([X86], gpus="GB10", driver="580")
    assert [f.rule_id for f in gate.findings] == ["FBI020"] and "device code: jit" in gate.findings[0].message
    folder = tmp_path / "app"
    folder.mkdir()
    shutil.copy(X86, folder / "app")
    scan = cli(
        "scan", str(folder), "--no-cache", "--gpu", "GB10", "--driver", "580", "--format", "json"
    ).json()
    (v,) = scan["coverage"]["rows"][0]["verdicts"]
    assert (v["rule"], v["error"], v["device"]["verdict"], v["device"]["rule"]) == (
        "R-HOST",
        None,
        "jit",
        "R-PTX-TARGET-1",
    )
