"""PE/COFF: Windows DLLs/EXEs (``MZ``) and MSVC ``.obj`` files.

The section table is read here with bounds checks (the header check that must pass before lief
sees a file); lief then reads the import table, which names ``cudart64_NN.dll``. In DLLs the
fatbin section is ``.nv_fatb`` (the 8-character cut of ``.nv_fatbin``) with 16-byte aligned,
zero-padded fatbins; ``-rdc`` code sits in ``__nv_rel``. Offsets are file offsets
(PointerToRawData), so no RVA arithmetic is needed to walk the data; only a section's
``min(VirtualSize, SizeOfRawData)`` bytes are real.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

from fatbin_inspect.containers.layout import Layout, Region, cuda_needs
from fatbin_inspect.errors import CorruptError, InputError
from fatbin_inspect.formats.binio import Blob

_COFF = struct.Struct("<HHIIIHH")
_SECTION = struct.Struct("<8sIIIIIIHHI")
FATBIN_SECTIONS = (".nv_fatb", "__nv_rel", ".nv_fatbin", "__nv_relfatbin")
IMAGE_SCN_CNT_CODE, IMAGE_SCN_MEM_EXECUTE = 0x20, 0x20000000
MAX_SECTIONS = 96 * 1024  # the PE limit is 96, COFF objects allow up to 65279 (bigobj: more)


_OPT_DIRS = {0x10B: 92, 0x20B: 108}  # optional-header magic -> offset of NumberOfRvaAndSizes
_IMPORT_DIR = 1


def _sections(blob: Blob, coff_off: int, string_table: bool) -> tuple[int, tuple[Region, ...]]:
    machine, nsec, _ts, symptr, nsyms, opt_size, _ch = blob.unpack(_COFF, coff_off, "COFF header")
    if nsec > MAX_SECTIONS:
        raise CorruptError(f"COFF header declares {nsec} sections", coff_off)
    table = coff_off + _COFF.size + opt_size
    strtab_off = symptr + nsyms * 18
    regions = []
    for i in range(nsec):
        (raw_name, vsize, _va, raw_size, raw_ptr, *_rest, characteristics) = blob.unpack(
            _SECTION, table + i * _SECTION.size, "section header"
        )
        name = raw_name.rstrip(b"\0").decode("latin-1")
        if string_table and name.startswith("/") and name[1:].isascii() and name[1:].isdigit():
            o = strtab_off + int(name[1:])
            tail = blob.read(o, min(256, max(0, blob.size - o)), "long section name")
            name = tail.split(b"\0", 1)[0].decode("latin-1")
        size = min(vsize, raw_size) if vsize and not string_table else raw_size
        if raw_ptr == 0 or size == 0:
            continue
        if raw_ptr + size > blob.size:
            raise CorruptError(
                f"section {name} [{raw_ptr:#x}+{size:#x}] runs past the end of the file", raw_ptr
            )
        code = bool(characteristics & (IMAGE_SCN_CNT_CODE | IMAGE_SCN_MEM_EXECUTE))
        regions.append(Region(name, raw_ptr, raw_ptr + size, name in FATBIN_SECTIONS, not code))
    return machine, tuple(regions)


class _SectionSpan(NamedTuple):
    va: int  # VirtualAddress
    vsize: int  # VirtualSize
    raw_size: int  # SizeOfRawData
    raw_ptr: int  # PointerToRawData


def _section_spans(blob: Blob, coff_off: int) -> list[_SectionSpan]:
    """Each section's span (the header stores VirtualSize first, then VirtualAddress)."""
    _machine, nsec, _ts, _symptr, _nsyms, opt_size, _ch = blob.unpack(_COFF, coff_off)
    table = coff_off + _COFF.size + opt_size
    spans: list[_SectionSpan] = []
    for i in range(nsec):
        _name, vsize, va, raw_size, raw_ptr, *_rest = blob.unpack(_SECTION, table + i * _SECTION.size)
        spans.append(_SectionSpan(va, vsize, raw_size, raw_ptr))
    return spans


def _import_table_sane(blob: Blob, coff_off: int) -> bool:
    """The header check lief must pass: an optional header of a known kind whose import
    directory lies inside a section with file bytes. False: the file imports nothing."""
    opt = coff_off + _COFF.size
    opt_size = blob.unpack(_COFF, coff_off)[5]
    (magic,) = blob.unpack(struct.Struct("<H"), opt, "optional header")
    count_at = _OPT_DIRS.get(magic)
    if count_at is None:
        raise CorruptError(f"PE optional header magic {magic:#x} is neither PE32 nor PE32+", opt)
    dirs_at = count_at + 4
    if opt_size < dirs_at + 8 * (_IMPORT_DIR + 1):
        return False
    (ndirs,) = blob.unpack(struct.Struct("<I"), opt + count_at, "NumberOfRvaAndSizes")
    if ndirs <= _IMPORT_DIR:
        return False
    rva, size = blob.unpack(struct.Struct("<II"), opt + dirs_at + 8 * _IMPORT_DIR, "import directory")
    if rva == 0 or size == 0:
        return False
    for va, vsize, raw_size, raw_ptr in _section_spans(blob, coff_off):
        if va <= rva < va + max(vsize, raw_size):
            if rva - va >= raw_size or raw_ptr + raw_size > blob.size:
                raise CorruptError(f"import directory RVA {rva:#x} has no bytes in the file", opt)
            return True
    raise CorruptError(f"import directory RVA {rva:#x} lies in no section", opt)


def layout(blob: Blob) -> Layout:
    (pe_off,) = blob.unpack(struct.Struct("<I"), 0x3C, "e_lfanew")
    if blob.read(pe_off, 4, "PE signature") != b"PE\0\0":
        raise CorruptError("MZ file without a PE signature (DOS program?)", pe_off)
    _machine, regions = _sections(blob, pe_off + 4, string_table=False)
    try:
        names = _imports(blob) if _import_table_sane(blob, pe_off + 4) else ()
    except InputError as exc:  # the fatbins found in the sections stay listed
        return Layout("pe", regions, (), errors=(exc,))
    return Layout("pe", regions, cuda_needs(names))


def coff_layout(blob: Blob) -> Layout:
    _machine, regions = _sections(blob, 0, string_table=True)
    return Layout("coff", regions)


def _text(name: str | bytes) -> str:
    """lief gives a name it cannot decode as UTF-8 as bytes; each byte is kept as one character."""
    return name if isinstance(name, str) else name.decode("latin-1")


def _imports(blob: Blob) -> Sequence[str]:
    """Imported DLL names via lief (only called after the header checks above passed).
    A lief failure raises CorruptError: the caller keeps the fatbins and records the error."""
    try:
        import lief
    except ImportError:  # pragma: no cover - lief is a hard dependency; keep working without it
        return ()
    try:
        lief.logging.disable()
        cfg = lief.PE.ParserConfig()
        for attr in ("parse_signature", "parse_exports", "parse_rsrc", "parse_reloc"):
            if hasattr(cfg, attr):
                setattr(cfg, attr, False)
        binary = lief.PE.parse(blob.stream(), cfg)
        names = None if binary is None else [_text(imp.name) for imp in binary.imports]
    except Exception as exc:
        raise CorruptError(f"import table unreadable (lief: {type(exc).__name__}: {exc})") from None
    if names is None:
        raise CorruptError("import table unreadable (lief refused the file)")
    return names
