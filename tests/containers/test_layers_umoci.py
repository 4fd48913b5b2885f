"""Layers as the runtimes apply them (issue 53 item 3): a differential test against ``umoci
unpack`` over generated layers. Each case is a stack of layer tars made here (regular files, hard
links in chains and fan-outs, links to a lower layer's file, whiteouts and opaque whiteouts at
every level including the root, files replaced by folders and the other way round), added with
``umoci raw add-layer``; ``umoci unpack`` gives the final filesystem, and ``oci.ImageReader`` must
report exactly its regular files, each with the bytes umoci wrote there, and count them as
umoci does. Every reading runs in a child under an address-space limit and a timeout."""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT
from image_tools import need, run

MEMORY = 1 << 30

# The reader's view in a child: {path: sha256} of the final filesystem's files and its counts.
_CHILD = r"""
import hashlib, json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]),) * 2)
from fatbin_inspect.containers import oci
store = oci.open_store(sys.argv[2])
(image,) = [i for i in oci.images(store, select=sys.argv[3])[0]]
reader = oci.ImageReader(store, image)
data, files = {}, {}
for m in reader.members():
    path = m.name.split("!", 1)[1]
    if m.alias is not None:
        data[m.name] = data[m.alias]
    elif m.blob is not None:
        data[m.name] = hashlib.sha256(m.blob.read(0, m.blob.size)).hexdigest()
    else:
        data[m.name] = "error: " + str(m.error)
    assert path not in files, ("reported twice", path)
    files[path] = data[m.name]
print(json.dumps({"files": files, "contents": reader.contents, "notes": reader.notes}))
"""


def reader_view(layout: Path, tag: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(MEMORY), str(layout), tag],
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return json.loads(proc.stdout)


def umoci_view(rootfs: Path) -> tuple[dict[str, str], int]:
    """{path: sha256} of the regular files umoci unpacked (hard links each a path), and their bytes."""
    files, size = {}, 0
    for d, _dirs, names in os.walk(rootfs):
        for n in names:
            p = os.path.join(d, n)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            data = Path(p).read_bytes()
            files[os.path.relpath(p, rootfs)] = hashlib.sha256(data).hexdigest()
            size += len(data)
    return files, size


# ------------------------------------------------------------------------------- layer tars
class Layer:
    """A layer tar made entry by entry, in order (hard links name entries before them)."""

    def __init__(self) -> None:
        self.buf = io.BytesIO()
        self.tar = tarfile.open(fileobj=self.buf, mode="w", format=tarfile.PAX_FORMAT)

    def _add(self, ti: tarfile.TarInfo, data: bytes | None = None) -> None:
        ti.mtime, ti.uid, ti.gid = 1_700_000_000, 0, 0
        self.tar.addfile(ti, io.BytesIO(data) if data is not None else None)

    def dir(self, path: str) -> None:
        ti = tarfile.TarInfo(path)
        ti.type, ti.mode = tarfile.DIRTYPE, 0o755
        self._add(ti)

    def dirs(self, *paths: str) -> None:
        for path in paths:
            self.dir(path)

    def file(self, path: str, data: bytes) -> None:
        ti = tarfile.TarInfo(path)
        ti.size, ti.mode = len(data), 0o644
        self._add(ti, data)

    def files(self, *paths: str) -> None:
        """Regular files, each with bytes of its own (``content`` of its path)."""
        for path in paths:
            self.file(path, content(path))

    def link(self, path: str, target: str) -> None:
        ti = tarfile.TarInfo(path)
        ti.type, ti.linkname, ti.mode = tarfile.LNKTYPE, target, 0o644
        self._add(ti)

    def whiteout(self, path: str) -> None:
        parent, base = os.path.split(path)
        self.file(os.path.join(parent, f".wh.{base}") if parent else f".wh.{base}", b"")

    def opaque(self, folder: str) -> None:
        self.file(os.path.join(folder, ".wh..wh..opq") if folder else ".wh..wh..opq", b"")

    def bytes(self) -> bytes:
        self.tar.close()
        return self.buf.getvalue()


def content(tag: str) -> bytes:
    """A file's bytes: an ELF head (so every file is a member) and a unique tail."""
    return b"\x7fELF\x02\x01\x01" + bytes(57) + tag.encode() * 3


def build(tmp_path: Path, layers: list[Layer], name: str = "L") -> tuple[Path, str]:
    """An OCI layout holding the layers stacked (``umoci raw add-layer``); (layout, last tag)."""
    need("umoci")
    lay = tmp_path / name
    run("umoci", "init", "--layout", str(lay))
    run("umoci", "new", "--image", f"{lay}:t0")
    for i, layer in enumerate(layers, 1):
        tar = tmp_path / f"{name}-layer{i}.tar"
        tar.write_bytes(layer.bytes())
        run("umoci", "raw", "add-layer", "--image", f"{lay}:t{i - 1}", "--tag", f"t{i}", str(tar))
    return lay, f"t{len(layers)}"


def differential(tmp_path: Path, layers: list[Layer], name: str = "L") -> dict:
    lay, tag = build(tmp_path, layers, name)
    bundle = tmp_path / f"{name}-bundle"
    run("umoci", "unpack", "--rootless", "--image", f"{lay}:{tag}", str(bundle))
    want, size = umoci_view(bundle / "rootfs")
    got = reader_view(lay, tag)
    assert got["files"] == want, {
        "extra": got["files"].keys() - want.keys(),
        "missing": want.keys() - got["files"].keys(),
    }
    assert got["contents"] == [len(want), size]
    return got


# ------------------------------------------------------------------------------ the cases
def case_links_in_one_layer() -> list[Layer]:
    """A chain (c -> b -> a), a fan-out (four links to one file), a link under a folder of its own."""
    one = Layer()
    one.dir("d")
    one.file("d/a.so", content("a"))
    one.link("d/b.so", "d/a.so")
    one.link("d/c.so", "d/b.so")  # a link to a link
    one.dir("e")
    for i in range(4):
        one.link(f"e/fan{i}.so", "d/a.so")
    return [one]


def case_links_to_lower_layers() -> list[Layer]:
    """Links to a lower layer's file, a chain across three layers, and a link to a file that an
    upper layer replaces (the link keeps the old bytes)."""
    one, two, three = Layer(), Layer(), Layer()
    one.dir("lib")
    one.file("lib/base.so", content("base"))
    one.file("lib/old.so", content("old"))
    two.dir("lib")
    two.link("lib/mid.so", "lib/base.so")  # to layer one
    two.link("lib/keep-old.so", "lib/old.so")
    three.dir("lib")
    three.link("lib/top.so", "lib/mid.so")  # to layer two's link to layer one
    three.file("lib/old.so", content("new"))  # replaces the file keep-old.so shares
    return [one, two, three]


def case_links_to_deleted_files() -> list[Layer]:
    """A link whose target an upper layer deletes (whiteout) or hides (opaque): the link stays,
    with the bytes it had."""
    one, two = Layer(), Layer()
    one.dir("x")
    one.file("x/gone.so", content("gone"))
    one.link("x/stays.so", "x/gone.so")
    one.dir("y")
    one.file("y/hidden.so", content("hidden"))
    one.dir("z")
    one.link("z/kept.so", "y/hidden.so")
    two.whiteout("x/gone.so")
    two.dir("y")
    two.opaque("y")
    return [one, two]


def case_whiteouts_at_every_level() -> list[Layer]:
    """Whiteouts of a file, of a folder, nested; an opaque whiteout at the root that hides every
    lower file, with files of its own layer kept."""
    one, two, three = Layer(), Layer(), Layer()
    one.dirs("a", "a/b", "a/b/c", "k")
    one.files("top.so", "a/b/c/deep.so", "a/f.so", "k/k.so")
    two.dirs("a", "a/b")
    two.whiteout("a/b/c")  # a folder
    two.whiteout("a/f.so")
    two.files("a/b/new.so")
    three.opaque("")  # the root: everything below is gone
    three.dirs("k")
    three.files("k/fresh.so")
    return [one, two, three]


def case_nested_opaque_and_replacements() -> list[Layer]:
    """An opaque folder whose own layer adds files; a file replaced by a folder and a folder by a
    file; a whiteout in a folder an upper layer recreates."""
    one, two, three = Layer(), Layer(), Layer()
    one.dirs("o", "o/sub", "f", "r")
    one.files("o/sub/x.so", "o/y.so", "f/inner.so", "r/was-file")
    two.dir("o")
    two.opaque("o")
    two.file("o/z.so", content("oz"))
    two.file("f", content("f-now-file"))  # the folder f becomes a file
    two.dir("r")
    two.dir("r/was-file")  # the file becomes a folder
    two.file("r/was-file/in.so", content("in"))
    three.dir("o")
    three.whiteout("o/z.so")
    three.file("o/w.so", content("ow"))
    return [one, two, three]


CASES = [
    case_links_in_one_layer,
    case_links_to_lower_layers,
    case_links_to_deleted_files,
    case_whiteouts_at_every_level,
    case_nested_opaque_and_replacements,
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_the_final_filesystem_is_umocis(tmp_path, case):
    differential(tmp_path, case())


def generated(seed: int) -> list[Layer]:
    """Three random layers over a small tree: files, links to any file present so far (same or
    lower layers, links to links), whiteouts and opaque whiteouts of what lower layers hold."""
    rng = random.Random(seed)
    folders = ["", "a", "a/b", "c"]
    present: set[str] = set()  # regular files and links present after the layers so far
    layers = []
    for n in range(3):
        layer, mine, gone = Layer(), set(), set()
        for d in folders[1:]:
            layer.dir(d)
        if n and rng.random() < 0.5:
            d = rng.choice(folders)
            layer.opaque(d)
            gone |= {p for p in present if p.startswith(d + "/") or not d}
        for i in range(rng.randint(3, 8)):
            path = f"{rng.choice(folders)}/f{n}_{i}.so".lstrip("/")
            roll = rng.random()
            if roll < 0.3 and (targets := sorted((present - gone) | mine)):
                layer.link(path, rng.choice(targets))
            elif roll < 0.45 and n and (lower := sorted(present - gone - mine)):
                victim = rng.choice(lower)
                layer.whiteout(victim)
                gone.add(victim)
                continue
            else:
                layer.file(path, content(f"{seed}-{n}-{i}"))
            mine.add(path)
        present = (present - gone) | mine
        layers.append(layer)
    return layers


@pytest.mark.slow
def test_generated_layers_as_umoci_unpacks_them(tmp_path):
    for seed in range(6):
        differential(tmp_path, generated(seed), f"G{seed}")


def test_a_hard_link_cycle_and_links_to_nothing_end(tmp_path):
    """Links that name themselves, each other, or nothing (umoci refuses such a layer): never
    followed, never a hang; the files beside them are read."""
    need("umoci")
    one = Layer()
    one.link("self.so", "self.so")
    one.link("p.so", "q.so")
    one.link("q.so", "p.so")
    one.link("none.so", "missing.so")
    one.link("out.so", "../../etc/passwd")
    one.file("real.so", content("real"))
    lay, tag = build(tmp_path, [one])
    got = reader_view(lay, tag)
    assert list(got["files"]) == ["real.so"]
    assert ", 5 links not followed, 0 hard links followed," in got["notes"][-1], got["notes"]
