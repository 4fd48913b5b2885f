"""conda packages built by conda-package-handling (``cph create``) and by GNU tar, installed as
conda does (files + ``conda-meta/NAME-VER-BUILD.json``): the CUDA each declares is kept."""

import json
import shutil
import subprocess

import pytest
from conftest import cli, fixture_path

from fatbin_inspect.scanning import ScanOptions, scan

CPH = shutil.which("cph")
needs_cph = pytest.mark.skipif(CPH is None, reason="conda-package-handling (cph) is not installed")
LIB = "lib/k.fatbin"  # no linked cudart: the runtime the package declares is what is judged


def _package_dir(tmp_path, depends, build="h1_0"):
    d = tmp_path / "pkg"
    (d / "info").mkdir(parents=True)
    (d / "lib").mkdir()
    shutil.copy(fixture_path("bin", "t13_raw_sm75_c75_sm120.fatbin"), d / LIB)
    index = dict(name="k", version="1.0", build=build, build_number=0, subdir="linux-64", depends=depends)
    (d / "info" / "index.json").write_text(json.dumps(index))
    (d / "info" / "files").write_text(LIB + "\n")
    return d, index


def _records(path):
    return [r for r in scan([str(path)], ScanOptions(jobs=1, cache_dir=None)).reports if r.fatbins]


@needs_cph
@pytest.mark.parametrize("ext", ["conda", "tar.bz2"])
def test_cudatoolkit_is_declared_cuda(tmp_path, ext):
    d, _ = _package_dir(tmp_path, ["cudatoolkit >=11.2,<12", "python >=3.9"])
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run([CPH, "create", str(d), f"k-1.0-h1_0.{ext}", "--out-folder", str(out)], check=True)
    (rec,) = _records(out / f"k-1.0-h1_0.{ext}")
    assert rec.package.cuda == "11.2" and "cudatoolkit" in rec.package.cuda_source


@pytest.mark.skipif(shutil.which("tar") is None, reason="no tar")
def test_tar_bz2_with_info_last_is_attributed(tmp_path):
    d, _ = _package_dir(tmp_path, ["cuda-version >=12.6,<13"])
    pkg = tmp_path / "k-1.0-h1_0.tar.bz2"
    subprocess.run(["tar", "-C", str(d), "-cjf", str(pkg), "lib", "info"], check=True)  # files first
    names = subprocess.run(["tar", "tjf", str(pkg)], capture_output=True, text=True, check=True).stdout
    assert names.index("lib/") < names.index("info/")
    (rec,) = _records(pkg)
    assert rec.path.endswith("!" + LIB)
    assert rec.package is not None and rec.package.label == "k 1.0" and rec.package.cuda == "12.6"
    assert rec.distribution == "k 1.0"


@needs_cph
def test_an_installed_package_keeps_its_declared_cuda(tmp_path):
    d, index = _package_dir(tmp_path, ["cuda-version >=12.6,<13"], build="cuda126_0")
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run([CPH, "create", str(d), "k-1.0-cuda126_0.conda", "--out-folder", str(out)], check=True)
    prefix = tmp_path / "env"
    subprocess.run([CPH, "x", str(out / "k-1.0-cuda126_0.conda"), "--dest", str(prefix)], check=True)
    (prefix / "conda-meta").mkdir()
    meta = dict(index, files=[LIB], channel="local")
    (prefix / "conda-meta" / "k-1.0-cuda126_0.json").write_text(json.dumps(meta))
    (packed,) = _records(out / "k-1.0-cuda126_0.conda")
    (installed,) = _records(prefix)
    assert installed.distribution == packed.distribution == "k 1.0"
    assert installed.package.cuda == packed.package.cuda == "12.6"

    # the same verdict for both: a CUDA 12.6 package needs a newer driver than R470 (error 35)
    def verdict(path):
        res = cli("scan", path, "--gpu", "T4", "--driver", "470", "--no-cache", "-j", "1")
        return [line for line in res.out.splitlines() if line.startswith("  k 1.0")]

    assert (
        verdict(prefix)
        and verdict(prefix)[0].split(":")[1] == verdict(out / "k-1.0-cuda126_0.conda")[0].split(":")[1]
    )
    assert "fail (35" in verdict(prefix)[0]


def test_an_installed_package_in_an_image_keeps_its_declared_cuda(tmp_path):
    from builders import oci_layout, tar_archive

    with open(fixture_path("bin", "t13_raw_sm75_c75_sm120.fatbin"), "rb") as fh:
        lib = fh.read()
    meta = dict(name="k", version="1.0", build="cuda126_0", depends=["cuda-version >=12.6,<13"], files=[LIB])
    layer = tar_archive(
        [("opt/conda/" + LIB, lib), ("opt/conda/conda-meta/k-1.0-cuda126_0.json", json.dumps(meta).encode())]
    )
    oci_layout(tmp_path / "img", [layer])
    (rec,) = _records(tmp_path / "img")
    assert rec.package is not None and rec.package.label == "k 1.0" and rec.package.cuda == "12.6"
