"""Which CUDA runtime a file needs: sonames, DLL imports, wheel metadata, static cudart."""

import os
import shutil
import subprocess

import pytest
from conftest import fixture_path

from fatbin_inspect.compat import runtime
from fatbin_inspect.containers import STATIC_CUDART_MARKER, has_static_cudart
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.formats.model import CubinInfo, Entry, Fatbin, FileReport
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path
from fatbin_inspect.judging.verdicts import metadata_runtime


@pytest.mark.parametrize(
    "needs,version",
    [
        (("libcudart.so.12",), "12"),
        (("libcudart.so.11.0",), "11"),
        (("libcudart.so.10.1",), "10.1"),
        (("cudart64_12.dll",), "12"),
        (("cudart64_110.dll",), "11"),
        (("cudart64_101.dll",), "10.1"),
        (("libnvrtc.so.13", "libcudart.so.13"), "13"),
        (("libcuda.so.1",), None),
        ((), None),
    ],
)
def test_from_needs(needs, version):
    rt = runtime.from_needs(needs)
    assert (rt.version if rt else None) == version


@pytest.mark.parametrize(
    "line,version",
    [
        ('Requires-Dist: cuda-toolkit[cublas,cudart,nvrtc]==13.0.3; platform_system == "Linux"', "13.0"),
        ('Requires-Dist: nvidia-cuda-runtime-cu12~=12.0; extra == "cuda"', "12"),
        ("Requires-Dist: nvidia-cuda-runtime-cu12==12.4.127", "12.4"),
        ("Requires-Dist: nvidia-cudnn-cu13==9.24.0.43", "13"),
        ("Requires-Dist: numpy>=1.0", None),
    ],
)
def test_from_wheel_metadata(line, version):
    rt = metadata_runtime("Name: x\n" + line + "\n")
    assert (rt.version if rt else None) == version


def test_fixture_sonames_reach_the_verdict():
    for name, major in (("case42_cudart12.so", 12), ("case43_cudart13.so", 13)):
        path = fixture_path("compat", name)
        if not os.path.exists(path):
            pytest.skip(f"{name} not built")
        r = next(inspect_path(path, Options(details=True)))
        assert runtime.for_file(r).major == major


def _report(path, static):
    info = CubinInfo(8, "exec", 80, False, None, False, "ptxas 12.8.93", None)
    e = Entry(0, "sass", 2, 80, "", "none", 1, 1, 0, (1, 8), 64, 64, "linux", False, None, None, cubin=info)
    fbs = (Fatbin(0, 1, ".nv_fatbin", (e,)),)
    return FileReport(path=str(path), format="elf", size=1, fatbins=fbs, static_cudart=static)


def test_static_cudart_marker_and_toolkit():
    blob = Blob(b"\0" * 100 + STATIC_CUDART_MARKER + b"%08llx%08llx\0")
    assert has_static_cudart(blob, ()) and not has_static_cudart(blob, ("libcudart.so.12",))
    assert not has_static_cudart(Blob(b"\0" * 100), ())
    # the fatbins found are not searched (a marker there is no host string); the gaps around are
    assert not has_static_cudart(blob, (), [(50, 130)])
    assert has_static_cudart(blob, (), [(0, 60), (130, 140)])
    assert has_static_cudart(blob, (), [(0, 99)]) and not has_static_cudart(blob, (), [(0, 101)])
    m = len(STATIC_CUDART_MARKER)  # a gap just the marker's size is searched, a shorter one is not
    assert has_static_cudart(blob, (), [(0, 100), (100 + m, 200)])
    assert not has_static_cudart(blob, (), [(0, 100), (99 + m, 200)])
    rt = runtime.for_file(_report("a", True))
    assert (rt.version, rt.confidence) == ("12.8", "medium") and "static" in rt.source
    assert runtime.for_file(_report("b", False)) is None


def _file_pages_mb() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("RssFile")) // 1024


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="RssFile is Linux's /proc")
def test_the_static_cudart_search_lets_its_pages_go(tmp_path):
    """Gaps every 11 KB between fatbins (cuFFT's 24,000) touch every page of the file: the search
    lets them go as it goes, so the resident set does not grow with the file (it did: cuFFT's
    worker held 251 MB of file pages)."""
    from fatbin_inspect.formats.binio import open_blob

    size = 96 << 20
    path = tmp_path / "gaps.bin"
    with open(path, "wb") as fh:
        fh.write(os.urandom(size))  # (not sparse: real pages, in the page cache)
    skip = [(a, a + 11_000) for a in range(0, size, 11_264)]  # 264-byte gaps between "fatbins"
    blob = open_blob(str(path))
    before = _file_pages_mb()
    assert not has_static_cudart(blob, (), skip)
    grown = _file_pages_mb() - before
    assert grown < 48, grown  # 16 MB windows, not all 96 MB


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="RssFile is Linux's /proc")
def test_one_long_gap_is_searched_in_pieces_whose_pages_go(monkeypatch, tmp_path):
    """A gap of 96 MB (libcublasLt.so.13's are tens of MB) is searched a ``RELEASE_EVERY`` piece
    at a time, its pages let go as it goes (searched in one pass, it held them all)."""
    from fatbin_inspect.formats.binio import open_blob

    size = 96 << 20
    path = tmp_path / "gap.bin"
    with open(path, "wb") as fh:
        fh.write(os.urandom(size).replace(b"/", b"."))  # (no marker by chance)
    blob = open_blob(str(path))
    before, most = _file_pages_mb(), [0]
    find = Blob.find

    def searched(self, *args):  # the pages held as each search ends, before any is let go
        hit = find(self, *args)
        most[0] = max(most[0], _file_pages_mb() - before)
        return hit

    monkeypatch.setattr(Blob, "find", searched)
    assert not has_static_cudart(blob, (), [])
    assert most[0] < 48, most[0]  # 16 MB pieces, not all 96 MB


@pytest.mark.parametrize("at", [-len(STATIC_CUDART_MARKER), -7, -1, 0])
def test_a_marker_across_two_pieces_of_a_gap_is_found(monkeypatch, at):
    from fatbin_inspect.formats import fatbin

    monkeypatch.setattr(fatbin, "RELEASE_EVERY", 64)
    data = bytearray(b"\0" * 400)
    data[128 + at : 128 + at + len(STATIC_CUDART_MARKER)] = STATIC_CUDART_MARKER
    assert has_static_cudart(Blob(bytes(data)), ())
    assert has_static_cudart(Blob(bytes(data)), (), [(0, 5)])  # (a gap that starts elsewhere)


def test_static_cudart_wins_over_wheel_metadata_and_bundled_copies_count():
    wheel = runtime.RuntimeNeed("12", "wheel requires nvidia-cuda-runtime-cu12", "medium")
    assert runtime.for_file(_report("w.whl!lib/x.so", True), wheel).version == "12.8"
    assert runtime.for_file(_report("w.whl!lib/x.so", False), wheel) is wheel
    rt = runtime.from_needs(("libcudart-3b2a1c4d.so.12.0.107",))
    assert rt.version == "12" and "auditwheel" in rt.source
    assert runtime.from_needs(("cudart64_12-0a1b2c3d.dll",)).version == "12"


@pytest.mark.slow
@pytest.mark.nvcc
def test_static_cudart_in_a_real_nvcc_executable(tmp_path):
    nvcc = shutil.which("nvcc")
    if not nvcc:
        pytest.skip("nvcc not on PATH")
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(){}\nint main(){k<<<1,1>>>();return 0;}\n")
    exe = tmp_path / "k"
    subprocess.run([nvcc, "-arch=sm_80", "-cudart", "static", "-o", str(exe), str(src)], check=True)
    r = next(inspect_path(str(exe), Options(details=True)))
    assert runtime.from_needs(r.needs) is None and r.static_cudart
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    rt = runtime.for_file(r)
    assert rt is not None and f"release {rt.version}" in version


@pytest.mark.parametrize(
    "needs,family",
    [
        (("cublas64_13.dll", "cublasLt64_13.dll"), "13"),  # bitsandbytes 0.50.2 cuda130.dll: static cudart
        (("libcublas.so.12", "libcublasLt.so.12"), "12"),
        (("cudart64_110.dll", "cublas64_11.dll"), "11"),  # cudart wins when present
    ],
)
def test_runtime_from_cublas_when_cudart_is_static(needs, family):
    need = runtime.from_needs(needs)
    assert need is not None and need.version == family
