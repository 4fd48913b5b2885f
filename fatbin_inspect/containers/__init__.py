"""Containers find the bytes that may hold device code; they never parse fatbins themselves.

Each host-binary container (ELF, PE/COFF) returns a ``Layout``: its sections as file-offset
``Region``s, which of them are fatbin sections, and the CUDA libraries it links. Archive
containers (ar, zip, tar, gzip, conda) yield members instead. ``detect`` decides by content, never by
name; ``LAYOUTS`` and ``ARCHIVES`` say which reader opens each kind it names.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from fatbin_inspect.errors import InputError

if TYPE_CHECKING:
    from fatbin_inspect.containers.archives import MemberReader
    from fatbin_inspect.containers.conda import CondaReader

    ArchiveReader: TypeAlias = MemberReader | CondaReader  # the two share members(), owner(name)
    from fatbin_inspect.formats.binio import Blob
    from fatbin_inspect.formats.decompress import Budget


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


# ELF e_machine and PE/COFF Machine values -> the host CPU architecture a file is built for
_ELF_MACHINES = {3: "x86", 40: "arm", 62: "x86_64", 183: "aarch64", 21: "ppc64", 243: "riscv64"}
_PE_MACHINES = {0x14C: "x86", 0x8664: "x86_64", 0xAA64: "aarch64", 0x1C4: "arm"}


def machine_of(head: bytes) -> str | None:
    """The CPU architecture a host binary is built for, from its header (``head``: its first
    bytes, at least 64, or up to the PE header for PE): ``x86_64``, ``aarch64``, ``ppc64le``, ...;
    None for device-only files (cubins are EM_CUDA), unknown machines and short headers."""
    if head[:4] == b"\x7fELF" and len(head) >= 20:
        return _elf_machine(head)
    if head[:2] == b"MZ" and len(head) >= 64:
        return _pe_machine(head)
    if head[:2] in (b"\x64\x86", b"\x64\xaa"):  # COFF object
        return _PE_MACHINES.get(int.from_bytes(head[:2], "little"))
    return None


def _elf_machine(head: bytes) -> str | None:
    little = head[5:6] != b"\x02"
    name = _ELF_MACHINES.get(int.from_bytes(head[18:20], "little" if little else "big"))
    return name + "le" if name == "ppc64" and little else name


def _pe_machine(head: bytes) -> str | None:
    at = int.from_bytes(head[60:64], "little")
    if head[at : at + 4] == b"PE\0\0" and len(head) >= at + 6:
        return _PE_MACHINES.get(int.from_bytes(head[at + 4 : at + 6], "little"))
    return None


def _is_bzip2(head: bytes) -> bool:
    return head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] == b"1AY&SY"  # block magic (pi)


def _is_coff(head: bytes) -> bool:
    return head[:2] in (b"\x64\x86", b"\x64\xaa") and len(head) >= 20  # COFF .obj: AMD64 / ARM64


_Test = Callable[[bytes], bool]


@functools.cache
def _signatures() -> tuple[
    tuple[tuple[str, bytes | None, _Test], ...], tuple[tuple[tuple[str, _Test], ...], ...]
]:
    """(the signatures, the tests worth trying for each first byte). Made at the
    first ``detect``, not at import: a warm scan, which asks nothing of a file, then imports no
    parser.

    The signatures are (format, the first bytes it can start with or None for any, test of the
    first bytes), in the order they are tried; ELF is told apart first. A scan asks this of every
    file: a text file is tried as tar and PTX only."""
    from fatbin_inspect.formats import ptx
    from fatbin_inspect.formats.fatbin import MAGIC_BYTES

    signatures: tuple[tuple[str, bytes | None, _Test], ...] = (
        ("pe", b"M", lambda h: h[:2] == b"MZ"),
        ("ar", b"!", lambda h: h[:8] in (b"!<arch>\n", b"!<thin>\n")),
        ("zip", b"P", lambda h: h[:4] in (b"PK\x03\x04", b"PK\x05\x06")),
        ("fatbin", MAGIC_BYTES[:1], lambda h: h[:4] == MAGIC_BYTES),
        ("gzip", b"\x1f", lambda h: h[:2] == b"\x1f\x8b"),
        ("bzip2", b"B", _is_bzip2),
        ("tar", None, lambda h: len(h) >= 262 and h[257:262] == b"ustar"),
        ("coff", b"\x64", _is_coff),
        ("ptx", None, ptx.looks_like_ptx),
    )
    by_first = tuple(
        tuple((fmt, test) for fmt, first, test in signatures if first is None or bytes([b]) == first)
        for b in range(256)
    )
    return signatures, by_first


def detect(head: bytes) -> str:
    """Format from the first bytes: elf | cubin | pe | coff | ar | zip | tar | gzip | bzip2 | fatbin |
    ptx | unknown."""
    if head[:4] == b"\x7fELF":
        from fatbin_inspect.formats.cubin import is_cubin

        return "cubin" if is_cubin(head) else "elf"
    if not head:
        return "unknown"
    for fmt, test in _signatures()[1][head[0]]:
        if test(head):
            return fmt
    return "unknown"


# ------------------------------------------------------------------------- readers by kind
# Each kind ``detect`` names that a reader opens: host binaries to their ``Layout``, archives
# to a member reader (``archives.MemberReader`` or ``conda.CondaReader``). Imported when used:
# the modules import this one.
def _elf_layout(blob: Blob) -> Layout:
    from fatbin_inspect.containers import elf

    return elf.layout(blob)


def _pe_layout(blob: Blob) -> Layout:
    from fatbin_inspect.containers import pe

    return pe.layout(blob)


def _coff_layout(blob: Blob) -> Layout:
    from fatbin_inspect.containers import pe

    return pe.coff_layout(blob)


LAYOUTS: dict[str, Callable[[Blob], Layout]] = {"elf": _elf_layout, "pe": _pe_layout, "coff": _coff_layout}


def layout(kind: str, blob: Blob) -> Layout:
    """The sections of a host binary of ``kind``; no sections for any other kind."""
    read = LAYOUTS.get(kind)
    return read(blob) if read is not None else Layout(kind, ())


def _ar(blob: Blob, all_members: bool, budget: Budget) -> ArchiveReader:
    from fatbin_inspect.containers import archives

    return archives.MemberReader(archives.ar_members(blob), "ar")


def _zip(blob: Blob, all_members: bool, budget: Budget) -> ArchiveReader:
    from fatbin_inspect.containers import archives, conda

    zf = archives.open_zip(blob.stream())
    if conda.is_conda_zip(zf.namelist()):
        return conda.CondaReader(blob, zf)
    members = archives.zip_members(blob, all_members=all_members, zf=zf, budget=budget)
    return archives.MemberReader(members, "zip")


def _tar(blob: Blob, all_members: bool, budget: Budget) -> ArchiveReader:
    from fatbin_inspect.containers import archives

    return archives.MemberReader(archives.tar_members(blob, compressed=False, budget=budget), "tar")


def _gzip(blob: Blob, all_members: bool, budget: Budget) -> ArchiveReader:
    from fatbin_inspect.containers import archives

    return archives.MemberReader(archives.gzip_members(blob, budget), "tar")


def _bzip2(
    blob: Blob, all_members: bool, budget: Budget
) -> ArchiveReader:  # a conda package with info/index.json
    from fatbin_inspect.containers import conda

    return conda.CondaReader(blob)


# the archive kinds, and how each is opened: (blob, every member wanted, budget) -> a reader
ARCHIVES = {"ar": _ar, "zip": _zip, "tar": _tar, "gzip": _gzip, "bzip2": _bzip2}


def open_archive(kind: str, blob: Blob, all_members: bool, budget: Budget) -> ArchiveReader:
    """The member reader of an archive of ``kind`` (a key of ``ARCHIVES``); ``InputError`` when
    its directory does not read."""
    return ARCHIVES[kind](blob, all_members, budget)


def archive_format(kind: str) -> str:
    """The format an archive's record shows when its reader could not be opened: a compressed
    stream is a tar."""
    return "tar" if kind in ("gzip", "bzip2") else kind


CUDA_LIB_PREFIXES = ("libcudart", "cudart", "libcuda.", "nvcuda", "libnvrtc", "nvrtc", "libcublas", "cublas")


def cuda_needs(names: Iterable[str]) -> tuple[str, ...]:
    """Keep the linked libraries that tell which CUDA runtime a file needs."""
    out = []
    for n in names:
        low = n.lower()
        if low.startswith(CUDA_LIB_PREFIXES) and n not in out:
            out.append(n)
    return tuple(out)


STATIC_CUDART_MARKER = b"/cudart.shm."


def has_static_cudart(blob: Blob, needs: tuple[str, ...], skip: Iterable[tuple[int, int]] = ()) -> bool:
    """No cudart among the linked libraries, yet the static cudart's shared-memory name format
    (``/cudart.shm.``: in nvcc executables linked with ``-cudart static`` and in libcublasLt 13,
    absent from files that link libcudart dynamically) in the bytes. Found the same way in a file
    on disk, an archive member or an installed file (R-RT 3). ``skip``: ``(start, end)`` ranges
    where no host string is, not searched: the fatbins found (cuFFT's 24,000 are most of its 273
    MB) and code (libcublasLt's 105 MB of ``.text`` come before its marker). Searched with
    ``Blob.contains``, a ``RELEASE_EVERY`` piece at a time, as the fatbin walk goes: cuFFT's gaps,
    one every 11 KB between its fatbins, made every page of its 273 MB resident (the worker's RSS
    282 MB, of which 251 MB were file pages), and libcublasLt.so.13's gaps, searched each in one
    pass, 28 MB of its pages (a scan worker's peak)."""
    from fatbin_inspect.formats.binio import gaps
    from fatbin_inspect.formats.fatbin import RELEASE_EVERY

    if any(n.lower().startswith(("libcudart", "cudart")) for n in needs):
        return False
    return blob.contains(STATIC_CUDART_MARKER, gaps(skip, blob.size), RELEASE_EVERY)
