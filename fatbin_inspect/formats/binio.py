"""Bounded views over file bytes.

Every parser reads through a ``Blob``: a window ``[base, base+size)`` over an ``mmap`` or a
``bytes`` object. Offsets handed to and returned by a Blob are relative to the window, so a
member of an ``ar`` archive is parsed in place (no copy) and its offsets read as if it had been
extracted. Each read checks the bytes exist first and raises ``TruncatedError`` otherwise.
"""

from __future__ import annotations

import io
import mmap
import os
import re
import stat
import struct
from collections.abc import Iterable, Iterator
from functools import lru_cache

from fatbin_inspect.errors import LimitExceeded, TruncatedError, UnreadableError
from fatbin_inspect.formats import mapguard

Buffer = bytes | bytearray | mmap.mmap


def gaps(ranges: Iterable[tuple[int, int]], size: int, pos: int = 0) -> Iterator[tuple[int, int]]:
    """The byte ranges of ``[pos, size)`` that none of ``ranges`` (``(start, end)``, any order,
    overlapping or not) covers."""
    for start, end in sorted(ranges):
        if start > pos:
            yield pos, min(start, size)
        pos = max(pos, end)
        if pos >= size:
            return
    if pos < size:
        yield pos, size


@lru_cache(maxsize=16)
def _needle(sub: bytes) -> re.Pattern[bytes]:
    return re.compile(re.escape(sub))


class Blob:
    __slots__ = ("_owner", "base", "buf", "size")

    def __init__(self, buf: Buffer, base: int = 0, size: int | None = None, owner: object = None):
        self.buf = buf
        self.base = base
        self.size = (len(buf) - base) if size is None else size
        self._owner = owner  # keeps an mmap / temp file alive as long as views exist

    def __len__(self) -> int:
        return self.size

    def find(self, sub: bytes, start: int = 0, end: int | None = None) -> int:
        """Offset of the first ``sub`` in ``[start, end)``, or -1. A needle of 2 to 4 bytes (the
        fatbin magic) is searched with a compiled regular expression: ``bytes.find``'s skip
        search moves at most ``len(sub) + 1`` bytes a step, ``re`` scans for the first byte in a
        tight loop, faster over long ranges with no hit; one byte is
        ``memchr`` and long needles skip far, so those stay with ``find``."""
        end = self.size if end is None else min(end, self.size)
        if 2 <= len(sub) <= 4:
            m = _needle(sub).search(self.buf, self.base + start, self.base + end)
            return -1 if m is None else m.start() - self.base
        hit = self.buf.find(sub, self.base + start, self.base + end)
        return -1 if hit < 0 else hit - self.base

    def contains(self, sub: bytes, ranges: Iterable[tuple[int, int]], step: int) -> bool:
        """``sub`` in one of ``ranges`` (``(start, end)``), each searched in pieces of ``step``
        bytes that overlap by ``len(sub) - 1`` (a hit across two is whole in one), the pages
        searched (and those between the ranges) let go once ``step`` bytes of them are: a search
        of a 500 MB file holds about ``step`` bytes of its pages, not all of them."""
        n, released = len(sub), 0
        for a, b in ranges:
            for lo in range(a, b - n + 1, step):
                hi = min(b, lo + step + n - 1)
                if self.find(sub, lo, hi) >= 0:
                    return True
                if hi - released > step:
                    self.release(released, hi)
                    released = hi
        return False

    def unpack(self, st: struct.Struct, off: int, what: str = "structure") -> tuple:
        if off < 0 or off + st.size > self.size:
            raise TruncatedError(f"{what} needs {st.size} bytes, file ends first", off)
        return st.unpack_from(self.buf, self.base + off)

    def _at(self, off: int, n: int, what: str) -> int:
        """Where ``n`` bytes at ``off`` start in the buffer; they must all be there."""
        if off < 0 or n < 0 or off + n > self.size:
            raise TruncatedError(f"{what} of {n} bytes runs past the end ({self.size} bytes)", off)
        return self.base + off

    def read(self, off: int, n: int, what: str = "data") -> bytes:
        at = self._at(off, n, what)
        return bytes(self.buf[at : at + n])

    def window(self, off: int, n: int, what: str = "data") -> memoryview:
        """``read``'s bytes without the copy: a view of the buffer, which the caller releases
        (``with``) before the blob's mapping can close."""
        at = self._at(off, n, what)
        return memoryview(self.buf)[at : at + n]

    def view(self, off: int, n: int, what: str = "region") -> Blob:
        return Blob(self.buf, self._at(off, n, what), n, self._owner)

    def head(self, n: int) -> bytes:
        return bytes(self.buf[self.base : self.base + min(n, self.size)])

    def release(self, start: int, end: int) -> None:
        """Drop mapped pages of ``[start, end)`` from the resident set (no-op for bytes)."""
        if not isinstance(self.buf, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
            return
        page = mmap.PAGESIZE
        a = (self.base + start + page - 1) // page * page
        b = (self.base + end) // page * page
        if b > a:
            try:
                self.buf.madvise(mmap.MADV_DONTNEED, a, b - a)
            except (OSError, ValueError):
                pass

    def stream(self) -> BlobStream:
        return BlobStream(self)


class BlobStream(io.RawIOBase):
    """A seekable read-only file object over a Blob (for pyelftools and zipfile).

    Every ``RELEASE_EVERY`` bytes read, the mapping's pages are dropped from the resident set:
    inflating a 550 MB wheel through this stream would otherwise leave all of it resident."""

    RELEASE_EVERY = 16 << 20

    def __init__(self, blob: Blob):
        self._blob = blob
        self._pos = 0
        self._unreleased = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, off: int, whence: int = 0) -> int:
        if whence == 0:
            self._pos = off
        elif whence == 1:
            self._pos += off
        else:
            self._pos = self._blob.size + off
        return self._pos

    def read(self, n: int = -1) -> bytes:
        b = self._blob
        if self._pos >= b.size:
            return b""
        end = b.size if n is None or n < 0 else min(b.size, self._pos + n)
        data = bytes(b.buf[b.base + self._pos : b.base + end])
        self._unreleased += end - self._pos
        self._pos = end
        if self._unreleased >= self.RELEASE_EVERY:
            b.release(0, b.size)
            self._unreleased = 0
        return data

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(target))
        target[: len(data)] = data
        return len(data)


SMALL_FILE = 64 << 10


def _read_exactly(fd: int, size: int) -> bytes:
    """Read ``size`` bytes; a file that shrank meanwhile is truncated input, not a crash."""
    chunks, got = [], 0
    while got < size:
        try:
            chunk = os.read(fd, size - got)
        except OSError as exc:
            raise UnreadableError(f"cannot read: {exc.strerror or exc}") from None
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _open_regular(path: str, flags: int, cannot: str, irregular: str) -> tuple[int, os.stat_result]:
    """An open descriptor of a regular file and its ``fstat``: opened without blocking (a FIFO
    with no writer never waits), closed again and refused unless it is a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | flags)
    except OSError as exc:
        raise UnreadableError(f"{cannot}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise UnreadableError(f"{cannot}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnreadableError(irregular)
    return fd, st


def open_blob(path: str) -> Blob:
    """Map a regular file read-only. Empty files become an empty bytes Blob (mmap refuses them)."""
    fd, st = _open_regular(path, 0, "cannot open", "not a regular file (FIFO, device or socket): skipped")
    try:
        if st.st_size == 0:
            return Blob(b"")
        if st.st_size <= SMALL_FILE:  # a read is cheaper than a mapping's page fault
            data = _read_exactly(fd, st.st_size)
            return Blob(data)
        try:
            mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise UnreadableError(f"cannot map: {exc}") from None
        mapguard.watch(mm)  # a truncation while it is read costs the file, not the process
        return Blob(mm, 0, st.st_size, owner=mm)
    finally:
        os.close(fd)


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of a small regular file (a configuration or target file), at most ``limit``:
    opened without blocking (a FIFO with no writer), refused unless ``fstat`` says it is a
    regular file (a FIFO, a device, ``/dev/zero``), and refused, unread, when larger than
    ``limit``; the read stops at ``limit + 1`` bytes should it grow meanwhile."""
    fd, st = _open_regular(
        path,
        getattr(os, "O_CLOEXEC", 0),
        "cannot read",
        "not a regular file (a FIFO, device or socket): not read",
    )
    try:
        if st.st_size > limit:
            raise LimitExceeded(f"{st.st_size:,} bytes: over the {limit:,}-byte limit for this file")
        data = _read_exactly(fd, limit + 1)
        if len(data) > limit:
            raise LimitExceeded(f"grew over the {limit:,}-byte limit for this file while it was read")
        return data
    finally:
        os.close(fd)
