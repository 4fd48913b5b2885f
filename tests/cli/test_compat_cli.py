"""`check`, `explain`, `gpus`: exit codes, the JSON contract (validated against check.schema.json)."""

import json
import os
from importlib import resources

import jsonschema
import pytest
from conftest import cli, fixture_path

from fatbin_inspect.compat import data


def case(n):
    path = fixture_path("compat", f"case{n}.fatbin")
    if not os.path.exists(path):
        pytest.skip(f"fixtures/compat/case{n}.fatbin not built")
    return path


@pytest.fixture(scope="module")
def schema():
    return json.loads(resources.files("fatbin_inspect").joinpath("schemas/check.schema.json").read_text())


@pytest.mark.parametrize(
    "n,gpu,driver,extra,code",
    [
        (1, "A100", "535", (), 0),  # native
        (8, "A100", "535", (), 1),  # 209
        (38, "A100", "550", (), 0),  # JIT only: a warning
        (38, "A100", "550", ("--fail-on", "warning"), 1),
        (1, "A100", "535", ("--env", "CUDA_FORCE_PTX_JIT=1"), 0),  # PTX present: JIT
        (8, "A100", "535", ("--gpu", "8.6"), 1),
    ],
)
def test_exit_codes(n, gpu, driver, extra, code):
    res = cli("check", case(n), "--gpu", gpu, "--driver", driver, *extra)
    assert res.code == code, res.err


@pytest.mark.parametrize(
    "args",
    [
        ("--gpu", "GT 730"),
        ("--gpu", "no such gpu"),
        ("--gpu", "A100", "--driver", "x"),
        ("--gpu", "A100", "--env", "NOEQUALS"),
        (),
    ],
)
def test_usage_errors_exit_2_with_one_line(args):
    res = cli("check", case(1), *args)
    assert res.code == 2
    err = res.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fatbin-inspect:")


def test_json_contract(schema):
    paths = [
        fixture_path("compat", f) for f in sorted(os.listdir(fixture_path("compat"))) if f.startswith("case")
    ]
    paths.append(fixture_path("bin", "t01_exe_sm80"))
    res = cli(
        "check",
        *paths,
        "--gpu",
        "RTX 4090",
        "--gpu",
        "Jetson AGX Orin",
        "--driver",
        "550.54.14",
        "--format",
        "json",
        "--per-fatbin",
    )
    doc = res.json()
    jsonschema.validate(doc, schema)
    assert doc["targets"][0] == {
        **doc["targets"][0],
        "gpu": "NVIDIA GeForce RTX 4090",
        "cc": "8.9",
        "tegra": False,
        "driver": "550.54.14",
        "driver_cuda": "12.4",
        "max_ptx_isa": "8.4",
    }
    assert doc["targets"][1]["tegra"] is True
    assert len(doc["results"]) == 2 * len(paths)
    assert {r["verdict"] for r in doc["results"]} >= {"native", "jit", "fail"}
    assert res.code == 1
    t01 = [r for r in doc["results"] if r["path"].endswith("t01_exe_sm80") and r["target"] == 0][0]
    # nvcc 13 adds a zero-kernel device-link fatbin: listed, ignored, not counted
    assert any(f["ignored"] for f in t01["fatbin_verdicts"])
    assert sum(t01["fatbins"].values()) == len([f for f in t01["fatbin_verdicts"] if not f["ignored"]])


def test_table_says_when_the_driver_is_assumed():
    res = cli("check", case(1), "--gpu", "H100")
    newest = [b for b in data.branches() if b["confidence"] != "low"][-1]["branch"]
    assert "assum" in res.out and f"R{newest}" in res.out
    assert "JIT" in res.out and "compute_80" in res.out  # sm_80 cubin cannot run on 9.0; PTX can
    assert res.code == 0


@pytest.mark.parametrize(
    "query,number",
    [
        ("209", 209),
        ("cudaErrorNoKernelImageForDevice", 209),
        ("CUDA_ERROR_NO_BINARY_FOR_GPU", 209),
        ("RuntimeError: CUDA error: no kernel image is available for execution on the device", 209),
        ("the provided PTX was compiled with an unsupported toolchain", 222),
        ("48", 209),
        ("CUDA initialization: The NVIDIA driver on your system is too old (found version 12080)", 35),
        ("CUDA driver version is insufficient for CUDA runtime version", 35),
    ],
)
def test_explain(query, number):
    res = cli("explain", query, "--format", "json")
    assert res.code == 0
    doc = res.json()
    row = data.error_by_number(number)
    assert doc["number"] == number and doc["runtime_name"] == row["runtime_api_name"]
    assert doc["rules"] and doc["checks"] and doc["command"].startswith("fatbin-inspect check")


def test_explain_text_and_unknown():
    res = cli("explain", "222")
    assert "R-PTX-ISA" in res.out and "--driver" in res.out
    assert cli("explain", "definitely not an error").code == 2


def test_gpus_lists_and_filters():
    res = cli("gpus", "--format", "json")
    assert len(res.json()["gpus"]) == len(data.gpus())
    res = cli("gpus", "orin", "--format", "json")
    names = [g["name"] for g in res.json()["gpus"]]
    assert names and all("orin" in n.lower() for n in names)
    assert cli("gpus", "8.9").code == 0


def test_wheel_runtime_requirement_decides_r_drv(tmp_path):
    import builders as B

    with open(case(1), "rb") as fh:
        fatbin = fh.read()
    meta = b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: nvidia-cuda-runtime-cu12==12.4.127\n"
    whl = tmp_path / "demo-1.0-py3-none-any.whl"
    whl.write_bytes(B.zip_archive([("demo/lib/libk.so", fatbin), ("demo-1.0.dist-info/METADATA", meta)]))
    old = cli("check", str(whl), "--gpu", "A100", "--driver", "470", "--format", "json").json()
    (r,) = old["results"]
    assert r["path"].endswith("!demo/lib/libk.so") and r["runtime"]["version"] == "12.4"
    assert (r["verdict"], r["error"]["code"], r["rule"]) == ("fail", 35, "R-DRV")
    new = cli("check", str(whl), "--gpu", "A100", "--driver", "535", "--format", "json").json()
    assert new["results"][0]["verdict"] == "native" and "R-MVC" in new["results"][0]["rules"]
