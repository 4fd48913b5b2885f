"""Host ELF files (executables, shared objects, relocatable objects): section table and DT_NEEDED.

Fatbins live in ``.nv_fatbin`` (whole-program and device-linked code) and ``__nv_relfatbin``
(``-rdc`` objects, kept in linked files too). Other sections (``.cask_resource`` in cuBLASLt,
``.ldata`` in cuFFT, ``.rodata`` in CUPTI, ``.data`` in cuFFT 11) hide fatbins that only the
magic scan finds. ``DT_NEEDED`` names the CUDA runtime the file needs (``libcudart.so.12``).

Read by hand (ELF32/64, either byte order) rather than through pyelftools, which reads each
section name until a NUL with no bound (65,535 names pointing into one NUL-less megabyte is
quadratic) and takes ``e_shnum == 0`` with a huge section-0 ``sh_size`` at its word. Every
count and offset here is checked against the file size before use.
"""

from __future__ import annotations

import struct

from fatbin_inspect.containers.layout import Compressed, Layout, Region, cuda_needs
from fatbin_inspect.errors import CorruptError, TruncatedError
from fatbin_inspect.formats import elf64
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.formats.elf64 import (
    DT_NEEDED,
    DT_NULL,
    ELFCOMPRESS,
    SHF_COMPRESSED,
    SHF_EXECINSTR,
    SHN_XINDEX,
    SHT_DYNAMIC,
    SHT_NOBITS,
    SHT_NULL,
)

FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
MAX_NAME = 4096  # longer section/library names are cut (real ones are < 100 bytes)


def _structs(ident: bytes) -> tuple[struct.Struct, struct.Struct, struct.Struct, struct.Struct]:
    """(ELF header, section header, dynamic entry, compression header) for the file's class."""
    cls, order = ident[elf64.EI_CLASS], ident[elf64.EI_DATA]
    if cls not in elf64.FORMATS or order not in (elf64.ELFDATA2LSB, elf64.ELFDATA2MSB):
        raise CorruptError(f"ELF class {cls} / byte order {order} is neither 32/64-bit nor LE/BE", 4)
    ehdr, shdr, dyn, _sym = elf64.structs(cls, order == elf64.ELFDATA2LSB)
    chdr = struct.Struct(("<" if order == elf64.ELFDATA2LSB else ">") + elf64.CHDR[cls])
    return ehdr, shdr, dyn, chdr


def _string(table: bytes, off: int) -> str:
    if off >= len(table):
        return ""
    end = table.find(b"\0", off, off + MAX_NAME)
    return table[off : end if end >= 0 else off + MAX_NAME].decode("utf-8", "replace")


def _section_headers(blob: Blob, ehdr: struct.Struct, shdr: struct.Struct) -> list[tuple]:
    fields = blob.unpack(ehdr, 0, "ELF header")
    shoff, shentsize, shnum, shstrndx = fields[6], fields[11], fields[12], fields[13]
    if shoff == 0:
        return []
    if shentsize != shdr.size:
        raise CorruptError(f"section header size {shentsize}, expected {shdr.size}", 0)
    first = blob.unpack(shdr, shoff, "section header 0")
    if shnum == 0:  # extended numbering: the real count is section 0's sh_size
        shnum = first[5]
    if shnum > (blob.size - shoff) // shdr.size:
        raise TruncatedError(f"section table ({shnum} entries) runs past the end of the file", shoff)
    headers = [blob.unpack(shdr, shoff + i * shdr.size) for i in range(shnum)]
    if shstrndx == SHN_XINDEX:
        shstrndx = first[6]
    return [(shstrndx,)] + headers


def _data(blob: Blob, sh: tuple) -> bytes:
    if sh[1] in (SHT_NULL, SHT_NOBITS) or sh[5] == 0:
        return b""
    return blob.read(sh[4], sh[5], "section")


def layout(blob: Blob) -> Layout:
    ehdr, shdr, dyn, chdr = _structs(blob.read(0, 16, "ELF identification"))
    found = _section_headers(blob, ehdr, shdr)
    if not found:
        return Layout("elf", (), (), ("no section headers: fatbins found by magic scan only",))
    (shstrndx,), headers = found[0], found[1:]
    names_table = _data(blob, headers[shstrndx]) if shstrndx < len(headers) else b""
    names = [_string(names_table, sh[0]) for sh in headers]
    regions = [
        _region(blob, name, sh, chdr)
        for name, sh in zip(names, headers)
        if sh[1] not in (SHT_NULL, SHT_NOBITS) and sh[5] != 0
    ]
    return Layout("elf", tuple(regions), cuda_needs(_needed(blob, names, headers, dyn)))


def _region(blob: Blob, name: str, sh: tuple, chdr: struct.Struct) -> Region:
    """The file bytes of one section that has some (checked to lie inside the file)."""
    start, end = sh[4], sh[4] + sh[5]
    if end > blob.size:
        raise CorruptError(f"section {name} [{start:#x}+{sh[5]:#x}] runs past the end of the file", start)
    fatbin, scan = name in FATBIN_SECTIONS, _worth_scanning(name, sh)
    packed = _compressed(blob, sh, chdr) if sh[2] & SHF_COMPRESSED and (fatbin or scan) else None
    return Region(name, start, end, fatbin, scan, packed)


def _compressed(blob: Blob, sh: tuple, chdr: struct.Struct) -> Compressed:
    """The compression header of an ``SHF_COMPRESSED`` section (read for the sections fatbins
    are read from only: compressed ``.debug_*`` sections are never inflated)."""
    if sh[5] < chdr.size:
        return Compressed("", -1, 0, sh[4])
    fields = blob.unpack(chdr, sh[4], "compression header")
    ch_type, size = fields[0], fields[1] if chdr.size == 12 else fields[2]
    return Compressed(ELFCOMPRESS.get(ch_type, ""), ch_type, size, sh[4] + chdr.size)


# symbol, string, relocation, hash, dynamic, note and version tables
_TABLE_TYPES = {2, 3, 4, 5, 6, 7, 9, 11, 0x6FFFFFF6, 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF}


def _worth_scanning(name: str, sh: tuple) -> bool:
    """Only data sections can hide a fatbin; skipping code also removes the false magic hits
    (``movabs`` immediates in code that checks the magic, docs/format.md §1.4)."""
    if sh[2] & SHF_EXECINSTR or sh[1] in _TABLE_TYPES:
        return False
    return not name.startswith((".debug", ".eh_frame", ".gcc_except_table", ".comment"))


def _needed(blob: Blob, names: list[str], headers: list[tuple], dyn: struct.Struct) -> list[str]:
    """DT_NEEDED names of the first ``.dynamic`` section (strings from its sh_link table)."""
    for name, sh in zip(names, headers):
        if name != ".dynamic" or sh[1] != SHT_DYNAMIC:
            continue
        link = sh[6]
        strtab = _data(blob, headers[link]) if link < len(headers) else b""
        data = _data(blob, sh)
        out = []
        for tag, val in dyn.iter_unpack(data[: len(data) - len(data) % dyn.size]):
            if tag == DT_NULL:
                break
            if tag == DT_NEEDED:
                out.append(_string(strtab, val))
        return out
    return []
