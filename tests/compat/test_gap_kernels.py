"""Say which part fails (issue 22 item 8): when some fatbins of a file load and others have no
code for the GPU, the verdict stays fail/partial and the reason names the kernels of the failing
ones by their common prefix and count.

fixtures/units/f6_linked_gap.so (scripts/build_fixtures.sh, nvcc 13.0): two TUs of its own with
sm_80 SASS + compute_80 PTX, and a linked-in TU (fixtures/src/linked.cu) with five C++ kernels
named ncclDevKernel_* and sm_80 SASS only, as NCCL's kernels sit in TensorFlow's framework
library. On RTX 5090 and H100 the library's own code JIT-compiles, NCCL's kernels fail.
"""

import ast
import dataclasses
import pathlib

import pytest
from conftest import cli_json, fixture_path

import fatbin_inspect as fi
from fatbin_inspect.compat import gap_kernels
from fatbin_inspect.compat.engine import evaluate
from fatbin_inspect.compat.targets import resolve_targets
from fatbin_inspect.inventory import payloads
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path
from fatbin_inspect.judging import verdicts

F6 = fixture_path("units", "f6_linked_gap.so")
F5 = fixture_path("units", "f5_dropped_gen.so")
NAMED = "; they hold the 5 kernels named ncclDevKernel_*"


def check_json(*args):
    return cli_json("check", *args, "--driver", "580")


@pytest.mark.parametrize("kernels", [False, True], ids=["headers", "kernels"])
def test_the_reason_names_the_linked_librarys_kernels(kernels):
    doc = check_json(
        F6, "--gpu", "RTX 5090", "--gpu", "H100", "--gpu", "A100", *(["--kernels"] if kernels else [])
    )
    by_target = {r["target"]: r for r in doc["results"]}
    for i in (0, 1):  # RTX 5090, H100: fail/partial, the reason ends with the kernels
        r = by_target[i]
        assert (r["verdict"], r["coverage"], r["error"]["code"]) == ("fail", "partial", 209)
        assert r["reason"].startswith("1 of 3 fatbins have no code for CC")
        assert r["reason"].endswith(NAMED)
    assert by_target[2]["verdict"] == "native" and "kernels named" not in by_target[2]["reason"]


def test_only_the_reason_changes():
    """The engine's verdict from the headers alone and the one every command takes differ in the
    reason only."""
    (report,) = inspect_path(F6, Options(probe_small=True))
    t = resolve_targets(["RTX 5090"], "580")[0]
    plain = evaluate(report, t)
    (named,) = fi.check(F6, "RTX 5090", "580")
    assert named.reason == plain.reason + NAMED
    # (and the PTX a JIT would compile is counted: judging.ptx_shapes, for compat.jit)
    assert any(f.chosen is not None and f.chosen.shape is not None for f in named.fatbins)
    unshaped = tuple(
        dataclasses.replace(f, chosen=dataclasses.replace(f.chosen, shape=None)) if f.chosen else f
        for f in named.fatbins
    )
    assert {k: v for k, v in vars(named).items() if k not in ("reason", "fatbins")} == {
        k: v for k, v in vars(plain).items() if k not in ("reason", "fatbins")
    }
    assert unshaped == plain.fatbins


def test_few_kernels_are_listed():
    (v,) = fi.check(F5, "GTX 1080 Ti", "580")  # three TUs: attn, gemm, norm
    assert v.reason.endswith("; they hold 3 kernels: attn_kernel, gemm_kernel, norm_kernel")


@pytest.mark.parametrize("kernels", [False, True], ids=["headers", "kernels"])
@pytest.mark.parametrize("deflated", [False, True], ids=["stored", "deflated"])
def test_a_wheel_member_is_named(tmp_path, kernels, deflated):
    """A member of a wheel: that member alone is inflated to decode its gap fatbins (or its
    payloads were decoded already with --kernels); a member of a tar inside the wheel is not
    read again, and keeps the plain sentence."""
    import tarfile
    import zipfile

    whl = tmp_path / "lib-1.0-py3-none-manylinux_2_28_x86_64.whl"
    tgz = tmp_path / "inner.tar"
    with tarfile.open(tgz, "w") as t:
        t.add(F6, "libf6.so")
    method = zipfile.ZIP_DEFLATED if deflated else zipfile.ZIP_STORED
    with zipfile.ZipFile(whl, "w", method) as z:
        z.write(F6, "lib/libf6.so")
        z.write(tgz, "lib/inner.tar")
    doc = check_json(str(whl), "--gpu", "H100", *(["--kernels"] if kernels else []))
    by_path = {r["path"]: r for r in doc["results"]}
    assert by_path[f"{whl}!lib/libf6.so"]["reason"].endswith(NAMED)
    inner = by_path[f"{whl}!lib/inner.tar!libf6.so"]["reason"]
    assert inner.endswith(NAMED) if kernels else "kernels named" not in inner


# ------------------------------------------------------------------------------- the sentence
MANGLED = [
    "_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm64EE",
    "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm64EE",
    "_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm64EE",
    "_Z31ncclDevKernel_Broadcast_RING_LL24ncclDevKernelArgsStorageILm64EE",
]


def test_names_are_compared_demangled_without_arguments():
    from fatbin_inspect.formats.demangle import demangle

    if demangle(MANGLED[0]) is None:
        pytest.skip("no C++ runtime to demangle with")
    assert gap_kernels.base_name(MANGLED[0]) == "ncclDevKernel_AllGather_RING_LL"
    assert gap_kernels.base_name("void cutlass::Kernel<Gemm<float, 4> >(Params)") == "cutlass::Kernel"
    assert gap_kernels.base_name("attn_kernel") == "attn_kernel"
    assert gap_kernels.clause(MANGLED) == "; they hold the 4 kernels named ncclDevKernel_*"


@pytest.mark.parametrize(
    "names,expected",
    [
        ([], ""),
        (["one_kernel", "one_kernel"], "; they hold 1 kernel, one_kernel"),
        (["a_x", "b_y"], "; they hold 2 kernels: a_x, b_y"),
        (["gemm_f16", "gemm_f32", "gemm_bf16", "gemv_f32"], "; they hold the 4 kernels named gem*"),
        (["nccl_a", "nccl_b", "nccl_c", "nccl_d"], "; they hold the 4 kernels named nccl_*"),
        (
            ["attn_kernel", "gemm_kernel", "norm_kernel", "rope_kernel"],
            "; they hold the 4 kernels named *_kernel",
        ),
        (
            ["alpha", "beta", "gamma", "delta"],
            "; they hold 4 kernels, most often named alpha, beta, delta, …",
        ),
        (
            ["void k<1>(int)", "void k<2>(int)", "void k<3>(int)", "z<1>", "q"],
            "; they hold 5 kernels, most often named k ×3, q, z, …",
        ),
        (["void k<1>(int)", "void k<2>(int)"], "; they hold the 2 kernels named k"),
        (
            ["flash_fwd", "flash_fwd_split", "flash_bwd", "flash_fwd2"],
            "; they hold the 4 kernels named flash_*",
        ),
    ],
)
def test_clause(names, expected):
    assert gap_kernels.clause(names) == expected


@pytest.mark.slow
def test_a_real_library_names_its_gaps_kernels():
    """cuBLAS 12.4.5.8 (PyPI) on an RTX 5090: 8 of libcublas.so.12's 200 fatbins hold sm_61 SASS
    only (fermiPlusCgemm*, cutlass kernels); the others load."""
    import glob
    import os

    from conftest import CORPUS

    found = sorted(glob.glob(os.path.join(CORPUS, "nvidia_cublas_cu12-12.4.5.8-*.whl")))
    if not found:
        pytest.skip(f"nvidia_cublas_cu12-12.4.5.8 not in {CORPUS} (scripts/fetch_corpus.sh)")
    member = found[0] + "!nvidia/cublas/lib/libcublas.so.12"
    (r,) = check_json(member, "--gpu", "RTX 5090", "--kernels")["results"]
    assert (r["verdict"], r["coverage"]) == ("fail", "partial")
    assert r["reason"].startswith("8 of 200 fatbins have no code for CC 12.0")
    assert r["reason"].endswith(
        "; they hold 59 kernels, most often named fermiPlusCgemmLDS128_batched ×9, cutlass::Kernel ×5, "
        "cutlass::Kernel2 ×5, …"
    )


def test_kernel_names_reads_the_records_bytes_again():
    """``inventory.payloads.kernel_names``: the names of the fatbins asked for, decoded from the
    file the record names; None for a record whose bytes cannot be read again."""
    (rec,) = inspect_path(F6, Options())
    gap = [fb.offset for fb in rec.fatbins if all(e.sm == 80 for e in fb.entries)]
    names = payloads.kernel_names(rec, gap)
    assert names is not None and set(names) <= set(gap)
    assert sorted(n for ns in names.values() for n in ns if "ncclDevKernel_" in n)
    assert payloads.kernel_names(rec, []) == {}
    assert payloads.kernel_names(dataclasses.replace(rec, path=F6 + "!inner.tar!x.so"), gap) is None


def test_the_judging_reads_no_bytes_to_name_them():
    """``judging.verdicts`` leaves the byte reading to ``inventory.payloads.kernel_names``: it maps
    no file and decodes no payload itself."""
    tree = ast.parse(pathlib.Path(verdicts.__file__).read_text(encoding="utf-8"))
    froms = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    names = {a.name for n in froms for a in n.names}
    assert not names & {"open_blob", "decode_entry", "payload", "zip_member_blob", "binio"}
    assert not {n.module for n in froms} & {"fatbin_inspect.formats.binio", "fatbin_inspect.inventory.reader"}
