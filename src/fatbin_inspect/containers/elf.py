"""Host ELF files (executables, shared objects, relocatable objects) through pyelftools.

Fatbins live in ``.nv_fatbin`` (whole-program and device-linked code) and ``__nv_relfatbin``
(``-rdc`` objects, kept in linked files too). Other sections (``.cask_resource`` in cuBLASLt,
``.ldata`` in cuFFT, ``.rodata`` in CUPTI, ``.data`` in cuFFT 11) hide fatbins that only the
magic scan finds. ``DT_NEEDED`` names the CUDA runtime the file needs (``libcudart.so.12``).
"""

from __future__ import annotations

from fatbin_inspect.binio import Blob
from fatbin_inspect.containers import Layout, Region, cuda_needs
from fatbin_inspect.errors import CorruptError, InputError

FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")


def layout(blob: Blob) -> Layout:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(blob.stream())
        regions = []
        for sec in elf.iter_sections():
            h = sec.header
            if h["sh_type"] in ("SHT_NOBITS", "SHT_NULL") or h["sh_size"] == 0:
                continue
            start, end = h["sh_offset"], h["sh_offset"] + h["sh_size"]
            if end > blob.size:
                raise CorruptError(f"section {sec.name} [{start:#x}+{h['sh_size']:#x}] runs past the end of the file",
                                   start)
            regions.append(Region(sec.name, start, end, sec.name in FATBIN_SECTIONS))
        needs = ()
        dyn = elf.get_section_by_name(".dynamic")
        if dyn is not None and hasattr(dyn, "iter_tags"):
            needs = cuda_needs(t.needed for t in dyn.iter_tags() if t.entry.d_tag == "DT_NEEDED")
    except InputError:
        raise
    except (ELFError, Exception) as exc:  # pyelftools raises many kinds on corrupt input
        raise CorruptError(f"ELF structure is corrupt: {exc}", None) from None
    notes = () if elf.num_sections() else ("no section headers: fatbins found by magic scan only",)
    return Layout("elf", tuple(regions), needs, notes)
