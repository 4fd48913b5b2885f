"""Archives: ``ar`` (``.a``, MSVC ``.lib``), zip (wheels) and tar (``docker save`` layers).

Members are handed on as ``Blob``s without touching the filesystem next to the inputs:
``ar`` members, stored zip members and plain-tar members are windows into the parent mapping
(no copy); deflated or gzip'd members are inflated into memory, or, above ``SPILL_BYTES``,
into an anonymous file (a ``memfd``, or an unlinked temp file when memory is short) that is
mapped and scanned a window at a time, so resident memory stays bounded for a 500 MB
``libtorch_cuda.so`` inside a wheel.

Every inflated byte is drawn from the top-level input's ``Budget`` (one per input, all nesting
levels together) and every compressed member or stream of every archive kind obeys one ratio
rule (``check_ratio``): past ``RATIO_FLOOR`` inflated bytes, more than ``MAX_RATIO`` inflated
bytes per stored byte is a bomb, and ends the input. A zip member's sizes are checked before it
is inflated (zipfile never returns more than the declared size); a compressed tar or a conda
stream is metered as it streams, skipped members included.
"""

from __future__ import annotations

import io
import mmap
import os
import re
import struct
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, NamedTuple

from fatbin_inspect.errors import BudgetExceeded, CorruptError, InputError, LimitExceeded, TruncatedError
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.formats.decompress import Budget

SPILL_BYTES = 64 << 20
MAX_MEMBER_BYTES = 8 << 30
MAX_MEMBERS = 200_000
MAX_RATIO = 1000  # deflate tops out near 1032:1; more than this is a bomb, not a library
RATIO_FLOOR = 1 << 20  # members inflating to less are never refused for their ratio
CHUNK = 4 << 20


def check_ratio(inflated: int, stored: int, what: str = "member") -> None:
    """The one ratio rule for every compressed member of every archive kind. A bomb ends the
    whole top-level input (``BudgetExceeded``): one line, not one per copy of it."""
    if inflated > RATIO_FLOOR and inflated > MAX_RATIO * max(stored, 1):
        raise BudgetExceeded(
            f"{what} inflates {inflated / max(stored, 1):.0f}:1, over the {MAX_RATIO}:1 limit (zip bomb?)"
        )


# Names of archive members that may hold device code (a wheel also carries .py, .pyi, headers...)
_CANDIDATE = re.compile(
    r"(\.so(\.[0-9.]+)?|\.dll|\.pyd|\.a|\.lib|\.o|\.obj|\.cubin|\.fatbin|\.ptx|\.exe|\.whl|\.zip|"
    r"\.tar|\.tar\.gz|\.tgz|\.tar\.bz2|\.conda|\.dylib|\.bin)$",
    re.I,
)


def is_candidate(name: str) -> bool:
    """The fast path: a name that may hold device code is inflated without looking at it first."""
    base = name.rsplit("/", 1)[-1]
    return bool(_CANDIDATE.search(base))


HEAD_BYTES = 512  # a member's first block: enough for every magic ``detect`` knows (tar needs 262)
# formats whose first bytes make a member worth inflating whole whatever its name; COFF (two
# bytes) and PTX (text) are too weak a signature on their own and keep to the name filter
_CONTENT_FORMATS = frozenset(("elf", "cubin", "pe", "ar", "fatbin", "zip", "gzip", "tar", "bzip2"))


def by_content(head: bytes) -> bool:
    """Whether a member named like no binary is one by its first bytes (an extensionless
    executable, ``libfoo.so.1.2.3-rc``, a fatbin called ``kernels.dat``)."""
    from fatbin_inspect.containers.signatures import detect

    fmt = detect(head)
    if fmt == "pe":  # "MZ" alone is two bytes; where the header is in the block, ask for "PE\0\0"
        lfanew = int.from_bytes(head[0x3C:0x40], "little") if len(head) >= 0x40 else -1
        return lfanew < 0 or lfanew + 4 > len(head) or head[lfanew : lfanew + 4] == b"PE\0\0"
    return fmt in _CONTENT_FORMATS


@dataclass(frozen=True)
class Member:
    name: str
    blob: Blob | None = None
    error: InputError | None = None
    note: str | None = None
    alias: str | None = None  # an image's hard link: the name of the member whose bytes it names


# --------------------------------------------------------------------------------------------- ar
_AR_HDR = struct.Struct("16s12s6s6s8s10s2s")


def ar_members(blob: Blob) -> Iterator[Member]:
    """GNU/BSD ar: 60-byte headers, ``/`` symbol table, ``//`` long-name table, ``#1/N`` BSD names."""
    if blob.head(8) == b"!<thin>\n":
        yield Member("", note="thin archive: members live in other files, not scanned")
        return
    pos, longnames, count = 8, b"", 0
    while pos + _AR_HDR.size <= blob.size:
        name_raw, _d, _u, _g, _m, size_raw, fmag = blob.unpack(_AR_HDR, pos, "ar member header")
        if fmag != b"`\n":
            raise CorruptError("ar member header does not end in `\\n", pos)
        size = _ar_decimal(size_raw, "member size", pos)  # a negative size looped forever
        data = pos + _AR_HDR.size
        if data + size > blob.size:
            raise CorruptError(f"ar member of {size} bytes runs past the end of the archive", pos)
        name = name_raw.decode("latin-1").rstrip()
        start, length = data, size
        if name.startswith("#1/"):  # BSD: name follows the header
            n = _ar_decimal(name[3:].encode("latin-1"), "BSD name length", pos)
            if n > size:
                raise CorruptError(f"ar BSD name of {n} bytes is longer than its member ({size})", pos)
            name = blob.read(data, min(n, size)).rstrip(b"\0").decode("latin-1")
            start, length = data + n, size - n
        elif name == "//":
            longnames = blob.read(data, size)
            name = None
        elif name in ("/", "/SYM64/", "__.SYMDEF", "__.SYMDEF SORTED"):
            name = None
        elif name.startswith("/") and name[1:].isdigit():
            o = _ar_decimal(name[1:].encode("latin-1"), "long-name offset", pos)
            end = longnames.find(b"\n", o)
            name = longnames[o : end if end >= 0 else None].decode("latin-1").rstrip("/")
        else:
            name = name.rstrip("/")
        if name is not None:
            count += 1
            if count > MAX_MEMBERS:
                raise LimitExceeded(f"more than {MAX_MEMBERS} members", pos)
            yield Member(name, blob.view(start, max(0, length)))
        pos = data + size + (size & 1)
    if blob.size - pos > 1 or blob.read(pos, blob.size - pos) not in (b"", b"\n"):
        raise TruncatedError(f"ar member header cut off: {blob.size - pos} bytes after the last member", pos)


def _ar_decimal(raw: bytes, what: str, pos: int) -> int:
    text = raw.decode("latin-1").strip()
    if not text.isdigit() or not text.isascii():  # rejects "-60", "1e3", "²"
        if not text:
            return 0
        raise CorruptError(f"ar {what} {raw!r} is not a decimal number", pos)
    return int(text)


# -------------------------------------------------------------------------------------------- zip
def _spill(
    reader: IO[bytes],
    declared: int,
    what: str,
    over: type[InputError] = CorruptError,
    head: bytes = b"",
    budget: Budget | None = None,
) -> Blob:
    """Copy a stream into memory or an unlinked temp file; more than ``declared`` bytes raise
    ``over`` (a lying header is corrupt; past a limit that is no header's claim, LimitExceeded).
    ``head``: bytes already read from ``reader`` (they count towards ``declared``); ``budget``:
    what the bytes are drawn from (None: the reader is metered already)."""
    if declared > MAX_MEMBER_BYTES:
        raise LimitExceeded(f"{what} declares {declared} bytes, over the {MAX_MEMBER_BYTES}-byte limit")
    if declared <= SPILL_BYTES:
        if budget is not None:
            budget.spend(declared)
        chunks, got = [head], len(head)
        while got <= declared:  # a reader may return less than asked (a metered stream)
            chunk = reader.read(min(CHUNK, declared + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        data = b"".join(chunks)
        if len(data) > declared:
            raise over(f"{what} inflates past {declared} bytes")
        return Blob(data)
    tmp = scratch_file(declared)
    tmp.write(head)
    total = len(head)
    while True:
        chunk = reader.read(CHUNK)
        if not chunk:
            break
        total += len(chunk)
        if total > declared:
            tmp.close()
            raise over(f"{what} inflates past {declared} bytes")
        if budget is not None:
            try:
                budget.spend(len(chunk))
            except LimitExceeded:
                tmp.close()
                raise
        tmp.write(chunk)
    tmp.flush()
    if total == 0:
        tmp.close()
        return Blob(b"")
    mm = mmap.mmap(tmp.fileno(), 0, access=mmap.ACCESS_READ)
    tmp.close()  # the mapping keeps the (already unlinked) file alive
    return Blob(mm, 0, total, owner=mm)


def scratch_file(size: int) -> IO[bytes]:
    """Where a large inflated member goes: an anonymous in-memory file (``memfd``) when the
    machine has room for it several times over, else an unlinked file in the temp dir. Writing
    500 MB to a memfd costs a third of the system time of a disk file, and neither counts in this
    process's resident memory (the scan maps and drops its pages as it goes)."""
    if hasattr(os, "memfd_create") and size * 4 < _mem_available():
        try:
            return os.fdopen(os.memfd_create("fatbin-inspect-member", os.MFD_CLOEXEC), "w+b")
        except OSError:
            pass
    return tempfile.TemporaryFile(prefix="fatbin-inspect-")


def _mem_available() -> int:
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def open_zip(source: Any) -> zipfile.ZipFile:  # a path or a seekable binary file
    """A zip's central directory (``source``: a path or a seekable file object), within limits."""
    try:
        zf = zipfile.ZipFile(source)
    except Exception as exc:  # zipfile raises IndexError, NotImplementedError... on hostile bytes
        raise CorruptError(f"zip central directory is unreadable: {_why(exc)}") from None
    n = len(zf.infolist())
    if n > MAX_MEMBERS:
        zf.close()
        raise LimitExceeded(f"zip holds {n} members, over the {MAX_MEMBERS} limit")
    return zf


def zip_wanted(info: zipfile.ZipInfo, all_members: bool = False) -> bool:
    """Whether ``zip_members`` inflates this member on its name alone (a file, and a candidate
    unless ``all_members``); any other file member is inflated only if its first block says so."""
    return bool(info.filename) and not info.is_dir() and (all_members or is_candidate(info.filename))


def _zip_file(info: zipfile.ZipInfo) -> bool:
    return bool(info.filename) and not info.is_dir() and info.file_size >= MIN_CONTENT_BYTES


MIN_CONTENT_BYTES = 64  # smaller than any ELF/PE header or a fatbin header with one entry


def zip_members(
    blob: Blob,
    all_members: bool = False,
    span: tuple[int, int] | None = None,
    zf: zipfile.ZipFile | None = None,
    budget: Budget | None = None,
) -> Iterator[Member]:
    """The wanted members of a zip, in central-directory order; ``span``: only those whose index
    in it is in ``[start, stop)``; ``zf``: the blob's directory, already read by ``open_zip``;
    ``budget``: the top-level input's (a new one for this zip when None)."""
    if zf is None:
        zf = open_zip(blob.stream())
    budget = budget if budget is not None else Budget(blob.size)
    infos = zf.infolist()
    # (zipfile's name index keeps one member a name: the same length, no name repeats)
    repeats = _repeated(infos) if len(getattr(zf, "NameToInfo", ())) != len(infos) else {}
    start, stop = span if span is not None else (0, len(infos))
    for i, info in enumerate(infos[start:stop], start):
        name = info.filename
        note = None
        if name in repeats:
            last, count = repeats[name]
            if i != last:
                continue  # an earlier member of a name: pip writes the last one over it
            note = f"{name}: {count} members of the zip have this name: the last one, which pip installs, is read"
        member = _zip_member(blob, zf, info, note, all_members, budget)
        if member is not None:
            yield member


def _zip_member(
    blob: Blob,
    zf: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    note: str | None,
    all_members: bool,
    budget: Budget,
) -> Member | None:
    """The member ``info`` as ``zip_members`` yields it: its bytes when wanted, else only its
    ``note`` (None without one); an error of its own in the member. A spent budget raises."""
    name = info.filename
    named = zip_wanted(info, all_members)
    if not named and not _zip_file(info):
        return _noted(name, note)
    try:
        budget.check()
        if info.file_size > MAX_MEMBER_BYTES:
            raise LimitExceeded(f"member declares {info.file_size} bytes")
        plain = not info.flag_bits & 0x1
        if plain and (info.compress_type == zipfile.ZIP_STORED or not named):
            data = _local_data(blob, info)
            if info.compress_type == zipfile.ZIP_STORED:
                return _stored_member(blob, info, data, named, note)
            if not by_content(_deflated_head(blob, data, info)):
                return _noted(name, note)
        check_ratio(info.file_size, info.compress_size)
        with zf.open(info) as fh:
            return Member(name, _spill(fh, info.file_size, "zip member", budget=budget), note=note)
    except BudgetExceeded:
        raise  # the input's budget is spent, or a bomb: no later member is read either
    except InputError as exc:
        return Member(name, error=exc, note=note)
    except Exception as exc:  # zlib.error, BadZipFile, NotImplementedError (method), RuntimeError...
        return Member(name, error=CorruptError(f"cannot inflate: {_why(exc)}"), note=note)


def _noted(name: str, note: str | None) -> Member | None:
    """A member that carries only its ``note``; None without one."""
    return Member(name, note=note) if note is not None else None


def _local_data(blob: Blob, info: zipfile.ZipInfo) -> int:
    """The offset of a member's data, past its local header."""
    hdr = blob.unpack(_ZIP_LOCAL, info.header_offset, "zip local header")
    if hdr[0] != 0x04034B50:
        raise CorruptError("zip local header signature missing", info.header_offset)
    return info.header_offset + 30 + hdr[9] + hdr[10]


def _stored_member(
    blob: Blob, info: zipfile.ZipInfo, data: int, named: bool, note: str | None
) -> Member | None:
    """A stored member as a view of the zip's bytes, when its name or its first block says it is
    wanted; else only its ``note``."""
    if named or by_content(blob.read(data, min(HEAD_BYTES, info.file_size), "zip member")):
        return Member(info.filename, blob.view(data, info.file_size, "stored zip member"), note=note)
    return _noted(info.filename, note)


class _Repeat(NamedTuple):
    last: int  # the central-directory index of the name's last member
    members: int  # how many members carry the name


def _repeated(infos: list[zipfile.ZipInfo]) -> dict[str, _Repeat]:
    """The file names that more than one member of a zip carries. pip installs every member in
    central-directory order, so the last one of a name is the file installed (``zipfile``'s
    ``getinfo`` answers it too); the earlier ones are never on disk."""
    seen: dict[str, _Repeat] = {}
    for i, info in enumerate(infos):
        prev = seen.get(info.filename)
        seen[info.filename] = _Repeat(i, 1 if prev is None else prev.members + 1)
    return {name: r for name, r in seen.items() if r.members > 1 and not name.endswith("/")}


def zip_index(infos: list[zipfile.ZipInfo], name: str) -> int | None:
    """The central-directory index of the member ``name`` as installed (the last of that name)."""
    return next((i for i in range(len(infos) - 1, -1, -1) if infos[i].filename == name), None)


_ZIP_LOCAL = struct.Struct("<IHHHHHIIIHH")


def _deflated_head(blob: Blob, data: int, info: zipfile.ZipInfo) -> bytes:
    """The first ``HEAD_BYTES`` of a member, inflated from its first compressed bytes only (a
    tenth of the cost of opening it through ``zipfile``); b"" when it is not raw deflate."""
    if info.compress_type != zipfile.ZIP_DEFLATED:
        return b""
    raw = blob.read(data, min(info.compress_size, 4096), "zip member")
    try:
        return zlib.decompressobj(-15).decompress(raw, HEAD_BYTES)
    except zlib.error:
        return b""  # inflated whole, the member reports its own error if it is a candidate


METADATA_MAX = 16 << 20  # a wheel's METADATA is a few KB; torch's RECORD ~1 MB


def read_metadata_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int = METADATA_MAX) -> bytes:
    """A metadata member (``METADATA``, ``RECORD``) under the rules of every member: its
    declared size and ratio checked before it is inflated, never more than ``limit`` bytes."""
    if info.file_size > limit:
        raise LimitExceeded(f"{info.filename} declares {info.file_size} bytes, over the {limit}-byte limit")
    if info.compress_type != zipfile.ZIP_STORED:
        check_ratio(info.file_size, info.compress_size, info.filename)
    try:
        with zf.open(info) as fh:
            data = fh.read(limit + 1)
    except Exception as exc:  # zlib.error, BadZipFile, NotImplementedError (method), RuntimeError...
        raise CorruptError(f"cannot inflate {info.filename}: {_why(exc)}") from None
    if len(data) > limit:
        raise LimitExceeded(f"{info.filename} inflates past {limit} bytes")
    return data


# -------------------------------------------------------------------------------------------- tar
def tar_entries(fileobj: Any) -> Iterator[tuple[tarfile.TarInfo, tarfile.TarFile]]:
    """Every entry of a tar stream (``r|*``: read once, in order, any compression tarfile knows),
    within ``MAX_MEMBERS``; hostile bytes raise ``CorruptError``. An entry's data can be read
    (``tf.extractfile``) only until the next entry is asked for."""
    try:
        tf = tarfile.open(fileobj=fileobj, mode="r|*")
    except InputError:
        raise
    except Exception as exc:  # tarfile raises TypeError, zlib.error... on hostile bytes
        raise CorruptError(f"not a readable tar archive: {_why(exc)}") from None
    count = 0
    try:
        for ti in tf:
            count += 1
            if count > MAX_MEMBERS:
                raise LimitExceeded(f"more than {MAX_MEMBERS} members")
            yield ti, tf
    except InputError:
        raise
    except Exception as exc:
        raise CorruptError(f"tar stream breaks off: {_why(exc)}") from None


def tar_bytes(tf: tarfile.TarFile, ti: tarfile.TarInfo) -> bytes:
    """All the bytes of a regular tar entry (b"" should tarfile give it no data)."""
    fh = tf.extractfile(ti)  # a regular member: never None
    return fh.read(ti.size) if fh is not None else b""


def tar_member(
    tf: tarfile.TarFile, ti: tarfile.TarInfo, blob: Blob | None = None, name: str | None = None
) -> Member | None:
    """The ``Member`` for a regular tar entry worth inspecting (its name is a candidate, or its
    first block says so), else None; ``blob``: the whole uncompressed tar, whose members are then
    windows into it (no copy); ``name``: the member's name if not the entry's."""
    name = ti.name if name is None else name
    named = is_candidate(ti.name)
    if not named and ti.size < MIN_CONTENT_BYTES:
        return None
    if blob is not None:
        if named or by_content(blob.read(ti.offset_data, min(HEAD_BYTES, ti.size), "tar member")):
            return Member(name, blob.view(ti.offset_data, ti.size, "tar member"))
        return None
    try:
        fh = tf.extractfile(ti)
        if fh is None:  # not a regular member (tar_entries hands on regular ones only)
            raise CorruptError(f"tar member {name} holds no data")
        head = b"" if named else fh.read(HEAD_BYTES)
        if named or by_content(head):
            return Member(name, _spill(fh, ti.size, "tar member", head=head))
    except BudgetExceeded:
        raise  # the stream's budget or ratio: nothing after it can be read either
    except InputError as exc:
        return Member(name, error=exc)
    except Exception as exc:  # tarfile.ReadError, zlib.error... where the stream breaks off
        return Member(name, error=CorruptError(f"tar member breaks off: {_why(exc)}"))
    return None


def tar_members(blob: Blob, compressed: bool, budget: Budget | None = None) -> Iterator[Member]:
    """Stream through a tar (inflated first when ``compressed``, metered against ``budget`` and
    the ratio rule): each member is read once, in order."""
    src = decompressed(blob, "tar stream", budget) if compressed else blob.stream()
    for ti, tf in tar_entries(src):
        if ti.isreg():
            m = tar_member(tf, ti, None if compressed else blob)
            if m is not None:
                yield m


class _Bounded(io.RawIOBase):
    """A decompressing stream that raises ``LimitExceeded`` past ``limit`` bytes (a bomb); every
    byte it gives (those a tar reader skips too) is drawn from ``budget`` and held to the ratio
    rule against the compressed bytes ``source`` has given so far."""

    def __init__(self, raw: Any, limit: int, what: str, source: Any, budget: Budget):
        self.raw, self.limit, self.what, self.total = raw, limit, what, 0
        self.source, self.budget = source, budget

    def readable(self) -> bool:
        return True

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        try:
            data = self.raw.read(len(target))
        except Exception as exc:  # EOFError (cut stream), zstd/zlib/bz2 errors on hostile bytes
            raise CorruptError(f"{self.what} breaks off: {_why(exc)}") from None
        self.total += len(data)
        if self.total > self.limit:
            raise LimitExceeded(f"{self.what} inflates past {self.limit} bytes (a bomb?)")
        self.budget.spend(len(data))
        check_ratio(self.total, self.source.tell(), self.what)
        target[: len(data)] = data
        return len(data)


def decompressed(blob: Blob, what: str, budget: Budget | None = None, fileobj: Any = None) -> Any:
    """A stream of ``blob`` inflated by its magic (zstd, gzip, bzip2, xz; else as stored),
    bounded like every archive member: ``MAX_RATIO`` times its compressed size, at least
    ``SPILL_BYTES``, and the ratio rule as it streams; its bytes are drawn from ``budget`` (the
    top-level input's; a new one when None). Read once, front to back: nothing is written anywhere.
    ``fileobj``: the stream of ``blob``'s bytes to read (one that hashes them, say), returned
    itself when they are stored plain; it must tell() how many it gave."""
    budget = budget if budget is not None else Budget(blob.size)
    head = blob.head(6)
    fileobj = blob.stream() if fileobj is None else fileobj
    limit = min(MAX_MEMBER_BYTES * 8, max(SPILL_BYTES, MAX_RATIO * blob.size))
    raw: object  # a decompressing reader: zstandard's, GzipFile, BZ2File or LZMAFile
    try:
        if head[:4] == b"\x28\xb5\x2f\xfd":
            import zstandard

            raw = zstandard.ZstdDecompressor().stream_reader(fileobj, read_across_frames=True)
        elif head[:2] == b"\x1f\x8b":
            import gzip

            raw = gzip.GzipFile(fileobj=fileobj)
        elif head[:3] == b"BZh":
            import bz2

            raw = bz2.BZ2File(fileobj)
        elif head[:6] == b"\xfd7zXZ\0":
            import lzma

            raw = lzma.LZMAFile(fileobj)
        else:
            return fileobj
    except Exception as exc:
        raise CorruptError(f"{what} does not decompress: {_why(exc)}") from None
    return io.BufferedReader(_Bounded(raw, limit, what, fileobj, budget), CHUNK)


def _why(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if not isinstance(exc, (OSError, zipfile.BadZipFile)) else str(exc)


def gzip_members(blob: Blob, budget: Budget) -> Iterator[Member]:
    """A ``.tar.gz`` streams as a tar; a lone ``.gz`` is one member, ``<gunzip>`` (a bomb is not
    inflated a second time)."""
    try:
        yield from tar_members(blob, compressed=True, budget=budget)
    except LimitExceeded:
        raise
    except InputError:
        yield Member("<gunzip>", gzip_payload(blob, budget))


class MemberReader:
    """The members of an archive that carries no package metadata (ar, zip, tar, gzip), behind
    the interface ``conda.CondaReader`` has too: ``members()``, ``owner(name)`` (None here),
    ``notes``, ``package`` and the ``format`` its record shows."""

    package = None

    def __init__(self, members: Iterator[Member], fmt: str):
        self._members = members
        self.format = fmt
        self.notes: list[str] = []

    def members(self) -> Iterator[Member]:
        return self._members

    def owner(self, name: str) -> None:
        return None


def gzip_payload(blob: Blob, budget: Budget | None = None) -> Blob:
    """Inflate a lone ``.gz`` (not a tar) with the same bounds as archive members."""
    bound = min(MAX_MEMBER_BYTES, max(SPILL_BYTES, MAX_RATIO * blob.size))  # gzip states no size
    try:
        with decompressed(blob, "gzip stream", budget) as gz:
            return _spill(gz, bound, "gzip stream", over=LimitExceeded)
    except InputError:
        raise
    except Exception as exc:  # BadGzipFile, zlib.error, EOFError
        raise CorruptError(f"gzip stream does not inflate: {_why(exc)}") from None
