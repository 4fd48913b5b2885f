"""Fuzz targets, one per parser, shared by ``tests/hostile/test_fuzz.py`` and ``scripts/fuzz.py``.

A target takes arbitrary bytes. It may raise ``errors.InputError`` (a refused input is fine);
any other exception, and any record or entry whose message says "internal error" (the inventory
turns unexpected exceptions into such records so that a scan goes on), is a bug.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable

from fatbin_inspect.containers import archives, detect, elf, pe
from fatbin_inspect.errors import InputError
from fatbin_inspect.formats import cubin, fatbin, ptx
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.payloads import decode_entry
from fatbin_inspect.inventory.reader import inspect_blob

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures")


class InternalError(AssertionError):
    """The parser swallowed an unexpected exception into an 'internal error' record."""


def _check_message(msg) -> None:
    if msg and "internal error" in msg:
        raise InternalError(msg)


_ENTRY = fatbin.parse_entry(
    Blob(fatbin.ENTRY_HEADER.pack(2, 0x0101, 0x40, 8, 0, 0, 8, 1, 80, 0, 0, 0x11, 0, 8) + b"\0" * 8), 0, 0x48
)[0]  # one plain sm_80 entry the ``names`` target dresses in hostile strings


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


# ------------------------------------------------------- hostile names and nested archives
# What an input may say: terminal escapes (title, clipboard, screen), CR/LF, rich markup, bidi
# overrides and bytes that are not UTF-8. ``hostile_names`` yields them as the seeds of ``names``.
HOSTILE_PIECES = (
    b"\x1b]0;title\x07",
    b"\x1b]52;c;cm0gLXJm\x07",
    b"\x1b[2J\x1b[H",
    b"\r\nfatbin-inspect: forged\r",
    b"[/]",
    b"[link=https://evil.invalid]x[/link]",
    b"[conceal]",
    "\u202egnp.exe\u202c\u2066".encode(),
    b"\xff\xfe\x80",
    b"`<img src=x onerror=alert(1)>`|",
    b"\x9b\x00\x7f",
    b"%0A::error::x",
)
_FORBIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def hostile_names() -> list[bytes]:
    """Seeds for ``names``: each hostile piece alone, and all of them in one name."""
    return [b"lib" + p + b".so" for p in HOSTILE_PIECES] + [b"".join(HOSTILE_PIECES)]


def t_names(data: bytes) -> None:
    """Any bytes as a file, member, identifier, option and kernel name, through the escaping and
    the table renderer: the output holds no raw control, bidi or undecodable character."""
    from fatbin_inspect.formats.model import Fatbin, FileReport, Kernel
    from fatbin_inspect.render import escape
    from fatbin_inspect.render.findings.markdown import cell, code
    from fatbin_inspect.render.inventory_table import render_inventory

    name = os.fsdecode(data[:300])
    for text in (escape.shown(name), escape.utf8(escape.shown(name)), cell(name), code(name)):
        bad = _FORBIDDEN.search(text)
        if bad:
            raise AssertionError(f"raw {bad.group(0)!r} in {text!r}")
    if "\n" in code(name) or "\n" in cell(name):
        raise AssertionError("a line break survived into Markdown")
    e = dataclasses.replace(
        _ENTRY, identifier=name, options=name, kernels=(Kernel(name=name, demangled=name),)
    )
    rec = FileReport(
        path=name + "!" + name, format="elf", size=1, fatbins=(Fatbin(0, 64, name, (e,), "section"),)
    )
    out = render_inventory([rec], color=False, entries="all", kernels=True)
    bad = _FORBIDDEN.search(out)
    if bad:
        raise AssertionError(f"raw {bad.group(0)!r} in the table")


def nested_archives() -> list[bytes]:
    """Seeds for ``nested``: zips, tars and tar.gz inside each other, a small bomb among them."""
    import builders as B

    fb = B.sample_fatbin()
    return [
        B.nested_zip(3, fb),
        B.zip_archive(
            [("a.tar.gz", B.tar_archive([("k.fatbin", fb)], gz=True)), ("b.zip", B.nested_zip(2, fb))]
        ),
        B.tar_archive([("w.whl", B.zip_archive([("pkg/k.fatbin", fb)]))]),
        B.nested_zip_bomb(levels=2, copies=4, leaf_size=1 << 20),
    ]


def t_nested(data: bytes) -> None:
    """Nested archives through the inventory: every level draws on the one budget of the input,
    so no mutation of a nested archive costs more than it (or crashes)."""
    for rec in inspect_blob("fuzz", Blob(data), Options(members="all"), 0):
        _check_message(rec.error.message if rec.error else None)


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
    "names": t_names,
    "nested": t_nested,
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
    "names": [],
    "nested": [],
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
        "names": hostile_names(),
        "nested": nested_archives(),
    }
    return out + synth[target]
