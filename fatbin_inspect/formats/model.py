"""Frozen records produced by the parsers and consumed by the engine and the renderers.

Offsets are absolute byte offsets in the file (or archive member) the record came from. Entries
are keyed by ``(path, fatbin offset, entry offset)``: one file can hold the same arch hundreds
of times (one fatbin per translation unit), so an arch name is never an identity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

KIND_SASS = "sass"
KIND_PTX = "ptx"
KIND_LTOIR = "ltoir"
KIND_TILE = "tile"  # cuda_tile IR bytecode (nvcc 13.3+ -enable-tile, nvFatbin AddTileIR)
KIND_UNKNOWN = "unknown"
_ARCH_PREFIX = {KIND_SASS: "sm_", KIND_PTX: "compute_", KIND_LTOIR: "lto_", KIND_TILE: "tile_"}


@dataclass(frozen=True)
class Kernel:
    """One ``__global__`` function (a cubin symbol with STO_CUDA_ENTRY, or a PTX ``.entry``)."""

    name: str
    demangled: str | None = None
    registers: int | None = None
    shared: int | None = None  # static shared memory, bytes
    constant0: int | None = None  # constant bank 0 (parameters + driver data), bytes
    max_threads: tuple[int, int, int] | None = None  # __launch_bounds__ / .maxntid
    local: int | None = None  # frame size (per-thread local memory), bytes


_R = TypeVar("_R")


def _without_init(cls: type[_R], **fields: Any) -> _R:
    """A frozen dataclass record whose fields are set straight in its ``__dict__``: the callers
    name every field, so the record is the one ``cls(**fields)`` makes."""
    record = object.__new__(cls)
    record.__dict__.update(fields)
    return record


def fast_kernel(
    name: str,
    demangled: str | None,
    registers: int | None,
    shared: int | None,
    constant0: int | None,
    max_threads: tuple[int, int, int] | None,
    local: int | None,
) -> Kernel:
    """``Kernel(...)`` of every field, without the frozen dataclass ``__init__``'s seven
    ``object.__setattr__`` calls (set in place, not through ``_without_init``'s keyword dict,
    which costs more): the cubin parser makes 145k for libtorch_cuda.so; the same record
    (tests/formats/test_cubin_fast_paths.py compares them)."""
    record = object.__new__(Kernel)
    record.__dict__.update(
        name=name,
        demangled=demangled,
        registers=registers,
        shared=shared,
        constant0=constant0,
        max_threads=max_threads,
        local=local,
    )
    return record


@dataclass(frozen=True)
class CubinInfo:
    """What only the decoded device ELF tells (docs/format.md §3)."""

    elf_abi: int  # EI_ABIVERSION: 7 (OSABI 0x33) or 8 (OSABI 0x41)
    elf_type: str  # "exec" (ET_EXEC) or "rel" (ET_REL)
    sm: int  # SM from e_flags, decoded by ABI version
    arch_specific: bool  # `a` marker from e_flags (v7 0x800, v8-12.9 0x8) or .nv.compat attr 0x09
    virtual_sm: int | None  # PTX arch the SASS came from (v7 e_flags or .note.nv.cuinfo)
    device_link: bool  # produced by nvlink's device-link step (zero kernels)
    toolkit: str | None  # "ptxas 13.0.88" from .note.nv.tkinfo
    command_line: str | None  # tkinfo command line, e.g. "-arch sm_90a -m 64"


@dataclass(frozen=True)
class Entry:
    """One image inside a fat binary."""

    offset: int  # absolute offset of the entry header
    kind: str  # sass | ptx | ltoir | tile | unknown
    kind_code: int  # raw header kind: 1 PTX, 2 ELF, 8 LTO-IR, 0x40 relocatable PTX, 0x80 Tile IR
    sm: int  # arch number as in the header, e.g. 90, 100, 121
    variant: str  # "", "a" or "f"
    compression: str  # none | lz4 | zstd
    stored_size: int  # bytes on disk (compressed size when compressed)
    size: int  # bytes after decompression
    flags: int
    code_version: tuple[int, int]  # (major, minor): PTX ISA for PTX, (1, EI_ABIVERSION) for ELF,
    # (maj << 8 | min, 0) for Tile IR: 0x0D05 is bytecode 13.5
    header_size: int
    payload_offset: int  # absolute offset of the payload
    host: str | None  # linux | windows | mac
    debug: bool
    identifier: str | None
    options: str | None
    relocatable_ptx: bool = False
    cubin: CubinInfo | None = None  # set when the payload was decoded
    kernels: tuple[Kernel, ...] | None = None  # set when kernels were asked for
    ptx_target: str | None = None  # PTX `.target` first token, when decoded
    decode_error: str | None = None  # payload could not be decoded (entry still listed)

    @property
    def arch(self) -> str:
        """`sm_90a`, `compute_120f`, `lto_80` — the suffix comes from the header flags."""
        return f"{_ARCH_PREFIX.get(self.kind, 'arch_')}{self.sm}{self.variant}"

    @property
    def ptx_isa(self) -> str | None:
        if self.kind != KIND_PTX:
            return None
        return f"{self.code_version[0]}.{self.code_version[1]}"

    @property
    def tile_ir_version(self) -> str | None:
        """Tile IR bytecode version (the CUDA release that wrote it): ``13.5``."""
        if self.kind != KIND_TILE:
            return None
        return f"{self.code_version[0] >> 8}.{self.code_version[0] & 0xFF}"


def fast_entry(
    offset: int,
    kind: str,
    kind_code: int,
    sm: int,
    variant: str,
    compression: str,
    stored_size: int,
    size: int,
    flags: int,
    code_version: tuple[int, int],
    header_size: int,
    payload_offset: int,
    host: str | None,
    debug: bool,
    identifier: str | None,
    options: str | None,
    relocatable_ptx: bool,
) -> Entry:
    """``Entry(...)`` of a parsed header (the decoded fields unset), without the frozen dataclass
    ``__init__``'s 21 ``object.__setattr__`` calls (the six extracted wheels hold tens of
    thousands of entries); the same record (tests/formats/test_fatbin_fast_paths.py)."""
    return _without_init(
        Entry,
        offset=offset,
        kind=kind,
        kind_code=kind_code,
        sm=sm,
        variant=variant,
        compression=compression,
        stored_size=stored_size,
        size=size,
        flags=flags,
        code_version=code_version,
        header_size=header_size,
        payload_offset=payload_offset,
        host=host,
        debug=debug,
        identifier=identifier,
        options=options,
        relocatable_ptx=relocatable_ptx,
        cubin=None,
        kernels=None,
        ptx_target=None,
        decode_error=None,
    )


def bare_entry(
    kind: str, sm: int, variant: str, size: int, code_version: tuple[int, int], **extra: Any
) -> Entry:
    """An image with no fatbin header around it: a standalone ``.cubin``/``.ptx`` file (offset 0,
    uncompressed, ``size`` bytes), or an arch a probe names (``size`` 0). ``extra``: cubin,
    ptx_target and the other decoded fields. The kind code is the header's (1 PTX, 2 ELF)."""
    return Entry(
        offset=0,
        kind=kind,
        kind_code=2 if kind == KIND_SASS else 1,
        sm=sm,
        variant=variant,
        compression="none",
        stored_size=size,
        size=size,
        flags=0,
        code_version=code_version,
        header_size=0,
        payload_offset=0,
        host=None,
        debug=False,
        identifier=None,
        options=None,
        **extra,
    )


@dataclass(frozen=True)
class Fatbin:
    """A fat binary: 16-byte header plus entries (docs/format.md §2)."""

    offset: int  # absolute offset of the fatbin header
    size: int  # bytes after the header (fat_size)
    section: str | None  # containing section, None for a raw .fatbin/.cubin/.ptx
    entries: tuple[Entry, ...]
    found_by: str = "section"  # "section" (walked a fatbin section) or "scan" (magic scan)

    @property
    def end(self) -> int:
        """The offset just past it (its header and ``size`` bytes)."""
        return self.offset + 16 + self.size


@dataclass(frozen=True)
class FileError:
    message: str
    offset: int | None = None


@dataclass(frozen=True)
class Requirement:
    """One ``Requires-Dist`` of a wheel's METADATA, as the engine reads it (R-RT 4): the PEP 503
    name, the extras (lower case), the version specifier, and the line as written."""

    name: str
    extras: frozenset[str]
    specifier: str
    written: str


@dataclass(frozen=True)
class Package:
    """The package that holds a file, from its own metadata: a conda package's ``info/index.json``
    (kind "conda"), or, inside an image, a ``*.dist-info`` RECORD (kind "python") or a prefix's
    ``conda-meta/*.json`` (kind "conda") that lists the file, or a system tree's or image's dpkg
    or rpm database (kinds "deb", "rpm"; ``containers.packagedb``).

    ``cuda`` is the CUDA the package declares (``cuda-version >=12.4`` or ``__cuda >=12.0`` in
    ``depends``, ``cuda126`` in the build string): "12.4" (a lower bound) or "12" (a family)."""

    kind: str  # "conda" | "python" | "deb" | "rpm"
    name: str
    version: str
    build: str = ""
    subdir: str = ""  # linux-64, linux-aarch64, win-64, noarch
    cuda: str | None = None
    cuda_source: str | None = None  # the evidence: 'depends "cuda-version >=12.4,<13.0a0"'

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


# the formats of a record that stands for a container: its members have records of their own
# (a wheel or zip, an ar archive, a tar, a conda package, an OCI image)
ARCHIVE_FORMATS = ("zip", "ar", "tar", "conda", "oci")


@dataclass(frozen=True)
class FileReport:
    """One input file, or one member of an archive/wheel (path ``CONTAINER!MEMBER``)."""

    path: str
    format: str  # elf | pe | coff | fatbin | cubin | ptx | unknown, or one of ARCHIVE_FORMATS
    size: int
    fatbins: tuple[Fatbin, ...] = ()
    error: FileError | None = None
    needs: tuple[str, ...] = ()  # CUDA runtime libraries the file links (libcudart.so.12, ...)
    notes: tuple[str, ...] = ()  # non-fatal remarks (skipped members, limits reached)
    distribution: str | None = field(default=None, compare=False)  # "torch 2.14.1" (scan)
    static_cudart: bool = False  # no cudart linked, but the static cudart's marker is in the bytes (R-RT 3)
    relocatable: bool = False  # a relocatable object (ELF ET_REL, COFF .obj): linked, never loaded (R-LINK)
    package: Package | None = None  # the package that holds the file (conda), from its own metadata
    machine: str | None = None  # host CPU architecture of an ELF/PE/COFF file: x86_64, aarch64, ... (R-HOST)
    sha256: str | None = None  # hex digest of the file's (member's) bytes, read with Options.digests
    # (regular files, bytes) of the filesystem an image input holds: its final filesystem (the
    # files of all its images), counted as a scan counts the files of a folder
    contents: tuple[int, int] | None = None
    # a static cudart in a file without fatbins: the newest CUDA release its driver entry-point
    # requests name ("13.0", containers.cudart_version), the file's runtime evidence (R-RT 3)
    static_cudart_version: str | None = None

    @property
    def entries(self) -> tuple[Entry, ...]:
        return tuple(e for fb in self.fatbins for e in fb.entries)


@dataclass(frozen=True)
class PtxShape:
    """What PTX text says about the work of compiling it, counted without parsing it
    (``compat.jit`` estimates the JIT's seconds from these)."""

    bytes: int  # the text up to its NUL
    instructions: int  # statements (``;``) less register declarations (``.reg``)
    entries: int  # ``.entry``: kernels
    funcs: int  # ``.func``: device functions (and their declarations)
    largest: int  # statements from one ``.entry``/``.func`` to the next, at most (ptxas is superlinear in it)
