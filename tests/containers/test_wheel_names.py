"""One reading of wheel file names and dist-info metadata (containers.wheel) for gate, diff and scan."""

from __future__ import annotations

import pytest

from fatbin_inspect.containers import wheel
from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.release.diff import match_key
from fatbin_inspect.release.policy import Override, distribution_of
from fatbin_inspect.scanning.distributions import innermost_wheel, wheel_distribution

ORT = "onnxruntime_gpu-1.23.2-cp311-cp311-manylinux_2_28_x86_64.whl"


@pytest.mark.parametrize(
    "filename,label,key",
    [
        (ORT, "onnxruntime-gpu 1.23.2", "onnxruntime-gpu.whl"),
        ("torch-2.9.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl", "torch 2.9.0+cu128", "torch.whl"),
        ("pkg-1.0-1-py3-none-any.whl", "pkg 1.0", "pkg.whl"),  # with a build tag
        ("dist/Flash_Attn-2.8.3-cp310-cp310-linux_x86_64.whl", "flash-attn 2.8.3", "dist/flash-attn.whl"),
        ("pkg-1.0.whl", None, "pkg-1.0.whl"),  # no tags: not a wheel name
        ("pkg-x-y-py3-none-any.whl", None, "pkg-x-y-py3-none-any.whl"),  # "x" is no version
        ("lib.so", None, "lib.so"),
    ],
)
def test_gate_scan_and_diff_read_a_wheel_name_alike(filename, label, key):
    dist = wheel.wheel_name(filename)
    assert (dist.label if dist else None) == label
    assert wheel_distribution(filename) == label
    report = FileReport(path=f"{filename}!pkg/ext.so", format="elf", size=1)
    assert distribution_of(report) == label
    assert innermost_wheel(f"{filename}!pkg/ext.so") == label
    key = match_key(f"root/{filename}!pkg/ext.so", "root")
    assert key == (
        f"{filename}!pkg/ext.so"
        if dist is None
        else f"{dist.name}.whl!pkg/ext.so".replace("flash", "dist/flash")
    )


def test_diff_keys_ignore_the_version():
    old = match_key(f"old/{ORT}!onnxruntime/capi/libonnxruntime_providers_cuda.so", "old")
    new = match_key(
        "new/onnxruntime_gpu-1.24.0-cp311-cp311-manylinux_2_28_x86_64.whl!onnxruntime/capi/"
        "libonnxruntime_providers_cuda.so",
        "new",
    )
    assert old == new == "onnxruntime-gpu.whl!onnxruntime/capi/libonnxruntime_providers_cuda.so"


def test_dist_info_folder_and_metadata():
    assert wheel.info_dir_name("site/nvidia_cublas_cu12-12.8.4.1.dist-info") == (
        "nvidia-cublas-cu12",
        "12.8.4.1",
    )
    assert wheel.info_dir_name("x.egg-info") is None and wheel.info_dir_name("lib") is None
    text = (
        "Metadata-Version: 2.1\nName: Flash_Attn\nVersion: 2.8.3\n"
        "Requires-Dist: torch>=2.4\nRequires-Dist: nvidia-cuda-runtime-cu12==12.8.90; "
        'platform_system == "Linux"\nRequires-Dist: !!broken\n\nRequires-Dist: body-text\n'
    )
    headers = wheel.metadata_headers(text.splitlines(keepends=True))
    assert wheel.metadata_name(headers).label == "flash-attn 2.8.3"
    reqs = wheel.requires_dist(headers)  # the broken one is skipped, the body is not headers
    assert [r.name for r in reqs] == ["torch", "nvidia-cuda-runtime-cu12"]
    assert str(reqs[1].specifier) == "==12.8.90" and reqs[1].marker is not None


def test_override_globs_spelled_like_the_file_match_the_canonical_name():
    ov = Override(match=("onnxruntime_gpu*",), values=())
    assert ov.applies("x/ext.so", "onnxruntime-gpu 1.23.2")
    assert not ov.applies("x/ext.so", "onnxruntime 1.23.2")


def test_runtime_reads_requires_dist_through_packaging():
    from fatbin_inspect.judging.verdicts import metadata_runtime as from_wheel_metadata

    meta = (
        "Metadata-Version: 2.1\nName: ext\nVersion: 1.0\n"
        'Requires-Dist: nvidia_cuda_runtime_cu12==12.8.90; platform_system == "Linux"\n'
        "Requires-Dist: numpy>=1.26\n\n"
        "Requires-Dist: nvidia-cuda-runtime-cu13==13.0.1\n"  # the description, not a header
    )
    need = from_wheel_metadata(meta)
    assert need.version == "12.8" and need.source == "wheel requires nvidia_cuda_runtime_cu12==12.8.90"
    toolkit = from_wheel_metadata("Name: x\nRequires-Dist: cuda-toolkit[cudart,nvcc]==13.0.2\n")
    assert toolkit.version == "13.0"
    family = from_wheel_metadata("Name: x\nRequires-Dist: nvidia-cublas-cu12\n")
    assert family.version == "12" and family.confidence == "medium"
    assert from_wheel_metadata("Name: x\nRequires-Dist: !!!\n") is None


def test_canonical_names_are_packaging_s():
    """``containers.wheel.canonicalize_name`` (kept off ``packaging.utils``' import) gives what
    ``packaging.utils.canonicalize_name`` gives, on every spelling the corpus and PEP 503 show."""
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from packaging.utils import canonicalize_name as theirs

    from fatbin_inspect.containers.wheel import canonicalize_name as ours

    for name in ["onnxruntime_gpu", "Nvidia-CuBLAS-cu12", "a.b-c_d", "x__y..z", "torch", "_", "-a-", "ÄBC"]:
        assert ours(name) == theirs(name), name

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=st.sampled_from("aZ09-_.É ~"), max_size=12))
    def check(name):
        assert ours(name) == theirs(name)

    check()
