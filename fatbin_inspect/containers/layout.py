"""What a host-binary container gives: its sections as ``Region``s of a ``Layout`` (fatbin
sections, compressed sections, code), and the CUDA libraries it links (``cuda_needs``). The ELF
and PE readers build them; the inventory reads them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fatbin_inspect.errors import InputError


@dataclass(frozen=True)
class Compressed:
    """An ELF section flagged ``SHF_COMPRESSED``: its bytes are a compression header, then a
    ``method`` stream (at file offset ``data``) that inflates to ``size`` bytes."""

    method: str  # "zlib" | "zstd"; "" when the header's ch_type is unknown or cut short
    ch_type: int  # -1: the section is shorter than its header
    size: int
    data: int


@dataclass(frozen=True)
class Region:
    name: str
    start: int
    end: int
    fatbin_section: bool = False
    scan: bool = True  # False for code and linker tables: fatbins are data, never found there
    compressed: Compressed | None = None  # the bytes are compressed (inventory inflates them)


@dataclass(frozen=True)
class Layout:
    format: str
    regions: tuple[Region, ...]
    needs: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    errors: tuple[InputError, ...] = ()  # problems outside the fatbin sections (PE imports)


CUDA_LIB_PREFIXES = ("libcudart", "cudart", "libcuda.", "nvcuda", "libnvrtc", "nvrtc", "libcublas", "cublas")


def cuda_needs(names: Iterable[str]) -> tuple[str, ...]:
    """Keep the linked libraries that tell which CUDA runtime a file needs."""
    out = []
    for n in names:
        low = n.lower()
        if low.startswith(CUDA_LIB_PREFIXES) and n not in out:
            out.append(n)
    return tuple(out)
