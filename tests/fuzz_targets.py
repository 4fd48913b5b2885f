"""Fuzz targets, one per parser, shared by ``tests/test_fuzz.py`` and ``scripts/fuzz.py``.

A target takes arbitrary bytes. It may raise ``errors.InputError`` (a refused input is fine);
any other exception, and any record or entry whose message says "internal error" (the inventory
turns unexpected exceptions into such records so that a scan goes on), is a bug.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from fatbin_inspect.containers import archives, detect, elf, pe
from fatbin_inspect.errors import InputError
from fatbin_inspect.formats import cubin, fatbin, ptx
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.inventory.core import Options, decode_entry, inspect_blob

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures")


class InternalError(AssertionError):
    """The parser swallowed an unexpected exception into an 'internal error' record."""


def _check_message(msg) -> None:
    if msg and "internal error" in msg:
        raise InternalError(msg)


def _check_entries(blob: Blob, fatbins) -> None:
    for fb in fatbins:
        for e in fb.entries:
            _check_message(decode_entry(blob, e, kernels=True).decode_error)


def t_fatbin(data: bytes) -> None:
    blob = Blob(data)
    found, _errors = fatbin.walk(blob, 0, len(data), None, strict=True)
    scanned, _ = fatbin.walk(blob, 0, len(data), None, strict=False, found_by="scan")
    _check_entries(blob, found + scanned)


def t_cubin(data: bytes) -> None:
    cubin.is_cubin(data[:64])
    cubin.parse_cubin(data, kernels=True, resources=True)


def t_ptx(data: bytes) -> None:
    ptx.looks_like_ptx(data)
    hdr = ptx.parse_header(data)
    ptx.kernels(data)
    if hdr.target:
        ptx.target_arch(hdr.target)


def t_elf(data: bytes) -> None:
    elf.layout(Blob(data))


def t_pe(data: bytes) -> None:
    _refused_ok(pe.coff_layout, Blob(data))
    pe.layout(Blob(data))


def _refused_ok(fn, *args) -> None:
    """Run a second parse of the same bytes where refusing the input is the expected outcome."""
    try:
        fn(*args)
    except InputError:
        pass


def t_ar(data: bytes) -> None:
    for m in archives.ar_members(Blob(data)):
        if m.blob is not None:
            m.blob.head(64)


def t_zip(data: bytes) -> None:
    for m in archives.zip_members(Blob(data), all_members=True):
        if m.blob is not None:
            m.blob.head(64)


def t_tar(data: bytes) -> None:
    _tar(data, data[:2] == b"\x1f\x8b")  # as the inventory decides


def _tar(data: bytes, compressed: bool) -> None:
    for m in archives.tar_members(Blob(data), compressed=compressed):
        if m.blob is not None:
            m.blob.head(64)


def t_inventory(data: bytes) -> None:
    """The whole pipeline as ``list --kernels`` runs it (detect -> container -> parsers)."""
    detect(data[:512])
    for rec in inspect_blob("fuzz", Blob(data), Options(kernels=True, details=True, members="all"), 0):
        _check_message(rec.error.message if rec.error else None)
        for note in rec.notes:
            _check_message(note)
        for e in rec.entries:
            _check_message(e.decode_error)


TARGETS: dict[str, Callable[[bytes], None]] = {
    "fatbin": t_fatbin,
    "cubin": t_cubin,
    "ptx": t_ptx,
    "elf": t_elf,
    "pe": t_pe,
    "ar": t_ar,
    "zip": t_zip,
    "tar": t_tar,
    "inventory": t_inventory,
}

# Seeds per target: fixture files (names relative to fixtures/bin) plus synthesized bytes.
SEED_FILES = {
    "fatbin": [
        "t13_raw_sm75_c75_sm120.fatbin",
        "o2_sm35_sm50_c50.fatbin",
        "t18_lto80_sm90.fatbin",
        "t08_exe_mode_speed_lz4",
    ],
    "cubin": ["t14_sm90a.cubin", "o1_sm35_ptxas118.cubin", "o3_sm100a_ptxas129.cubin"],
    "ptx": ["t15_c90a.ptx"],
    "elf": ["t01_exe_sm80", "t09_rdc_a_sm80.o", "t12_lib_sm86_c89.so"],
    "pe": ["pe_nv_fatb_2fatbins.dll"],
    "ar": ["t10_rdc_lib_sm80.a"],
    "zip": [],
    "tar": [],
    "inventory": [
        "t13_raw_sm75_c75_sm120.fatbin",
        "t14_sm90a.cubin",
        "t15_c90a.ptx",
        "t09_rdc_a_sm80.o",
        "t10_rdc_lib_sm80.a",
        "t08_exe_mode_speed_lz4",
    ],
}


def _read(name: str) -> bytes:
    with open(os.path.join(FIXTURES, "bin", name), "rb") as fh:
        return fh.read()


def seeds(target: str) -> list[bytes]:
    """Seed inputs for ``target``; fixtures that are missing (still being built) are left out."""
    import builders as B

    out = [_read(n) for n in SEED_FILES[target] if os.path.exists(os.path.join(FIXTURES, "bin", n))]
    small = B.fatbin(
        [
            B.entry(B.KIND_ELF, 80, B.cubin(80, ["_Z1kv"])),
            B.entry(B.KIND_PTX, 80, B.ptx_text(), code=(9, 0), compress="lz4"),
            B.entry(
                B.KIND_PTX,
                90,
                B.ptx_text((9, 0), "sm_90a"),
                code=(9, 0),
                compress="zstd",
                identifier="k.cu",
                options="-O3",
            ),
        ]
    )
    synth = {
        "fatbin": [small],
        "cubin": [B.cubin(90, ["_Z1kv", "_Z1jv"], arch_specific=True), B.cubin(75, abi=7)],
        "ptx": [B.ptx_text()],
        "elf": [B.host_elf([(".nv_fatbin", small)])],
        "pe": [],
        "ar": [
            B.ar_archive(
                [("a.o", B.host_elf([(".nv_fatbin", small)])), ("a_rather_long_member_name.o", b"xx")]
            )
        ],
        "zip": [
            B.zip_archive([("pkg/lib.so", B.host_elf([(".nv_fatbin", small)])), ("pkg/k.fatbin", small)]),
            B.zip_archive([("pkg/k.cubin", B.cubin(80))], stored=True),
        ],
        "tar": [B.tar_archive([("lib/k.fatbin", small)]), B.tar_archive([("lib/k.fatbin", small)], gz=True)],
        "inventory": [small, B.zip_archive([("pkg/k.fatbin", small)])],
    }
    return out + synth[target]
