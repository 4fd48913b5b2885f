"""Fat binary parser (docs/format.md §1.3, §1.4, §2).

Layout::

    fatbin := FatHeader(16) Entry*          entries fill exactly fat_size bytes, no index
    FatHeader := u32 magic 0xBA55ED50 | u16 version=1 | u16 header_size=16 | u64 fat_size
    Entry := EntryHeader(header_size >= 0x40, multiple of 8) Payload(payload_size)

Entry header (0x40 fixed bytes, little-endian)::

    00 u16 kind (1 PTX, 2 ELF, 8 LTO-IR, 0x40 relocatable PTX, 0x80 Tile IR)   02 u16 version 0x0101
    04 u32 header_size      08 u64 payload_size (incl. padding to 8)
    10 u32 compressed_size  14 u32 options descriptor offset ({u32 off, u32 len}, 0 = none)
    18 u16 code minor       1A u16 code major (PTX: ISA; ELF: (1, EI_ABIVERSION); Tile IR: 0,
                            maj<<8|min of its bytecode, 0x0D05 = 13.5)
    1C u32 arch (major*10+minor, decimal)  20 u32 identifier offset  24 u32 identifier length
    28 u64 flags            30 u64 reserved (opaque, non-zero for LTO-IR)
    38 u64 uncompressed_size

Several fatbins sit back to back in a section; padding between them is zero bytes (ELF: none,
PE: to 16, cuFFT ``.ldata``: to 32). ``0x466243B1`` is the registration *wrapper* magic, not a
fatbin: fatbins are found by walking data, never through the wrappers (docs/format.md §1.2).

Tile IR (nvcc 13.3+ ``-enable-tile``): a second fatbin per object holds the Tile code, either as
kind 0x80 entries whose payload (zstd like PTX) starts ``\x7fTileIR\0`` + major, minor, or as
ordinary kind-2 cubins that tileiras built (``-arch sm_100a`` in their tkinfo, a ``.nv.host``
section). Observed with nvcc 13.5.37 and nvFatbin 13.5 (``nvFatbinAddTileIR``).
"""

from __future__ import annotations

import struct

from fatbin_inspect.errors import CorruptError, InputError, LimitExceeded, TruncatedError
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.formats.model import (
    KIND_LTOIR,
    KIND_PTX,
    KIND_SASS,
    KIND_TILE,
    KIND_UNKNOWN,
    Entry,
    Fatbin,
    fast_entry,
)

MAGIC = 0xBA55ED50
MAGIC_BYTES = struct.pack("<I", MAGIC)
WRAPPER_MAGIC = 0x466243B1

FAT_HEADER = struct.Struct("<IHHQ")
ENTRY_HEADER = struct.Struct("<HHIQIIHHIIIQQQ")
OPTIONS_DESC = struct.Struct("<II")
assert FAT_HEADER.size == 16 and ENTRY_HEADER.size == 0x40

KIND_CODES = {1: KIND_PTX, 2: KIND_SASS, 8: KIND_LTOIR, 0x40: KIND_PTX, 0x80: KIND_TILE}
ENTRY_VERSION = 0x0101

FLAG_64BIT = 0x1
FLAG_DEBUG = 0x2
FLAG_HOST_LINUX = 0x10
FLAG_HOST_MAC = 0x20
FLAG_HOST_WINDOWS = 0x40
FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
FLAG_LTO = 0x10000  # set on every LTO-IR entry; payload is not a plain LZ4/zstd stream
FLAG_ARCH_SPECIFIC = 0x100000  # `a`
FLAG_FAMILY_SPECIFIC = 0x200000  # `f`

MAX_ENTRIES = 1 << 16  # per fatbin; real ones hold tens
MAX_ERRORS = 16  # errors kept per walked region; the rest are counted in one more error
RELEASE_EVERY = 16 << 20


def compression_of(flags: int) -> str:
    if flags & FLAG_ZSTD:
        return "zstd"
    if flags & FLAG_LZ4:
        return "lz4"
    return "none"


def host_of(flags: int) -> str | None:
    if flags & FLAG_HOST_WINDOWS:
        return "windows"
    if flags & FLAG_HOST_MAC:
        return "mac"
    if flags & FLAG_HOST_LINUX:
        return "linux"
    return None


def _header_string(blob: Blob, entry_off: int, header_size: int, off: int, length: int) -> str | None:
    """A string stored in the entry header extension; None when absent or out of bounds."""
    if off == 0 or length == 0:
        return None
    if off < ENTRY_HEADER.size or off + length > header_size:
        raise CorruptError(
            f"entry string [{off:#x}+{length}] lies outside the {header_size:#x}-byte header", entry_off
        )
    raw = blob.read(entry_off + off, length, "entry string")
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def parse_entry(blob: Blob, off: int, end: int) -> tuple[Entry, int]:
    """Parse the entry header at ``off`` (must end by ``end``); return it and the next offset."""
    (
        kind_code,
        version,
        header_size,
        payload_size,
        compressed_size,
        options_desc,
        code_minor,
        code_major,
        arch,
        ident_off,
        ident_len,
        flags,
        _reserved,
        uncompressed_size,
    ) = blob.unpack(ENTRY_HEADER, off, "fatbin entry header")
    if version != ENTRY_VERSION:
        raise CorruptError(f"fatbin entry version {version:#x}, expected 0x0101", off)
    if header_size < ENTRY_HEADER.size or header_size % 8:
        raise CorruptError(
            f"fatbin entry header size {header_size:#x} is not >= 0x40 and a multiple of 8", off
        )
    if off + header_size + payload_size > end:
        raise TruncatedError(
            f"fatbin entry of {header_size + payload_size} bytes runs past its fatbin end {end:#x}", off
        )
    kind = KIND_CODES.get(kind_code, KIND_UNKNOWN)
    compression = compression_of(flags)
    if compression != "none" and kind != KIND_LTOIR:
        if compressed_size > payload_size:
            raise CorruptError(f"compressed size {compressed_size} exceeds payload size {payload_size}", off)
        stored, size = compressed_size, uncompressed_size
    else:
        stored = size = payload_size
        if kind == KIND_LTOIR and compressed_size:
            stored = compressed_size
            size = uncompressed_size or payload_size
    identifier = _header_string(blob, off, header_size, ident_off, ident_len)
    options = None
    if options_desc:
        if options_desc + OPTIONS_DESC.size > header_size:
            raise CorruptError(f"options descriptor at {options_desc:#x} lies outside the header", off)
        opt_off, opt_len = blob.unpack(OPTIONS_DESC, off + options_desc, "options descriptor")
        if kind != KIND_SASS:  # for ELF >= sm_100 this is the binary .nv.compat blob, not text
            options = _header_string(blob, off, header_size, opt_off, opt_len)
            options = options.strip() if options else None
        elif opt_off + opt_len > header_size:
            raise CorruptError("compat blob lies outside the entry header", off)
    variant = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY_SPECIFIC else ""
    return fast_entry(
        offset=off,
        kind=kind,
        kind_code=kind_code,
        sm=arch,
        variant=variant,
        compression=compression,
        stored_size=stored,
        size=size,
        flags=flags,
        code_version=(code_major, code_minor),
        header_size=header_size,
        payload_offset=off + header_size,
        host=host_of(flags),
        debug=bool(flags & FLAG_DEBUG),
        identifier=identifier,
        options=options,
        relocatable_ptx=kind_code == 0x40,
    ), off + header_size + payload_size


class _Budget:
    """Entry headers one ``walk`` may parse. Fatbin headers can nest inside earlier entries'
    payloads and chain into the same entries, so retrying after every failed parse was quadratic
    (a 1.6 MB file ran for minutes); successful parses never overlap and cost at most span/64."""

    __slots__ = ("left",)

    def __init__(self, span: int):
        self.left = 2 * (span // ENTRY_HEADER.size) + 1024

    def take(self, off: int) -> None:
        self.left -= 1
        if self.left < 0:
            raise LimitExceeded(
                "fatbin headers chain into each other: stopped after parsing "
                "twice as many entry headers as the bytes can hold",
                off,
            )


def parse_fatbin(
    blob: Blob,
    off: int,
    limit: int | None = None,
    section: str | None = None,
    found_by: str = "section",
    budget: _Budget | None = None,
) -> Fatbin:
    """Parse one fatbin whose header is at ``off``; it may not extend past ``limit``."""
    limit = blob.size if limit is None else limit
    magic, version, header_size, fat_size = blob.unpack(FAT_HEADER, off, "fatbin header")
    if magic != MAGIC:
        raise CorruptError(f"no fatbin magic (found {magic:#010x})", off)
    if version != 1 or header_size != FAT_HEADER.size:
        raise CorruptError(f"fatbin header version {version} / size {header_size}, expected 1 / 16", off)
    start = off + header_size
    end = start + fat_size
    if end > limit:
        raise TruncatedError(f"fatbin declares {fat_size} bytes but only {max(0, limit - start)} remain", off)
    entries: list[Entry] = []
    pos = start
    while pos < end:
        if end - pos < ENTRY_HEADER.size:
            if blob.read(pos, end - pos).strip(b"\0"):
                raise CorruptError(f"{end - pos} trailing bytes after the last entry are not padding", pos)
            break
        if budget is not None:
            budget.take(pos)
        entry, pos = parse_entry(blob, pos, end)
        entries.append(entry)
        if len(entries) > MAX_ENTRIES:
            raise CorruptError(f"more than {MAX_ENTRIES} entries in one fatbin", off)
    return Fatbin(offset=off, size=fat_size, section=section, entries=tuple(entries), found_by=found_by)


def plausible_at(blob: Blob, off: int) -> bool:
    """The magic-scan plausibility test of docs/format.md §1.4 (rejects x86 ``movabs`` immediates)."""
    try:
        magic, version, header_size, fat_size = blob.unpack(FAT_HEADER, off)
    except TruncatedError:
        return False
    if magic != MAGIC or version != 1 or header_size != 16 or fat_size == 0 or fat_size % 8:
        return False
    if off + 16 + fat_size > blob.size or fat_size < ENTRY_HEADER.size:
        return False
    kind, ev, ehs = struct.unpack_from("<HHI", blob.buf, blob.base + off + 16)
    return kind in KIND_CODES and ev == ENTRY_VERSION and ehs >= 0x40 and ehs % 8 == 0


def walk(
    blob: Blob,
    start: int,
    end: int,
    section: str | None,
    strict: bool,
    found_by: str = "section",
    limit: int | None = None,
) -> tuple[list[Fatbin], list[InputError]]:
    """Find every fatbin in ``[start, end)``.

    ``strict`` (a fatbin section): every magic starts a fatbin, and one that does not parse is an
    error. Otherwise (magic scan of other bytes) a hit must pass ``plausible_at`` and a failure is
    silently a false hit. Gaps of zero bytes or other data between fatbins are skipped.
    Fatbins start in ``[start, end)`` and may extend to ``limit`` (default ``end``): every magic
    that starts before ``end`` is looked at, its header read up to ``limit``, so walking a range
    in pieces (the magic scan's chunks, a split file's slices) finds what one walk finds.
    A ``LimitExceeded`` (work budget spent) ends the walk and is returned in both modes.
    """
    limit = end if limit is None else limit
    search_end = max(end, min(end + len(MAGIC_BYTES) - 1, limit))  # a magic across ``end`` too
    budget = _Budget(max(0, limit - start))
    released = start
    fatbins: list[Fatbin] = []
    errors: list[InputError] = []
    dropped = 0  # errors past MAX_ERRORS, counted, not kept (each held its traceback's frames)
    pos = start
    while pos < end and pos + FAT_HEADER.size <= limit:
        hit = blob.find(MAGIC_BYTES, pos, search_end)
        if hit < 0 or hit >= end:
            break
        if not strict and not plausible_at(blob, hit):
            pos = hit + 1
            continue
        try:
            fb = parse_fatbin(blob, hit, limit, section, found_by, budget)
        except LimitExceeded as exc:
            errors.append(exc)
            break
        except InputError as exc:
            if strict:
                if len(errors) < MAX_ERRORS:
                    errors.append(exc.with_traceback(None))
                else:
                    dropped += 1
            pos = hit + 4
            continue
        fatbins.append(fb)
        pos = hit + FAT_HEADER.size + fb.size
        if pos - released > RELEASE_EVERY:  # keep the resident set flat on 500 MB sections
            blob.release(released, pos)
            released = pos
    cut = blob.find(MAGIC_BYTES, pos, end) if strict and pos < end else -1
    if cut >= 0:  # a magic too close to the end for its 16-byte header
        errors.append(TruncatedError("fatbin header cut off by the end of its section", cut))
    if dropped:
        errors.append(LimitExceeded(f"{dropped} more fatbin errors in this region not kept", start))
    return fatbins, errors
