"""Files attributed to dpkg packages of a system tree: a real database made by ``dpkg --root -i``
of a .deb built by ``dpkg-deb --build`` (a CUDA library as a packaged file) and a real .deb from
apt (``apt-get download``) beside it."""

import shutil
import subprocess

import pytest
from conftest import fixture_path
from package_dbs import dpkg_install

from fatbin_inspect.scanning import ScanOptions, scan

pytestmark = pytest.mark.skipif(
    shutil.which("dpkg") is None or shutil.which("dpkg-deb") is None, reason="needs dpkg and dpkg-deb"
)
LIB = "usr/lib/x86_64-linux-gnu/libcudart.so.12"


def _root(tmp_path):
    build = tmp_path / "build"
    (build / "DEBIAN").mkdir(parents=True)
    (build / LIB).parent.mkdir(parents=True)
    shutil.copy(fixture_path("bin", "t12_lib_sm86_c89.so"), build / LIB)
    (build / "DEBIAN" / "control").write_text(
        "Package: cuda-cudart-12-4\nVersion: 12.4.127-1\nArchitecture: amd64\n"
        "Maintainer: test <t@example.org>\nDescription: CUDA runtime (a fixture)\n"
    )
    deb = tmp_path / "cudart.deb"
    subprocess.run(["dpkg-deb", "--build", str(build), str(deb)], check=True, capture_output=True)
    debs = [str(deb)]
    got = subprocess.run(["apt-get", "download", "-q", "libzstd1"], cwd=tmp_path, capture_output=True)
    if got.returncode == 0:  # a real package too, when apt reaches a mirror
        debs += [str(p) for p in tmp_path.glob("libzstd1_*.deb")]
    root = tmp_path / "rootfs"
    dpkg_install(root, debs)
    return root


@pytest.mark.slow
def test_a_packaged_cuda_library_is_named_with_its_version(tmp_path):
    root = _root(tmp_path)
    (rec,) = [r for r in scan([str(root)], ScanOptions(jobs=1, cache_dir=None)).reports if r.fatbins]
    assert rec.path == str(root / LIB)
    assert rec.distribution == "cuda-cudart-12-4 12.4.127-1"
    # a file no package lists stays unattributed
    stray = root / "opt" / "libx.so"
    stray.parent.mkdir()
    shutil.copy(fixture_path("bin", "t12_lib_sm86_c89.so"), stray)
    recs = {r.path: r for r in scan([str(root)], ScanOptions(jobs=1, cache_dir=None)).reports}
    assert recs[str(stray)].distribution is None
    assert recs[str(root / LIB)].distribution == "cuda-cudart-12-4 12.4.127-1"
