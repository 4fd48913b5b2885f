"""Real wheels (opt-in, marker corpus): the libraries issue #14 found called broken are judged by R-FILE.

Pins what ``scripts/corpus_verdicts.py`` reports for the libraries people deploy: cuBLAS 13, NCCL
and cuFFT load on the GPUs NVIDIA supports (coverage partial: fatbins for other GPUs set aside),
their static cudart is found inside the wheel (CUDA 13 on R570 fails 35), the gate does not call
cuBLAS broken for sm_90, bitsandbytes' alternative builds count as one, and its release drops
sm_50/52/61. Skips when the wheels were not fetched (scripts/fetch_corpus.sh).
"""

import glob
import os

import pytest
from conftest import CORPUS, cli, device_only

from fatbin_inspect.compat import runtime, units
from fatbin_inspect.compat.engine import evaluate
from fatbin_inspect.compat.targets import resolve_targets
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path
from fatbin_inspect.judging.verdicts import wheel_runtime

pytestmark = pytest.mark.corpus


def wheel(prefix):
    found = sorted(glob.glob(os.path.join(CORPUS, prefix + "*.whl")))
    if not found:
        pytest.skip(f"{prefix}*.whl not in {CORPUS} (scripts/fetch_corpus.sh)")
    return found[0]


def members(path):
    wheel_rt = wheel_runtime(path)
    return {
        r.path.split("!", 1)[1]: (r, runtime.for_file(r, wheel_rt))
        for r in inspect_path(path, Options(probe_small=True))
        if r.fatbins and "!" in r.path
    }


def verdict(files, name, gpu, driver="580"):
    r, rt = files[name]
    (t,) = device_only(resolve_targets([gpu], driver))
    return evaluate(r, t, rt)


@pytest.fixture(scope="module")
def cublas():
    return members(wheel("nvidia_cublas-13"))


@pytest.mark.parametrize("gpu", ["A100", "H100", "RTX 4090", "RTX 5090", "GB10"])
def test_cublaslt_13_is_native_and_partial(cublas, gpu):
    v = verdict(cublas, "nvidia/cu13/lib/libcublasLt.so.13", gpu)
    assert (v.verdict, v.coverage) == ("native", "partial"), v.reason
    assert v.gaps is None and v.specialised.count > 0
    assert v.runtime.major == 13 and "static cudart" in v.runtime.source


def test_cublaslt_13_on_h100_sets_aside_blackwell_code(cublas):
    v = verdict(cublas, "nvidia/cu13/lib/libcublasLt.so.13", "H100")
    archs = dict(v.specialised.archs)
    assert archs.get("sm_100", 0) > 500 and "sm_90a" not in archs  # sm_90a loads on an H100


def test_cuda13_static_cudart_in_a_wheel_member_fails_35_on_r570(cublas):
    v = verdict(cublas, "nvidia/cu13/lib/libcublasLt.so.13", "H100", "570")
    assert (v.verdict, v.error.code, v.rule) == ("fail", 35, "R-DRV")


def test_nccl_and_cufft_do_not_fail_on_h100():
    nccl = members(wheel("nvidia_nccl_cu13"))
    v = verdict(nccl, "nvidia/nccl/lib/libnccl.so.2", "H100")
    assert v.verdict == "native" and v.coverage == "partial", v.reason
    assert verdict(nccl, "nvidia/nccl/lib/libnccl.so.2", "B200").verdict == "native"
    cufft = members(wheel("nvidia_cufft-12"))
    v = verdict(cufft, "nvidia/cu13/lib/libcufft.so.12", "H100")
    assert v.verdict in ("native", "jit") and v.coverage == "partial", v.reason


def test_gate_does_not_call_cublas_broken_for_sm90():
    res = cli("gate", wheel("nvidia_cublas-13"), "--require", "sm_90", "--isolated", "--format", "json")
    doc = res.json()
    assert res.code == 0, res.out
    assert {f["rule_id"] for f in doc["findings"]} <= {"FBI014"}


def test_bitsandbytes_builds_count_as_one():
    path = wheel("bitsandbytes-0.50.2-py3-none-manylinux")
    files = members(path)
    (t,) = resolve_targets(["H100"], "575")
    pairs = [(name, evaluate(r, t, rt)) for name, (r, rt) in files.items()]
    u = units.unit_verdict(pairs)
    assert u.verdict == "native" and u.variants, u.reason  # the 12.x builds load; 13.x need R580
    assert all("cuda12" in os.path.basename(p) for p in u.variants)
    assert units.unit_verdict(pairs, (13, 0)).error.code == 35


def test_bitsandbytes_release_drops_old_archs():
    old, new = wheel("bitsandbytes-0.42.0"), wheel("bitsandbytes-0.50.2-py3-none-manylinux")
    res = cli("diff", old, new, "--format", "json")
    msgs = [f["message"] for f in res.json()["findings"] if f["rule_id"] == "FBI010"]
    assert any("drops sm_50, sm_52, sm_61 from the release as a whole" in m for m in msgs), msgs
