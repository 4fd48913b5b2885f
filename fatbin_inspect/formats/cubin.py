"""Device ELF (cubin) parser (docs/format.md §3).

A hand-written ELF64 reader rather than pyelftools: a 500 MB library holds thousands of cubins
and only the section table, ``.symtab``/``.strtab``, two notes and the ``.nv.info*`` records
are needed. Building pyelftools' ELFFile/Section objects per cubin cost several times more
than the few ``struct`` calls below (see ``scripts/bench.py micro-cubin``).

Facts a reader cannot guess:

* ``e_machine`` 190 (EM_CUDA); EI_OSABI 0x33 with EI_ABIVERSION 7, or 0x41 with 8.
* ``e_flags``: v7 -> SM in bits 0-7, ``a`` = 0x800, virtual SM in bits 16-23;
  v8 -> SM in bits 8-15, ``a`` = 0x8 (ptxas 12.9 only), high byte 0x05 = nvlink output.
  ptxas 13.x keeps ``a`` only in ``.nv.compat`` attribute 0x09 == 1. ``f`` is never in a cubin.
* Kernel = ``STT_FUNC`` symbol with ``st_other & 0x10`` (STO_CUDA_ENTRY).
* ``.nv.info*`` records: ``u8 format, u8 attribute, u16 v``; format 4 (SVAL) means ``v`` data
  bytes follow; formats 1-3 carry the value in ``v``.
"""

from __future__ import annotations

import array
import functools
import re
import struct
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, cast

from fatbin_inspect.errors import CorruptError, NotLoaded, TruncatedError
from fatbin_inspect.formats.elf64 import E_SHNUM, E_SHOFF, EHDR64, ELF_MAGIC, SHDR64, SHT_NOBITS, SYM64
from fatbin_inspect.formats.model import CubinInfo, Kernel, fast_kernel

if TYPE_CHECKING:
    import mmap

EM_CUDA = 190
OSABI_CUDA_V1 = 0x33
OSABI_CUDA_V2 = 0x41

_NOTE = struct.Struct("<III")
_U32 = struct.Struct("<I")
_II = struct.Struct("<II")
_III = struct.Struct("<III")

SHT_NV_INFO = 0x70000000
SHT_NV_COMPAT = 0x70000086
STT_FUNC = 2
STO_CUDA_ENTRY = 0x10

NVI_MAX_THREADS = 0x05
NVI_FRAME_SIZE = 0x11
NVI_REGCOUNT = 0x2F
COMPAT_ACCELERATOR_TARGET = 0x09
NOTE_CUINFO = 1000
NOTE_TKINFO = 2000


def is_cubin(head: bytes) -> bool:
    return (
        len(head) >= 20
        and head[:4] == ELF_MAGIC
        and head[4] == 2
        and struct.unpack_from("<H", head, 18)[0] == EM_CUDA
    )


SPARSE_PREFIX = 8 << 20  # what a SparseImage holds of a large cubin's start


def table_span(head: bytes, size: int) -> tuple[int, int]:
    """Where the section table of a cubin of ``size`` bytes starting with ``head`` lies."""
    if len(head) < EHDR64.size or head[:4] != ELF_MAGIC:
        return size, size
    fields = EHDR64.unpack_from(head, 0)
    shoff = fields[E_SHOFF]
    return min(shoff, size), min(shoff + fields[E_SHNUM] * SHDR64.size, size)


class SparseImage:
    """A cubin of ``size`` bytes of which only the first ``head`` bytes (in ``buf``) and
    ``tail`` (from ``start``: its section table) are at hand (a read across the head's end into a
    tail that starts there is joined); reading any other byte raises ``NotLoaded``. In NVIDIA's
    cubins the section table comes last and what the parser reads (symbols, notes,
    ``.nv.info``) first, the code (90 % of a large cubin) in between:
    libtorch_cuda.so's largest cubin is 41 MB, of which the parser reads the first 4.8 MB and
    the last 0.4 MB; none of the 650 cubins over 2 MB of libtorch_cuda.so, cuBLAS and cuBLASLt 13
    needs a byte past 6.5 MB before its table. One laid out otherwise is decoded whole."""

    __slots__ = ("buf", "head", "size", "start", "tail")

    def __init__(self, buf: bytes | mmap.mmap, head: int, tail: bytes, start: int, size: int):
        self.buf, self.head, self.tail, self.start, self.size = buf, head, tail, start, size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, key: slice) -> bytes:
        a, b, _step = key.indices(self.size)
        if b <= self.head:
            return self.buf[a:b]
        if self.start <= a and b <= self.start + len(self.tail):
            return self.tail[a - self.start : b - self.start]
        if self.start == self.head and a < self.head < b <= self.start + len(self.tail):
            return self.buf[a : self.head] + self.tail[: b - self.head]
        if a >= b:
            return b""
        raise NotLoaded(f"[{a:#x}, {b:#x}) of a {self.size}-byte cubin is not in its sparse image")


class _Elf:
    """Section table of one cubin, bounds-checked. ``size``: the image's length when ``data`` is
    longer (a reused buffer)."""

    def __init__(self, data: bytes | mmap.mmap | SparseImage, size: int | None = None):
        self.size = size = len(data) if size is None else size
        if size < EHDR64.size or data[:4] != ELF_MAGIC:
            raise CorruptError("not an ELF image", 0)
        (
            ident,
            self.e_type,
            machine,
            _ver,
            _entry,
            phoff,
            shoff,
            self.e_flags,
            _ehsize,
            phentsize,
            phnum,
            shentsize,
            shnum,
            shstrndx,
        ) = EHDR64.unpack_from(data[: EHDR64.size])
        if ident[4] != 2 or ident[5] != 1:
            raise CorruptError("device ELF must be 64-bit little-endian", 4)
        if machine != EM_CUDA:
            raise CorruptError(f"ELF e_machine {machine} is not EM_CUDA (190)", 18)
        self.osabi = ident[7]
        self.abi = ident[8]
        self.data = data
        if shnum and shentsize != SHDR64.size:
            raise CorruptError(f"section header size {shentsize}, expected 64", 0x3A)
        if shoff + shnum * SHDR64.size > size:
            raise TruncatedError(f"section table ({shnum} entries) runs past the image end", shoff)
        if phnum and phoff + phnum * phentsize > size:  # unused, but a cut image is no image
            raise TruncatedError(f"program headers ({phnum} entries) run past the image end", phoff)
        table = data[shoff : shoff + shnum * SHDR64.size]
        self.shnum = shnum
        # the section headers by column (C arrays of the fields read: a large cubin has thousands
        # of sections, of which a listing reads five per kernel, so no tuple per header)
        words, quads = _columns(table, "I"), _columns(table, "Q")
        self.sh_type, self.sh_link = words[1::16], words[10::16]
        self.sh_offset, self.sh_size = quads[3::8], quads[4::8]
        self.by_name: dict[str, int] = {}
        self.info_of = self.shared_of = self.const0_of = self.by_name
        if shnum and shstrndx < shnum:
            self.by_name, self.info_of, self.shared_of, self.const0_of = _names(
                self._bytes(shstrndx), words[0::16]
            )
        elif shnum:
            self.by_name = {"": shnum - 1}

    def _bytes(self, idx: int) -> bytes:
        if self.sh_type[idx] == SHT_NOBITS:
            return b""
        off, size = self.sh_offset[idx], self.sh_size[idx]
        if off + size > self.size:
            raise TruncatedError(f"section {idx} [{off:#x}+{size}] runs past the image end", off)
        return self.data[off : off + size]

    def section(self, name: str) -> bytes | None:
        """The bytes of the last section named ``name`` (which starts with one of ``LOOKED_UP``)."""
        idx = self.by_name.get(name)
        return None if idx is None else self._bytes(idx)


def _columns(table: bytes, code: str) -> array.array:
    """``table`` as an array of little-endian unsigned integers (``code`` "I": 4 bytes, "Q": 8,
    their size on every platform CPython runs on): a 64-byte section header is 16 or 8 of them."""
    out = array.array(code, table)
    if sys.byteorder != "little":  # pragma: no cover - big-endian hosts
        out.byteswap()
    return out


# the last cubin's (section-name table, name offsets, _names of them): the cubins of one fatbin
# (one per architecture) mostly share their sections' names, in the same order (libtorch_cuda.so:
# 36 % of cubins, each the same as the one before it); never changed once made. Kept only for a
# table of up to NAMES_KEPT bytes: a large cubin's map, kept on, raised a worker's peak by ~5 MB
_Names = tuple[dict[str, int], dict[str, int], dict[str, int], dict[str, int]]
_last_names: tuple[bytes, array.array, _Names] = (b"", array.array("I"), ({}, {}, {}, {}))
NAMES_KEPT = 256 << 10


# the names the parser looks sections up by (``_Elf.section``, ``_kernel_symbols``,
# ``_with_resources``) start with one of these; the map holds no other: half of a cubin's
# sections (``.text.K``, ``.rela.text.K``, ``.nv.merc.*``, ``.nv.capmerc.*``) are never looked
# up, and their long names would be sliced and hashed for nothing
LOOKED_UP = (".nv.info", ".nv.shared.", ".nv.constant0.", ".nv.compat", ".note.nv.", ".symtab")


def _names(raw: bytes, offsets: array.array) -> _Names:
    """Section name -> index (the last section of a name wins) of the sections whose names
    start with one of ``LOOKED_UP``, from the section-name table and each section's offset into
    it: a name runs to the next NUL (or the table's end). Those of a kernel's sections
    (``.nv.info.K``, ``.nv.shared.K``, ``.nv.constant0.K``) are in maps of their own, keyed by
    ``K``: ``_with_resources`` looks each up by the kernel's name itself, whose hash is taken once,
    not by a new string of ~280 characters hashed anew (the same records:
    tests/test_cubin_fast_paths.py). The maps are shared with the cubin before when both
    are the same (callers only read them)."""
    global _last_names
    last = _last_names
    if last[0] == raw and last[1] == offsets:
        return last[2]
    strtab = raw.decode("latin-1")  # one decode; str.find is as fast
    find, looked_up = strtab.find, strtab.startswith
    by_name: dict[str, int] = {}
    info: dict[str, int] = {}
    shared: dict[str, int] = {}
    const0: dict[str, int] = {}
    n = len(strtab)
    for i, o in enumerate(offsets):
        if looked_up(LOOKED_UP, o):
            e = find("\0", o)
            if e < 0:
                e = n
            c = strtab[o + 4]  # (every LOOKED_UP prefix is longer): which one matched
            if c == "s":  # .nv.shared.
                shared[strtab[o + 11 : e]] = i
            elif c == "c" and strtab[o + 6] == "n":  # .nv.constant0. (not .nv.compat)
                const0[strtab[o + 14 : e]] = i
            elif c == "i" and looked_up(".nv.info.", o):
                info[strtab[o + 9 : e]] = i
            else:
                by_name[strtab[o:e]] = i
    names = (by_name, info, shared, const0)
    if len(raw) <= NAMES_KEPT:
        _last_names = (bytes(raw), offsets, names)
    return names


def _nv_records(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield (attribute, format, value_or_bytes) from a ``.nv.info``/``.nv.compat`` section."""
    pos, n = 0, len(data)
    while pos + 4 <= n:
        fmt, attr, v = struct.unpack_from("<BBH", data, pos)
        pos += 4
        if fmt == 4:
            if pos + v > n:
                raise TruncatedError(f".nv.info record {attr:#x} of {v} bytes runs past its section", pos)
            yield attr, fmt, data[pos : pos + v]
            pos += v
        else:
            yield attr, fmt, v


def _notes(data: bytes) -> Iterator[tuple[int, bytes]]:
    pos, n = 0, len(data)
    while pos + _NOTE.size <= n:
        namesz, descsz, ntype = _NOTE.unpack_from(data, pos)
        pos += _NOTE.size
        name_end = pos + ((namesz + 3) & ~3)
        desc_end = name_end + ((descsz + 3) & ~3)
        if desc_end > n:
            raise TruncatedError("note runs past its section", pos)
        yield ntype, data[name_end : name_end + descsz]
        pos = desc_end


def _tkinfo(desc: bytes) -> tuple[str | None, str | None]:
    """``.note.nv.tkinfo``: 6 x u32 {2, 0, tool, version, build, cmdline} + a string table."""
    if len(desc) < 24:
        return None, None
    offs = struct.unpack_from("<6I", desc, 0)
    strings = desc[24:]

    def s(o: int) -> str:
        if o >= len(strings):
            return ""
        end = strings.find(b"\0", o)
        return strings[o : end if end >= 0 else None].decode("utf-8", "replace")

    tool, version, cmdline = s(offs[2]), s(offs[3]), s(offs[5])
    # "Cuda compilation tools, release 13.0, V13.0.88" -> "13.0.88"
    ver = version.rsplit(" V", 1)[-1] if " V" in version else version
    toolkit = f"{tool} {ver}".strip() or None
    return toolkit, (cmdline.strip() or None)


def parse_cubin(
    data: bytes | mmap.mmap | SparseImage,
    kernels: bool = False,
    resources: bool = False,
    demangle: Callable[[str], str | None] | None = None,
    size: int | None = None,
) -> tuple[CubinInfo, tuple[Kernel, ...] | None]:
    """Decode a cubin's identity and, on request, its kernels and their resource usage.
    ``demangle(name) -> str | None`` fills ``Kernel.demangled``. ``data`` may be longer than the
    image (``size``: its length) or a ``SparseImage`` (``NotLoaded``: it lacks bytes this cubin
    needs); nothing returned refers to ``data``."""
    elf = _Elf(data, size)
    flags = elf.e_flags
    sm, arch_specific, virtual_sm = _target_of(elf)
    toolkit, cmdline, note_sm = _notes_of(elf)
    virtual_sm = note_sm or virtual_sm

    syms = _kernel_symbols(elf)
    nvlink = (toolkit or "").startswith("nvlink") or (elf.abi >= 8 and flags >> 24 == 0x05)
    info = CubinInfo(
        elf_abi=elf.abi,
        elf_type={1: "rel", 2: "exec"}.get(elf.e_type, str(elf.e_type)),
        sm=sm,
        arch_specific=arch_specific,
        virtual_sm=virtual_sm,
        device_link=nvlink and not syms,
        toolkit=toolkit,
        command_line=cmdline,
    )
    if not kernels:
        return info, None
    if not resources:
        return info, tuple(Kernel(n, demangle(n) if demangle else None) for _i, n in syms)
    return info, _with_resources(elf, syms, demangle)


def _target_of(elf: _Elf) -> tuple[int, bool, int | None]:
    """(SM, arch-specific, virtual SM) from ``e_flags`` (layout by ELF ABI version) and ``.nv.compat``."""
    flags = elf.e_flags
    if elf.abi >= 8 or elf.osabi == OSABI_CUDA_V2:
        sm, arch_specific, virtual_sm = (flags >> 8) & 0xFF, bool(flags & 0x8), None
    else:
        sm, arch_specific, virtual_sm = flags & 0xFF, bool(flags & 0x800), (flags >> 16) & 0xFF or None
    compat = elf.section(".nv.compat")
    if compat:  # every record is read: a cut section is an error even after a match
        records = [(a, v) for a, _f, v in _nv_records(compat)]
        arch_specific = arch_specific or (COMPAT_ACCELERATOR_TARGET, 1) in records
    return sm, arch_specific, virtual_sm


def _notes_of(elf: _Elf) -> tuple[str | None, str | None, int | None]:
    """(toolkit, command line) from the tkinfo note, and the virtual SM a cuinfo note names."""
    toolkit = cmdline = virtual_sm = None
    for name in (".note.nv.cuinfo", ".note.nv.cuver", ".note.nv.tkinfo"):
        raw = elf.section(name)
        if not raw:
            continue
        for ntype, desc in _notes(raw):
            if ntype == NOTE_TKINFO:
                toolkit, cmdline = _tkinfo(desc)
            elif ntype == NOTE_CUINFO and len(desc) >= 4:
                virtual_sm = struct.unpack_from("<H", desc, 2)[0] or virtual_sm
    return toolkit, cmdline, virtual_sm


# st_info's type nibble is STT_FUNC / st_other has STO_CUDA_ENTRY: 1, else 0 (bytes.translate)
_IS_FUNC = bytes(int(b & 0xF == STT_FUNC) for b in range(256))
_IS_ENTRY = bytes(int(bool(b & STO_CUDA_ENTRY)) for b in range(256))


def _kernel_symbols(elf: _Elf) -> list[tuple[int, str]]:
    """(symbol index, name) of each kernel, in symbol order. The symbols are sifted without a
    loop in bytecode (one cubin has thousands, a fifth of them kernels): the st_info and st_other
    bytes of every 24-byte symbol are taken as two strided slices, mapped to 0/1 by
    ``translate`` and ANDed as integers."""
    idx = elf.by_name.get(".symtab")
    if idx is None:
        return []
    symtab = elf._bytes(idx)
    link = elf.sh_link[idx]
    if link >= elf.shnum:
        raise CorruptError(".symtab links to a missing string table", elf.sh_offset[idx])
    strtab = elf._bytes(link)
    usable = len(symtab) - len(symtab) % SYM64.size
    count = usable // SYM64.size
    funcs = int.from_bytes(symtab[4:usable:24].translate(_IS_FUNC), "little")
    entries = int.from_bytes(symtab[5:usable:24].translate(_IS_ENTRY), "little")
    marks = (funcs & entries).to_bytes(count, "little")
    out = []
    find, unpack, i = strtab.find, _U32.unpack_from, marks.find(1)
    while i >= 0:
        (st_name,) = unpack(symtab, i * SYM64.size)
        end = find(b"\0", st_name)
        out.append((i, strtab[st_name : end if end >= 0 else None].decode("utf-8", "replace")))
        i = marks.find(1, i + 1)
    return out


# a run of .nv.info records that are all SVAL with 8 data bytes (every record of the global
# .nv.info of most cubins: register count, frame size, stack sizes, one of each per kernel)
_SVAL8_RUN = re.compile(rb"(?:\x04.\x08\x00.{8})+", re.DOTALL)


def _global_resources(glob: bytes) -> tuple[dict[int, int], dict[int, int]]:
    """Register count and frame size by symbol index, from the global ``.nv.info`` (the last
    record for a symbol wins). In a run of 8-byte SVAL records (a pattern finds where it ends)
    the attribute bytes are one strided slice, searched for the two attributes; other records
    are walked one by one."""
    regs: dict[int, int] = {}
    frame: dict[int, int] = {}
    pos, n, unpack, run = 0, len(glob), _II.unpack_from, _SVAL8_RUN.match
    while pos + 4 <= n:
        m = run(glob, pos)
        if m is not None:
            end = m.end()
            attrs = glob[pos + 1 : end : 12]
            for attr, into in ((NVI_REGCOUNT, regs), (NVI_FRAME_SIZE, frame)):
                j = attrs.find(attr)
                while j >= 0:
                    sym, amount = unpack(glob, pos + 12 * j + 4)
                    into[sym] = amount
                    j = attrs.find(attr, j + 1)
            pos = end
            continue
        if glob[pos] != 4:
            pos += 4
            continue
        attr, v = glob[pos + 1], glob[pos + 2] | glob[pos + 3] << 8
        if (attr == NVI_REGCOUNT or attr == NVI_FRAME_SIZE) and v >= 8 and pos + 12 <= n:  # noqa: SIM109 - no tuple per record
            sym, amount = unpack(glob, pos + 4)
            (regs if attr == NVI_REGCOUNT else frame)[sym] = amount
        pos += 4 + v
    return regs, frame


def _with_resources(
    elf: _Elf, syms: list[tuple[int, str]], demangle: Callable[[str], str | None] | None = None
) -> tuple[Kernel, ...]:
    glob = elf.section(".nv.info")
    regs, frame = _global_resources(glob) if glob else ({}, {})
    kernels = []
    info_of, shared_of, const0_of = elf.info_of.get, elf.shared_of.get, elf.const0_of.get  # hot loop
    sizes, section = elf.sh_size, elf._bytes
    for idx, name in syms:
        max_threads = None
        i = info_of(name)  # .nv.info.<name>
        if i is not None:
            val = _sval(section(i), NVI_MAX_THREADS)
            if val is not None and len(val) >= 12:
                max_threads = _III.unpack_from(val, 0)
        i = shared_of(name)  # .nv.shared.<name>
        shared = sizes[i] if i is not None else 0
        i = const0_of(name)  # .nv.constant0.<name>
        const0 = sizes[i] if i is not None else None
        kernels.append(
            fast_kernel(
                name,
                demangle(name) if demangle else None,
                regs.get(idx),
                shared,
                const0,
                max_threads,
                frame.get(idx),
            )
        )
    return tuple(kernels)


_Matcher = Callable[[bytes, int], "re.Match[bytes]"]  # a run of none always matches


@functools.cache
def _skipper(attribute: int) -> _Matcher:
    """A pattern matching a run of ``.nv.info`` records none of which is an SVAL record of
    ``attribute``: any record of another format (4 bytes) and SVAL records of other attributes
    with 0-64 data bytes (a multiple of 4: the lengths ptxas writes); what it stops at (the record
    asked for, a longer one, the end) is read by ``_sval``'s own walk."""
    other = re.escape(bytes((attribute,)))
    sizes = b"|".join(re.escape(bytes((v, 0))) + b".{%d}" % v for v in range(0, 65, 4))
    return cast(
        _Matcher, re.compile(b"(?:[^\\x04]...|\\x04[^" + other + b"](?:" + sizes + b"))*", re.DOTALL).match
    )


def _sval(data: bytes, attribute: int) -> bytes | None:
    """Data of the first SVAL (format 4) record with ``attribute``. This runs for every kernel
    (150k in libtorch_cuda.so, whose per-kernel ``.nv.info`` hold ~12 records each): the records
    before it are skipped by a pattern, the rest walked by index."""
    if data.find(bytes((4, attribute))) < 0:  # no such record can exist: skip the walk
        return None
    pos, n, skip = 0, len(data), _skipper(attribute)
    while pos + 4 <= n:
        pos = skip(data, pos).end()  # (a run of none always matches)
        if pos + 4 > n:
            break
        size = data[pos + 2] | data[pos + 3] << 8 if data[pos] == 4 else 0
        if data[pos + 1] == attribute and data[pos] == 4:
            return data[pos + 4 : pos + 4 + size]
        pos += 4 + size
    return None
