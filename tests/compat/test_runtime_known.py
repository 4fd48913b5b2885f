"""R-RT 5 and "runtime not known" (issue 22 item 3): where a file names no runtime, what its
distribution declares is used; failing that, every format says the driver check was not made."""

import glob
import os
import shutil
import zipfile

import pytest
from conftest import CORPUS, cli, fixture_path

import fatbin_inspect as fi
from fatbin_inspect.compat import runtime
from fatbin_inspect.compat.describe import RUNTIME_UNKNOWN

NO_RT = fixture_path("bin", "hidden_rodata_fatbin.so")  # an ELF library with a fatbin, no cudart


@pytest.mark.parametrize(
    "path,dist,beside,version",
    [
        ("x.whl!nvidia/cu13/lib/libcufft.so.12", None, (), "13"),
        ("/opt/venv/lib/python3.12/site-packages/nvidia/cu12/lib/libx.so", None, (), "12"),
        ("/usr/local/cuda-12.4/lib64/libfoo.so", None, (), "12"),
        ("/opt/lib/libfoo.so", "cupy-cuda12x", (), "12"),
        ("/opt/lib/libfoo.so", "nvidia-cufft-cu11", (), "11"),
        ("/opt/lib/libfoo.so", None, ("libc.so.6", "libcudart.so.13"), "13"),
        ("/opt/lib/libfoo.so", "numpy", ("libm.so.6",), None),
    ],
)
def test_what_the_distribution_declares(path, dist, beside, version):
    found = runtime.from_context(path, dist, beside)
    assert (found.version if found else None) == version
    assert found is None or found.confidence == "medium"


def test_unknown_runtime_is_said_in_json_table_and_findings(tmp_path):
    lib = tmp_path / "libplain.so"
    shutil.copy(NO_RT, lib)
    doc = cli("check", str(lib), "--gpu", "8.0", "--driver", "620", "--format", "json").json()
    (res,) = doc["results"]
    assert res["runtime"] is None and res["runtime_known"] is False
    assert RUNTIME_UNKNOWN in res["notes"] and res["confidence"] != "high"
    table = cli("check", str(lib), "--gpu", "8.0", "--driver", "620").out
    assert "runtime not known" in table
    sarif = cli("check", str(lib), "--gpu", "8.0", "--format", "sarif").json()
    assert "FBI019" in {r["ruleId"] for r in sarif["runs"][0]["results"]}
    gate = fi.gate([str(lib)], require="sm_80", min_driver="620")
    assert "FBI019" in {f.rule_id for f in gate.findings}


def test_a_cudart_beside_the_file_names_its_runtime(tmp_path):
    lib = tmp_path / "libplain.so"
    shutil.copy(NO_RT, lib)
    (tmp_path / "libcudart.so.13").write_bytes(b"\x7fELF")  # only its name is read
    (v,) = fi.check([str(lib)], gpus=["8.0"], driver="570")
    assert v.verdict == "fail" and v.error.code == 35 and "beside it" in v.runtime.source


def test_a_wheel_member_under_cu13_is_judged_as_cuda_13(tmp_path):
    whl = tmp_path / "nvidia_cufoo-1.0-py3-none-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.writestr(
            "nvidia_cufoo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: nvidia-cufoo\nVersion: 1.0\n"
        )
        zf.write(NO_RT, "nvidia/cu13/lib/libcufoo.so.1")
    (v,) = fi.check([str(whl)], gpus=["8.0"], driver="570")
    assert v.verdict == "fail" and v.error.code == 35 and "cu13/" in v.runtime.source


@pytest.mark.corpus
def test_cufft_13_without_cudart_fails_35_like_cublas_13():
    """The report: cuBLAS 13 failed 35 on R570 but cuFFT (also CUDA 13, nvidia/cu13/lib) was 'jit'."""
    wheels = [
        glob.glob(os.path.join(CORPUS, p))
        for p in ("nvidia_cufft-12.0.0.61-*.whl", "nvidia_cublas-13.1.1.3-*.whl")
    ]
    if not all(wheels):
        pytest.skip("corpus wheels not downloaded (scripts/fetch_corpus.sh)")
    vs = fi.check([w[0] for w in wheels], gpus=["H100"], driver="570")
    with_code = [v for v in vs if v.verdict != "no-device-code"]
    assert with_code and all(v.verdict == "fail" and v.error.code == 35 for v in with_code)
