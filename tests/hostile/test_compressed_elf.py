"""Hostile inputs, round three (issue 23), class 7: ELF corners.

A ``.nv_fatbin`` or ``__nv_relfatbin`` section flagged ``SHF_COMPRESSED`` (an ``Elf32/64_Chdr``
with ``ELFCOMPRESS_ZLIB`` or ``ELFCOMPRESS_ZSTD``, then the stream) is inflated within the usual
bounds and listed as the uncompressed file is; an unknown ``ch_type``, a bomb or a stream that
lies about its size is a note naming the section and its offset, never a silent "no device code".

The compressed files are made by real tools from the project's nvcc-built fixtures:
``llvm-objcopy --compress-sections`` (LLVM 19: any section of a relocatable object) and GNU
``objcopy --compress-debug-sections`` on the section renamed ``.debug_*`` and back (an executable,
where llvm-objcopy refuses a section inside a segment). Only the broken headers are patched by
hand. Every run is a child under an address-space limit and a timeout (``hostile_runner``), over
every command x format that reads the file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import zlib

import pytest
from conftest import fixture_path
from hostile_runner import every_command_format, run_many

LLVM_OBJCOPY = shutil.which("llvm-objcopy-19") or shutil.which("llvm-objcopy")
GNU_OBJCOPY = shutil.which("objcopy")
SHF_COMPRESSED = 0x800


def _llvm_compresses() -> bool:
    if LLVM_OBJCOPY is None:
        return False
    out = subprocess.run([LLVM_OBJCOPY, "--help"], capture_output=True, text=True).stdout
    return "--compress-sections" in out


def _gnu_packed(src: str, dst, method: str) -> None:
    """GNU objcopy compresses only ``.debug_*`` sections that are not allocated: rename
    ``.nv_fatbin`` so (dropping SHF_ALLOC), compress, rename back."""
    if GNU_OBJCOPY is None:
        pytest.skip("GNU objcopy not found (apt-get install binutils)")
    tmp1, tmp2 = f"{dst}.1", f"{dst}.2"
    subprocess.run(
        [GNU_OBJCOPY, "--rename-section", ".nv_fatbin=.debug_nvfb,contents,readonly", src, tmp1], check=True
    )
    subprocess.run([GNU_OBJCOPY, f"--compress-debug-sections={method}", tmp1, tmp2], check=True)
    subprocess.run([GNU_OBJCOPY, "--rename-section", ".debug_nvfb=.nv_fatbin", tmp2, str(dst)], check=True)


def _llvm_packed(src: str, dst, section: str, method: str) -> None:
    if not _llvm_compresses():
        pytest.skip("llvm-objcopy with --compress-sections (LLVM >= 19) not found (apt-get install llvm-19)")
    subprocess.run([LLVM_OBJCOPY, "--compress-sections", f"{section}={method}", src, str(dst)], check=True)


def _section(data: bytes, name: str) -> tuple[int, int, int, int]:
    """(header offset, sh_flags, sh_offset, sh_size) of a section of an ELF64 LE file."""
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    strtab = struct.unpack_from("<QQ", data, shoff + shstrndx * shentsize + 0x18)
    names = data[strtab[0] : strtab[0] + strtab[1]]
    for i in range(shnum):
        at = shoff + i * shentsize
        sh_name, _t, flags, _a, off, size = struct.unpack_from("<IIQQQQ", data, at)
        if names[sh_name : names.index(b"\0", sh_name)].decode() == name:
            return at, flags, off, size
    raise AssertionError(f"no section {name}")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """(name, uncompressed original, compressed copy) made by the real tools; each copy's
    fatbin section really is SHF_COMPRESSED."""
    d = tmp_path_factory.mktemp("c7")
    made = []
    for method in ("zlib", "zstd"):
        exe = d / "packed" / f"exe-{method}" / "lib.so"
        exe.parent.mkdir(parents=True)
        _gnu_packed(fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90"), exe, method)
        made.append((f"exe-{method}", fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90"), exe, ".nv_fatbin"))
    for method, src, section in (
        ("zlib", "t17_nonrdc_sm80.o", ".nv_fatbin"),
        ("zstd", "t09_rdc_a_sm80.o", "__nv_relfatbin"),
    ):
        obj = d / "packed" / f"obj-{method}" / "k.o"
        obj.parent.mkdir(parents=True)
        _llvm_packed(fixture_path("bin", src), obj, section, method)
        made.append((f"obj-{method}", fixture_path("bin", src), obj, section))
    out = []
    for name, orig, packed, section in made:
        assert _section(packed.read_bytes(), section)[1] & SHF_COMPRESSED, name
        same = d / "orig" / name / packed.name  # named alike (extract names images by file, scan
        same.parent.mkdir(parents=True)  # rows by folder): only orig/ and packed/ differ
        shutil.copyfile(orig, same)
        out.append((name, same, packed))
    return out


_DROP = {"offset", "payload_offset", "path", "notes", "sha256", "output_dir", "stats", "fingerprint"}


def _facts(obj, top=True):
    """A JSON report without what differs by construction: offsets (the section moved and is
    read after the file's end), the file's own size and path, the scan's byte count and time, and
    the compression note, and finding fingerprints (a hash over the file's bytes)."""
    if isinstance(obj, dict):
        skip = _DROP | ({"size"} if "format" in obj and "fatbins" in obj else set())
        return {k: _facts(v, False) for k, v in obj.items() if k not in skip}
    if isinstance(obj, list):
        return [_facts(v, False) for v in obj]
    return obj


_ARCH = re.compile(r"\b(?:sm|compute)_\d+[af]?\b")


@pytest.mark.slow
def test_compressed_fatbin_sections_list_as_the_uncompressed_file(pairs, tmp_path):
    """Every command x format on the original and on its compressed copy: the same exit code, the
    same architectures, never "no device code"; the JSON reports (list, list --kernels, check,
    scan, gate, extract) equal but for offsets, file size and the note, and extract writes the
    same images."""
    runs, keys = [], []
    for name, orig, packed in pairs:
        for which, path in (("orig", orig), ("packed", packed)):
            for cmd, fmt, argv in every_command_format([path]):
                if cmd == "extract":
                    argv = [a.replace("extracted", f"x-{name}-{which}") for a in argv]
                runs.append(argv)
                keys.append((name, which, cmd, fmt))
            runs.append(["list", "--kernels", "--format", "json", str(path)])
            keys.append((name, which, "list --kernels", "json"))
    results = dict(zip(keys, run_many(tmp_path, runs, mem=1 << 30, timeout=600)))
    for (name, which, cmd, fmt), packed in results.items():
        if which != "packed":
            continue
        orig = results[(name, "orig", cmd, fmt)]
        what = f"{name}: {cmd} --format {fmt}"
        assert packed.code == orig.code, (what, orig, packed)
        text = packed.out.decode().replace(f"{os.sep}packed{os.sep}", f"{os.sep}orig{os.sep}")
        base = orig.out.decode()
        assert set(_ARCH.findall(text)) == set(_ARCH.findall(base)), what
        assert ("no device code" in text) == ("no device code" in base), what
        if fmt in ("json", "jsonl") and cmd in ("list", "list --kernels", "check", "scan", "gate", "extract"):
            lines = [json.loads(x) for x in (text.splitlines() if fmt == "jsonl" else [text])]
            want = [json.loads(x) for x in (base.splitlines() if fmt == "jsonl" else [base])]
            assert _facts(lines) == _facts(want), what
        if cmd == "list" and fmt == "json":
            notes = json.loads(text)["files"][0]["notes"]
            assert any("-compressed (SHF_COMPRESSED)" in n and " at 0x" in n for n in notes), notes
    for name, _orig, _packed in pairs:
        a = sorted(p.name for p in (tmp_path / f"x-{name}-orig").iterdir())
        b = sorted(p.name for p in (tmp_path / f"x-{name}-packed").iterdir())
        assert len(a) == len(b) > 0
        for x, y in zip(a, b):
            assert (tmp_path / f"x-{name}-orig" / x).read_bytes() == (
                tmp_path / f"x-{name}-packed" / y
            ).read_bytes()


def _patched(pairs, tmp_path, name: str, fn) -> str:
    """A copy of the compressed ``obj-zlib`` file with its Chdr (and stream) rewritten by ``fn``."""
    packed = {n: p for n, _o, p in pairs}["obj-zlib"]
    data = bytearray(packed.read_bytes())
    at, _flags, off, size = _section(bytes(data), ".nv_fatbin")
    fn(data, at, off, size)
    out = tmp_path / f"{name}.o"
    out.write_bytes(bytes(data))
    return str(out)


def test_unknown_ch_type_bombs_and_lies_are_notes_naming_the_section(pairs, tmp_path):
    """ch_type 9, and a declared size of 1 TiB (refused before inflating): a note naming the
    section and its offset in list, check and scan, under a 512 MiB address-space limit."""

    def unknown(data, at, off, size):
        struct.pack_into("<I", data, off, 9)

    def huge(data, at, off, size):
        struct.pack_into("<Q", data, off + 8, 1 << 40)

    cases = {
        "unknown": (_patched(pairs, tmp_path, "unknown", unknown), "unknown ch_type 9"),
        "huge": (_patched(pairs, tmp_path, "huge", huge), "budget of this input spent"),
    }
    runs = []
    for path, _why in cases.values():
        runs += [
            ["list", "--format", "json", path],
            ["check", "--gpu", "H100", "--format", "json", path],
            ["scan", "--no-cache", "-j1", "--format", "json", path],
        ]
    results = run_many(tmp_path, runs, mem=512 << 20, timeout=120)
    for i, (_path, why) in enumerate(cases.values()):
        listed, checked, scanned = results[3 * i : 3 * i + 3]
        notes = json.loads(listed.out)["files"][0]["notes"]
        assert any(why in n and ".nv_fatbin at 0x" in n and "not read" in n for n in notes), notes
        assert checked.code in (0, 1) and scanned.code == 0, (checked, scanned)
        assert "no device code" not in listed.stderr


def test_a_stream_longer_than_its_header_says_is_refused_after_one_byte(pairs, tmp_path):
    """A zlib stream of 64 MiB of zeros whose Chdr says 7,280 bytes (the real section's size):
    inflated to at most 7,281 bytes, a note naming the section, under a 256 MiB address-space
    limit."""
    packed = {n: p for n, _o, p in pairs}["obj-zlib"]
    data = bytearray(packed.read_bytes())
    at, _flags, off, size = _section(bytes(data), ".nv_fatbin")
    bomb = zlib.compress(b"\0" * (64 << 20), 9)
    assert len(bomb) < 128 << 10
    # the stream goes at the end of the file; the section header points there
    end = len(data) + (-len(data) % 8)
    data += b"\0" * (end - len(data))
    data += struct.pack("<IIQQ", 1, 0, struct.unpack_from("<Q", data, off + 8)[0], 8) + bomb
    struct.pack_into("<QQ", data, at + 0x18, end, 24 + len(bomb))
    path = tmp_path / "lies.o"
    path.write_bytes(bytes(data))
    (listed,) = run_many(tmp_path, [["list", "--format", "json", str(path)]], mem=256 << 20, timeout=60)
    notes = json.loads(listed.out)["files"][0]["notes"]
    assert any("decoded to" in n and f".nv_fatbin at {end:#x}" in n for n in notes), notes


def test_a_static_archive_of_compressed_objects_is_scanned(pairs, tmp_path):
    """scan's quick test (no fatbin magic in the clear: no device code) looks into an ``ar``
    member's compressed sections: a ``.a`` made by GNU ar of the compressed objects is scanned
    and listed as the ``.a`` of the originals."""
    ar = shutil.which("ar")
    if ar is None:
        pytest.skip("GNU ar not found (apt-get install binutils)")
    objs = [(o, p) for n, o, p in pairs if n.startswith("obj-")]
    subprocess.run([ar, "rcs", str(tmp_path / "orig.a"), *[str(o) for o, _p in objs]], check=True)
    subprocess.run([ar, "rcs", str(tmp_path / "packed.a"), *[str(p) for _o, p in objs]], check=True)
    runs = [
        ["scan", str(tmp_path / "orig.a"), "--no-cache", "-j1", "--format", "json"],
        ["scan", str(tmp_path / "packed.a"), "--no-cache", "-j1", "--format", "json"],
    ]
    orig, packed = run_many(tmp_path, runs, mem=1 << 30, timeout=120)
    want = json.loads(orig.out)["files"]
    got = json.loads(packed.out)["files"]
    assert len(got) == len(want) > 1, (orig, packed)
    assert _facts(got) == _facts(want)
