"""The payloads of files inside an image input, for the commands that read them (extract,
verify): an image made by umoci and skopeo gives the same images as the library it holds, read
on its own. (An image's records wait until its last layer is checked; before Options.image_bytes
their bytes were let go, and `extract IMAGE` wrote nothing and exited 0.)"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from conftest import cli, fixture_path

from fatbin_inspect.verify import compare
from fatbin_inspect.verify.runner import LOADED, LoadResult

LIB = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")  # 2 fatbins, 7 entries


def _run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The library as /usr/lib/libk.so in one layer: an OCI layout (umoci) and an oci-archive
    tar of it (skopeo)."""
    for tool in ("umoci", "skopeo"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (.ci/run installs it with apt-get)")
    tmp = tmp_path_factory.mktemp("image")
    lay, bundle = str(tmp / "L"), str(tmp / "B")
    _run("umoci", "init", "--layout", lay)
    _run("umoci", "new", "--image", f"{lay}:base")
    _run("umoci", "unpack", "--rootless", "--image", f"{lay}:base", bundle)
    os.makedirs(os.path.join(bundle, "rootfs", "usr", "lib"))
    shutil.copy(LIB, os.path.join(bundle, "rootfs", "usr", "lib", "libk.so"))
    _run("umoci", "repack", "--image", f"{lay}:base", bundle)
    tar = str(tmp / "img.tar")
    _run("skopeo", "copy", "-q", f"oci:{lay}:base", f"oci-archive:{tar}:base")
    return {"layout": lay, "tar": tar}


def _written(folder: str) -> dict[str, bytes]:
    """Extracted images by what follows the file's stem (``0.1.sm_80.cubin``), with their bytes."""
    return {n.split(".so.", 1)[-1]: open(os.path.join(folder, n), "rb").read() for n in os.listdir(folder)}


def test_extract_of_an_image_writes_the_images_of_its_files(image, tmp_path):
    cli("extract", LIB, "-d", str(tmp_path / "lib"), codes=0)
    ran = cli("extract", image["tar"], "-d", str(tmp_path / "img"), codes=0)
    want = {n.split(".", 1)[1]: b for n, b in _written(str(tmp_path / "lib")).items()}
    assert len(want) == 7 and "7 images written" in ran.err, ran.err
    assert _written(str(tmp_path / "img")) == want


def test_verify_reads_the_images_of_a_file_inside_an_image(image):
    seen: dict[str, list[bytes]] = {}

    def loader(name: str):  # what a child process would be handed, recorded
        def load(data: bytes) -> LoadResult:
            seen.setdefault(name, []).append(bytes(data))
            return LoadResult(LOADED)

        return load

    direct = list(compare.check_file(LIB, loader("lib"), loader("lib-nojit"), None))
    inside = list(compare.check_file(image["tar"], loader("img"), loader("img-nojit"), None))
    assert len(inside) == len(direct) > 0
    assert all(c.path.endswith("!usr/lib/libk.so") for c in inside)
    assert seen["img"] == seen["lib"] and seen["img-nojit"] == seen["lib-nojit"]
