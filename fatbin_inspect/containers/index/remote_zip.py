"""A wheel on an index read without downloading it: its central directory, then only the
members that can hold device code, with HTTP range requests.

The zip's tail (``TAIL`` bytes: the end record and, for most wheels, the whole directory) comes
first, then the rest of the directory if it starts before the tail; ``zipfile`` reads it there.
The members wanted are those ``archives.zip_wanted`` inflates on their name (``.so``, ``.a``,
``.cubin``...) and those named with no extension at all outside ``.dist-info`` (an executable:
the reader judges it by its first block); never ``.py``, headers or data. Each is fetched whole
(local header to the next member; spans less than ``GAP`` apart in one request) into a sparse
scratch file the size of the wheel (``archives.scratch_file``: a memfd, else an unlinked
temporary file; the rest is holes), which the inventory reader reads as the wheel itself with
its directory cut to those members: the same records as the downloaded file gives for them.

A server that answers the first request with the whole body (no ranges) is read in that one
pass into the scratch file, hashed as it streams, and the index's sha256 checked: a mismatch is
refused. Range reads cannot be hashed (the file is never whole): they rely on the index's
listing, as ``pip download`` does until its download ends.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import re
import struct
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from fatbin_inspect.containers import archives
from fatbin_inspect.containers.index.transport import Transport, shown
from fatbin_inspect.errors import CorruptError, InputError, LimitExceeded
from fatbin_inspect.formats.binio import Blob

TAIL = 64 << 10  # the end record, a comment of up to 64 KiB, and most wheels' directories
GAP = 32 << 10  # wanted spans closer than this are fetched in one request, the gap with them
MAX_SPAN = 64 << 20  # ... while the request stays this small: the scratch file holds one span
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


@dataclass
class RemoteWheel:
    """A wheel read from ``url``: ``blob`` (its bytes where fetched, holes elsewhere), ``zf``
    (its directory, cut to the members fetched), ``names`` (every member's name), ``received``
    (body bytes), ``sha256`` (the digest when read in one pass and hashed: ``whole``)."""

    url: str
    size: int
    blob: Blob
    zf: zipfile.ZipFile
    names: list[str]
    received: int
    sha256: str | None = None
    metadata: str | None = None
    # ranges only: the wanted members by the span they are fetched in, and how to fetch one
    groups: list[tuple[int, int, list[zipfile.ZipInfo]]] = field(default_factory=list)
    fetch: Callable[[int, int], bytes] | None = field(default=None, repr=False)
    progress: Progress | None = field(default=None, repr=False)

    @property
    def whole(self) -> bool:
        """Read in one pass and hashed (``sha256`` set), not by range requests."""
        return self.sha256 is not None

    def batches(self) -> Iterator[list[zipfile.ZipInfo]]:
        """The wanted members a span at a time: its bytes are fetched into the scratch file
        before it is handed out and let go (``MADV_REMOVE``: the file's pages freed) when the
        caller asks for the next one, so at most one span of the wheel is held at once."""
        mm, done = self.blob.buf, 0
        total = sum(b - a for a, b, _ in self.groups)
        for a, b, infos in self.groups:
            data = self.fetch(a, b) if self.fetch is not None else b""
            self.received += len(data)
            done += len(data)
            if self.progress is not None:
                self.progress(done, total)
            mm[a:b] = data  # type: ignore[index]
            del data
            yield infos
            _free(mm, a, b)


def _free(mm: object, a: int, b: int) -> None:
    """Give the scratch file's pages of ``[a, b)`` back (whole pages only)."""
    page = mmap.PAGESIZE
    lo, hi = (a + page - 1) // page * page, b // page * page
    if hi > lo and hasattr(mmap, "MADV_REMOVE"):
        try:
            mm.madvise(mmap.MADV_REMOVE, lo, hi - lo)  # type: ignore[attr-defined]
        except (OSError, ValueError):
            pass


def wanted(info: zipfile.ZipInfo) -> bool:
    """A member fetched: a name that may hold device code, or an extensionless file outside
    ``.dist-info`` (judged by its first block, as the reader does)."""
    if archives.zip_wanted(info):
        return True
    folder, _, base = info.filename.rpartition("/")
    return (
        not info.is_dir()
        and "." not in base
        and not folder.endswith(".dist-info")
        and info.file_size >= archives.MIN_CONTENT_BYTES
    )


def spans(infos: list[zipfile.ZipInfo], cd_start: int) -> list[tuple[int, int, zipfile.ZipInfo]]:
    """Each member's bytes on disk, from its local header to the next member (or the
    directory): ``(start, end, info)`` in file order."""
    ordered = sorted(infos, key=lambda i: i.header_offset)
    out = []
    for i, info in enumerate(ordered):
        end = ordered[i + 1].header_offset if i + 1 < len(ordered) else cd_start
        if not info.header_offset <= end <= cd_start:
            raise CorruptError(f"zip member {info.filename!r} overlaps another", info.header_offset)
        out.append((info.header_offset, end, info))
    return out


def merged(ranges: list[tuple[int, int]], gap: int = GAP, most: int = MAX_SPAN) -> list[tuple[int, int]]:
    """``ranges`` (sorted) joined where less than ``gap`` apart, while the joined span stays
    within ``most`` bytes (a larger member is a span of its own)."""
    out: list[tuple[int, int]] = []
    for a, b in ranges:
        if out and a - out[-1][1] < gap and max(b, out[-1][1]) - out[-1][0] <= most:
            out[-1] = (out[-1][0], max(b, out[-1][1]))
        else:
            out.append((a, b))
    return out


Progress = Callable[[int, "int | None"], None]  # (bytes done, bytes in all or None)


def open_wheel(
    transport: Transport, url: str, sha256: str | None, progress: Progress | None = None
) -> RemoteWheel:
    """``url``'s wheel, read as the module says, telling ``progress`` of the wheel bytes as
    they come; an ``InputError`` names the URL."""
    before = transport.received
    stream = transport.stream(url, {"Range": f"bytes=-{TAIL}"})
    try:
        if stream.status == 200:  # no ranges: this is the whole file
            declared = stream.headers.get("content-length")
            total = int(declared) if declared and declared.isdigit() else None
            return _whole(transport, url, sha256, stream.chunks(), before, progress, total)
        size, start = _content_range(stream.headers.get("content-range", ""), url)
        tail = b"".join(stream.chunks())
    finally:
        stream.close()
    if start + len(tail) != size:
        raise CorruptError(
            f"{shown(url)}: the server sent {len(tail)} bytes of a range it said ends at {size}"
        )

    def fetch(a: int, b: int) -> bytes:
        return _range(transport, url, a, b)

    cd_start = _directory_start(tail, start, size, fetch)
    head = fetch(cd_start, start) if cd_start < start else b""
    with archives.scratch_file(size) as scratch:  # a sparse file: the holes cost nothing
        os.ftruncate(scratch.fileno(), size)
        os.pwrite(scratch.fileno(), head + tail, start - len(head))
        mm = mmap.mmap(scratch.fileno(), 0, access=mmap.ACCESS_WRITE)  # (writable: MADV_REMOVE)
    blob = Blob(mm, 0, size, owner=mm)
    zf = archives.open_zip(blob.stream())  # the directory, from the bytes written so far
    every = spans(zf.infolist(), cd_start)
    chosen = [s for s in every if wanted(s[2])]
    meta = next((s for s in every if _is_metadata(s[2])), None)
    if meta is not None:
        mm[meta[0] : meta[1]] = fetch(meta[0], meta[1])
    wheel = _wheel(url, blob, zf, 0)
    wheel.groups = [
        (a, b, [info for x, y, info in chosen if a <= x and y <= b])
        for a, b in merged([(a, b) for a, b, _ in chosen])
    ]
    wheel.fetch = fetch
    wheel.received = transport.received - before
    wheel.progress = progress
    return wheel


def _wheel(
    url: str, blob: Blob, zf: zipfile.ZipFile, received: int, sha256: str | None = None
) -> RemoteWheel:
    infos = zf.infolist()
    meta = next((i for i in infos if _is_metadata(i)), None)
    text = archives.read_metadata_member(zf, meta).decode("utf-8", "replace") if meta is not None else None
    return RemoteWheel(url, blob.size, blob, zf, [i.filename for i in infos], received, sha256, text)


def _is_metadata(info: zipfile.ZipInfo) -> bool:
    """The wheel's own ``NAME-VERSION.dist-info/METADATA``."""
    return info.filename.endswith(".dist-info/METADATA") and info.filename.count("/") == 1


_EOCD = struct.Struct("<4s4H2LH")
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")


def _directory_start(tail: bytes, start: int, size: int, fetch: Callable[[int, int], bytes]) -> int:
    """Where the central directory starts, from the end record in ``tail`` (the file's bytes
    from ``start``; its zip64 record fetched when it lies before them)."""
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + _EOCD.size > len(tail):
        raise CorruptError("zip end record not found in the file's last 64 KiB: not a wheel")
    _sig, _disk, _cd_disk, _n_here, _n, _cd_size, cd_offset, _comment = _EOCD.unpack_from(tail, at)
    if cd_offset == 0xFFFFFFFF and at >= _ZIP64_LOCATOR.size:
        loc = _ZIP64_LOCATOR.unpack_from(tail, at - _ZIP64_LOCATOR.size)
        if loc[0] == b"PK\x06\x07":
            rec_at = loc[2]
            rec = tail[rec_at - start :] if rec_at >= start else fetch(rec_at, rec_at + _ZIP64_EOCD.size)
            if len(rec) >= _ZIP64_EOCD.size and rec[:4] == b"PK\x06\x06":
                cd_offset = _ZIP64_EOCD.unpack_from(rec)[-1]
    if not 0 <= cd_offset <= start + at:
        raise CorruptError(f"zip central directory offset {cd_offset} is past its end record", start + at)
    return cd_offset


def _content_range(value: str, url: str) -> tuple[int, int]:
    """(total size, first byte) of a 206 answer."""
    m = _CONTENT_RANGE.fullmatch(value.strip())
    if m is None:
        raise CorruptError(f"{shown(url)}: a partial answer without a usable Content-Range ({value[:80]!r})")
    return int(m.group(3)), int(m.group(1))


def _range(transport: Transport, url: str, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of ``url``, exactly."""
    stream = transport.stream(url, {"Range": f"bytes={start}-{end - 1}"})
    try:
        if stream.status != 206:
            raise CorruptError(f"{shown(url)}: the server stopped answering range requests")
        got = _content_range(stream.headers.get("content-range", ""), url)[1]
        data = b"".join(stream.chunks())
    finally:
        stream.close()
    if got != start or len(data) != end - start:
        raise CorruptError(f"{shown(url)}: asked for bytes {start}-{end - 1}, the server sent others")
    return data


def _whole(
    transport: Transport,
    url: str,
    sha256: str | None,
    chunks: Iterator[bytes],
    before: int,
    progress: Progress | None = None,
    total: int | None = None,
) -> RemoteWheel:
    """The whole wheel from one streaming pass, hashed as it comes, into a scratch file."""
    digest = hashlib.sha256()
    scratch = archives.scratch_file(archives.SPILL_BYTES)
    size = 0
    try:
        for piece in chunks:
            size += len(piece)
            if size > archives.MAX_MEMBER_BYTES:
                raise LimitExceeded(f"{shown(url)}: over {archives.MAX_MEMBER_BYTES:,} bytes")
            digest.update(piece)
            scratch.write(piece)
            if progress is not None:
                progress(size, total)
        scratch.flush()
        found = digest.hexdigest()
        if sha256 is not None and found != sha256:
            raise InputError(
                f"{shown(url)}: sha256 mismatch: the index says {sha256}, the file is {found}: refused"
            )
        if size == 0:
            raise CorruptError(f"{shown(url)}: the server sent an empty file")
        mm = mmap.mmap(scratch.fileno(), 0, access=mmap.ACCESS_READ)
    finally:
        scratch.close()
    blob = Blob(mm, 0, size, owner=mm)
    return _wheel(url, blob, archives.open_zip(blob.stream()), transport.received - before, found)
