"""Fatbin edge cases synthesized in Python: every flag, kind, padding and gap rule of docs/format.md §1-2."""

import struct

import builders as B
import pytest

from fatbin_inspect.errors import CorruptError, TruncatedError
from fatbin_inspect.formats import fatbin as F
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path


def parse(data: bytes):
    return F.parse_fatbin(Blob(data), 0)


@pytest.mark.parametrize(
    "flags,host,debug",
    [
        (B.F_64 | B.F_LINUX, "linux", False),
        (B.F_64 | B.F_WINDOWS, "windows", False),
        (B.F_64 | B.F_MAC, "mac", False),
        (B.F_64 | B.F_LINUX | B.F_DEBUG, "linux", True),
        (B.F_64, None, False),
    ],
)
def test_host_and_debug_flags(flags, host, debug):
    fb = parse(B.fatbin([B.entry(B.KIND_ELF, 80, B.cubin(80), flags=flags)]))
    (e,) = fb.entries
    assert (e.host, e.debug) == (host, debug)


@pytest.mark.parametrize(
    "kind,flags,arch",
    [
        (B.KIND_ELF, 0, "sm_100"),
        (B.KIND_ELF, B.F_A, "sm_100a"),
        (B.KIND_ELF, B.F_F, "sm_100f"),
        (B.KIND_PTX, 0, "compute_100"),
        (B.KIND_PTX, B.F_A, "compute_100a"),
        (B.KIND_PTX, B.F_F, "compute_100f"),
        (B.KIND_LTO, B.F_LTO, "lto_100"),
        (B.KIND_RELOC_PTX, 0, "compute_100"),
        (0x99, 0, "arch_100"),
    ],
)
def test_arch_names_from_header(kind, flags, arch):
    payload = B.cubin(100) if kind == B.KIND_ELF else B.ptx_text(target="sm_100")
    fb = parse(B.fatbin([B.entry(kind, 100, payload, flags=B.F_64 | B.F_LINUX | flags)]))
    assert fb.entries[0].arch == arch
    assert fb.entries[0].relocatable_ptx == (kind == B.KIND_RELOC_PTX)


def test_unknown_kind_is_listed_and_walk_continues():
    fb = parse(B.fatbin([B.entry(0x99, 80, b"opaque!!"), B.entry(B.KIND_ELF, 80, B.cubin(80))]))
    assert [e.kind for e in fb.entries] == ["unknown", "sass"]


@pytest.mark.parametrize("method", ["zstd", "lz4"])
def test_compressed_sizes_and_decoding(tmp_path, method):
    ptx = B.ptx_text((8, 4), "sm_90", ["_Z1av", "_Z1bv"])
    data = B.fatbin([B.entry(B.KIND_PTX, 90, ptx, code=(8, 4), compress=method)])
    (e,) = parse(data).entries
    assert e.compression == method and e.size == len(ptx) and e.stored_size < e.size + 8
    p = tmp_path / "x.fatbin"
    p.write_bytes(data)
    (r,) = inspect_path(str(p), Options(kernels=True))
    assert r.entries[0].ptx_isa == "8.4" and [k.name for k in r.entries[0].kernels] == ["_Z1av", "_Z1bv"]


def test_lz4_needs_slicing_to_compressed_size(tmp_path):
    # payload padding after the LZ4 block must not reach the decoder
    ptx = B.ptx_text(kernels=["k" * 37])
    data = B.fatbin([B.entry(B.KIND_PTX, 80, ptx, compress="lz4")])
    p = tmp_path / "x.fatbin"
    p.write_bytes(data)
    (r,) = inspect_path(str(p), Options(kernels=True))
    assert r.entries[0].decode_error is None


def test_identifier_options_and_big_header():
    (e,) = parse(
        B.fatbin(
            [
                B.entry(
                    B.KIND_PTX,
                    80,
                    B.ptx_text(),
                    identifier="k.cu",
                    options=" -g --dont-merge-basicblocks ",
                    header_size=0x80,
                )
            ]
        )
    ).entries
    assert e.identifier == "k.cu" and e.options == "-g --dont-merge-basicblocks" and e.header_size == 0x80
    assert e.payload_offset == e.offset + 0x80


def test_empty_fatbin():
    fb = parse(B.fatbin([]))
    assert fb.size == 0 and fb.entries == ()


def test_fatbins_back_to_back_with_zero_gaps_and_trailing_zeros(tmp_path):
    one = B.sample_fatbin()
    section = one + b"\0" * 8 + one + b"\0" * 24 + B.fatbin([]) + b"\0" * 40
    p = tmp_path / "lib.so"
    p.write_bytes(B.host_elf([(".nv_fatbin", section)]))
    (r,) = inspect_path(str(p))
    assert r.error is None
    assert [len(fb.entries) for fb in r.fatbins] == [2, 2, 0]


def test_hidden_fatbins_tagged_with_section_and_false_hits_rejected(tmp_path):
    movabs = b"\x48\xba" + F.MAGIC_BYTES + b"\x01\x00\x10\x00" + b"\x90" * 32  # code that checks the magic
    p = tmp_path / "lib.so"
    p.write_bytes(
        B.host_elf(
            [
                (".text", movabs * 3),
                (".cask_resource", b"\1" * 24 + B.sample_fatbin()),
                (".nv_fatbin", B.sample_fatbin()),
            ]
        )
    )
    (r,) = inspect_path(str(p))
    assert [(fb.section, fb.found_by) for fb in r.fatbins] == [
        (".cask_resource", "scan"),
        (".nv_fatbin", "section"),
    ]
    (r,) = inspect_path(str(p), Options(scan_hidden=False))
    assert [fb.section for fb in r.fatbins] == [".nv_fatbin"]


def test_truncated_fatbin_in_section_is_an_error_with_offset(tmp_path):
    fb = B.sample_fatbin()
    bad = fb[:16] + fb[16:40]  # header claims more than the section holds
    p = tmp_path / "lib.so"
    p.write_bytes(B.host_elf([(".nv_fatbin", bad)]))
    (r,) = inspect_path(str(p))
    assert r.error is not None and r.error.offset is not None and "fatbin" in r.error.message


def test_entry_running_past_fatbin_end():
    good = B.sample_fatbin()
    body = bytearray(good)
    struct.pack_into("<Q", body, 8, 64 + 8)  # fat_size covers only part of the first entry
    with pytest.raises(TruncatedError):
        F.parse_fatbin(Blob(bytes(body[: 16 + 72])), 0)


def test_bad_entry_version():
    body = bytearray(B.sample_fatbin())
    struct.pack_into("<H", body, 18, 0x0202)
    with pytest.raises(CorruptError):
        parse(bytes(body))


def test_cubin_v7_arch_specific_bit_and_v8_compat_section():
    from fatbin_inspect.formats.cubin import parse_cubin

    info, _ = parse_cubin(B.cubin(90, abi=7, arch_specific=True))
    assert info.elf_abi == 7 and info.sm == 90 and info.arch_specific
    info, _ = parse_cubin(B.cubin(90, abi=8, arch_specific=True))
    assert info.elf_abi == 8 and info.sm == 90 and info.arch_specific
    info, ks = parse_cubin(B.cubin(120, abi=8, kernels=["_Z1av", "_Z1bv"], e_type=1), kernels=True)
    assert info.elf_type == "rel" and not info.arch_specific and [k.name for k in ks] == ["_Z1av", "_Z1bv"]


def test_wheel_members_read_in_memory(tmp_path):
    so = B.host_elf([(".nv_fatbin", B.sample_fatbin())])
    whl = B.zip_archive(
        [
            ("pkg/_ext.cpython-311-x86_64-linux-gnu.so", so),
            ("pkg/__init__.py", b""),
            ("pkg/lib/libk.so.12", so),
        ]
    )
    p = tmp_path / "pkg-1.0-py3-none-any.whl"
    p.write_bytes(whl)
    reports = list(inspect_path(str(p)))
    assert [r.path.split("!")[-1] for r in reports] == [
        str(p).split("!")[-1],
        "pkg/_ext.cpython-311-x86_64-linux-gnu.so",
        "pkg/lib/libk.so.12",
    ]
    assert reports[0].format == "zip" and all(len(r.entries) == 2 for r in reports[1:])


def test_blob_find_matches_bytes_find_in_windows(tmp_path):
    """``Blob.find`` (a regular expression for 2-4 byte needles, ``find`` otherwise) gives what
    ``bytes.find`` gives, relative to the window, over bytes and over a mapping."""
    import random

    from fatbin_inspect.formats.binio import open_blob

    rng = random.Random(7)
    data = bytes(rng.choice(b"\x50\xed\x55\xba\x00.") for _ in range(4000))
    (tmp_path / "f").write_bytes(data)
    for outer in (Blob(data), open_blob(str(tmp_path / "f"))):
        for base, size in ((0, len(data)), (17, 3000), (1001, 5)):
            blob = outer.view(base, size)
            window = data[base : base + size]
            for sub in (F.MAGIC_BYTES, b"\xba", b"\x55\xba", b"\xed\x55\xba", b"P\xedU\xba\x00", b"zz"):
                for start, end in ((0, None), (3, 900), (size - 2, None), (50, 40)):
                    want = window.find(sub, start, size if end is None else min(end, size))
                    assert blob.find(sub, start, end) == want, (base, sub, start, end)
