"""Containers find the bytes that may hold device code; they never parse fatbins themselves.

Each host-binary container (ELF, PE/COFF) returns a ``Layout``: its sections as file-offset
``Region``s, which of them are fatbin sections, and the CUDA libraries it links. Archive
containers (ar, zip, tar, gzip, conda) yield members instead. ``detect`` decides by content, never by
name; ``LAYOUTS`` and ``ARCHIVES`` say which reader opens each kind it names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeAlias

# the records and detection live in modules of their own, which the readers import (not this
# package, which imports the readers): re-exported here, where the rest of the package reads them
from fatbin_inspect.containers.layout import CUDA_LIB_PREFIXES, Compressed, Layout, Region, cuda_needs
from fatbin_inspect.containers.signatures import detect, machine_of

__all__ = [
    "ARCHIVES",
    "CUDA_LIB_PREFIXES",
    "LAYOUTS",
    "STATIC_CUDART_MARKER",
    "Compressed",
    "Layout",
    "Region",
    "archive_format",
    "cuda_needs",
    "detect",
    "has_static_cudart",
    "layout",
    "machine_of",
    "open_archive",
]

if TYPE_CHECKING:
    from fatbin_inspect.containers.archives import MemberReader
    from fatbin_inspect.containers.conda import CondaReader

    ArchiveReader: TypeAlias = MemberReader | CondaReader  # the two share members(), owner(name)
    from fatbin_inspect.formats.binio import Blob
    from fatbin_inspect.formats.decompress import Budget


# ------------------------------------------------------------------------- readers by kind
# Each kind ``detect`` names that a reader opens: host binaries to their ``Layout``, archives
# to a member reader (``archives.MemberReader`` or ``conda.CondaReader``). Imported when used.
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


def _bzip2(blob: Blob, all_members: bool, budget: Budget) -> ArchiveReader:
    # a conda package with info/index.json
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
