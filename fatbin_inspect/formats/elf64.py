"""The ELF layout both ELF readers share: the host-file reader (``containers.elf``, ELF32 and ELF64
in either byte order) and the cubin reader (``formats.cubin``, always ELF64 little-endian).

Field order follows the ELF specification (System V gABI); the tuples that ``struct`` unpacks are
indexed by the ``E_*``/``SH_*`` positions below. Section header, by index: 0 sh_name, 1 sh_type,
2 sh_flags, 3 sh_addr, 4 sh_offset, 5 sh_size, 6 sh_link, 7 sh_info, 8 sh_addralign, 9 sh_entsize.
With more than 0xFF00 sections ``e_shnum`` is 0 and section 0's ``sh_size`` holds the count;
``e_shstrndx`` is then SHN_XINDEX and section 0's ``sh_link`` holds the index (gABI "extended
section numbering").
"""

from __future__ import annotations

import struct

ELF_MAGIC = b"\x7fELF"
ELFCLASS32, ELFCLASS64 = 1, 2
ELFDATA2LSB, ELFDATA2MSB = 1, 2
EI_CLASS, EI_DATA, EI_OSABI, EI_ABIVERSION = 4, 5, 7, 8

SHT_NULL, SHT_SYMTAB, SHT_DYNAMIC, SHT_NOTE, SHT_NOBITS = 0, 2, 6, 7, 8
SHF_EXECINSTR = 0x4
SHF_COMPRESSED = 0x800  # the section's bytes are a Chdr then a compressed stream (gABI)
ELFCOMPRESS = {1: "zlib", 2: "zstd"}  # Chdr ch_type -> method (ELFCOMPRESS_ZLIB, ELFCOMPRESS_ZSTD)
SHN_XINDEX = 0xFFFF
DT_NULL, DT_NEEDED = 0, 1

# ELF header fields, by index in the unpacked tuple (ident first)
E_TYPE, E_MACHINE, E_PHOFF, E_SHOFF, E_FLAGS = 1, 2, 5, 6, 7
E_PHENTSIZE, E_PHNUM, E_SHENTSIZE, E_SHNUM, E_SHSTRNDX = 9, 10, 11, 12, 13
# section header fields
SH_NAME, SH_TYPE, SH_FLAGS, SH_OFFSET, SH_SIZE, SH_LINK = 0, 1, 2, 4, 5, 6

# compression header (Elf32_Chdr: ch_type, ch_size, ch_addralign; Elf64_Chdr: ch_type,
# ch_reserved, ch_size, ch_addralign) per class; ch_size is the decompressed size
CHDR = {ELFCLASS32: "III", ELFCLASS64: "IIQQ"}

# (ELF header, section header, dynamic entry, symbol) per class, without the byte-order prefix;
# ELF32 symbols order their fields differently (st_value before st_info)
FORMATS = {
    ELFCLASS32: ("16sHHIIIIIHHHHHH", "IIIIIIIIII", "iI", "IIIBBH"),
    ELFCLASS64: ("16sHHIQQQIHHHHHH", "IIQQQQIIQQ", "qQ", "IBBHQQ"),
}


def structs(
    elf_class: int, little_endian: bool
) -> tuple[struct.Struct, struct.Struct, struct.Struct, struct.Struct]:
    """(ELF header, section header, dynamic entry, symbol) for one class and byte order."""
    prefix = "<" if little_endian else ">"
    ehdr, shdr, dyn, sym = (struct.Struct(prefix + f) for f in FORMATS[elf_class])
    return ehdr, shdr, dyn, sym


# the cubin's layout, built once (device code is ELF64 little-endian)
EHDR64, SHDR64, DYN64, SYM64 = structs(ELFCLASS64, True)
