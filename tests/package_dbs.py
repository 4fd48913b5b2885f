"""Package databases made by the real package managers (``rpmbuild`` and ``rpm --root``,
``dpkg-deb --build`` and ``dpkg --root``) for the tests of attribution to system packages."""

from __future__ import annotations

import os
import pathlib
import shutil
from collections.abc import Sequence

import pytest
from conftest import fixture_path
from image_tools import need, run


def dpkg_install(root: pathlib.Path, debs: Sequence[str]) -> None:
    """``dpkg --root ROOT -i DEB...`` into a fresh (or existing) database under ``root``."""
    (root / "var/lib/dpkg/info").mkdir(parents=True, exist_ok=True)
    (root / "var/lib/dpkg/updates").mkdir(exist_ok=True)
    (root / "var/lib/dpkg/status").touch()
    run(
        "dpkg",
        f"--root={root}",
        "--force-script-chrootless",
        "--force-depends",
        "--log=/dev/null",
        "-i",
        *debs,
    )


LIB_SRC = fixture_path("bin", "t12_lib_sm86_c89.so")
RPM_LIB = "usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127"
DEB_LIB = "usr/lib/x86_64-linux-gnu/libcublas.so.12"
SPEC = """Name: cuda-cudart-12-4
Version: 12.4.127
Release: 1
Epoch: 2
Summary: CUDA runtime (a fixture)
License: MIT
BuildArch: x86_64
%description
A fixture.
%install
mkdir -p %{buildroot}/DIR
cp %{_sourcedir}/LIB %{buildroot}/DIR/
%files
/DIR/LIB
"""


@pytest.fixture(scope="module")
def rpm_file(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """An rpm built by ``rpmbuild`` holding the CUDA runtime fixture at ``RPM_LIB``."""
    need("rpm", "rpmbuild")
    top = tmp_path_factory.mktemp("rpmbuild")
    (top / "SOURCES").mkdir()
    shutil.copy(LIB_SRC, top / "SOURCES" / os.path.basename(RPM_LIB))
    spec = top / "t.spec"
    d, lib = os.path.split(RPM_LIB)
    spec.write_text(SPEC.replace("DIR", d).replace("LIB", lib))
    run(
        "rpmbuild",
        "--define",
        f"_topdir {top}",
        "--define",
        "debug_package %{nil}",
        "--define",
        "__strip /bin/true",
        "--define",
        "_build_id_links none",
        "-bb",
        str(spec),
    )
    (rpm,) = (top / "RPMS" / "x86_64").glob("*.rpm")
    return rpm


def rpm_install(root: pathlib.Path, rpm: pathlib.Path, dbpath: str = "/var/lib/rpm") -> None:
    """``rpm --root ROOT -i`` of ``rpm`` (files and database), as dnf does it in an image."""
    run("rpm", "--root", str(root), "--dbpath", dbpath, "--initdb")
    run("rpm", "--root", str(root), "--dbpath", dbpath, "-i", "--nodeps", "--noscripts", str(rpm))


def deb_install(
    tmp_path: pathlib.Path,
    root: pathlib.Path,
    lib: str = DEB_LIB,
    name: str = "libcublas-12-4",
    version: str = "12.4.5.8-1",
) -> None:
    """``dpkg --root ROOT -i`` of a .deb built by ``dpkg-deb --build`` holding a CUDA library."""
    need("dpkg", "dpkg-deb")
    build = tmp_path / f"debbuild-{name}"
    (build / "DEBIAN").mkdir(parents=True)
    (build / lib).parent.mkdir(parents=True)
    shutil.copy(LIB_SRC, build / lib)
    (build / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: {version}\nArchitecture: amd64\n"
        "Maintainer: test <t@example.org>\nDescription: a CUDA library (a fixture)\n"
    )
    deb = tmp_path / f"{name}.deb"
    run("dpkg-deb", "--build", str(build), str(deb))
    dpkg_install(root, [str(deb)])
