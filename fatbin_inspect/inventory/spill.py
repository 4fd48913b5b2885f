"""What a worker encodes, handed to its parent through anonymous memory files (Linux ``memfd``).

A process decoding a slice of a large file (``decoding._iter_parallel``: a worker, or the parent
itself) turns it into its final bytes (``--kernels --format json``: ~0.7 MB a slice, 11.5 MB
for one of libtorch_cuda.so's fatbins). Pickled whole, those bytes were held by the worker, the
pipe and the parent at once; compressed first (``render.record_pieces.Packed``), they cost zstd at
both ends and a fresh buffer, faulted in, for each piece. Here the parent makes a ring of memfds
before the workers fork (they inherit them); the process that decodes a slice writes its bytes
into the slice's slot with ``pwrite`` and returns only where they lie (``Spilled``), and the
parent reads them back with ``pread``. Neither maps the files, so their pages are in neither
resident set (but are memory all the same, as a cgroup counts it); a slot holds one slice's
bytes at a time, at most ``CAP`` of them (past it the rest is compressed), so the memory is
bounded by the ring's length.

Slice ``i`` writes slot ``i % len(ring)``, the ring as long as the window of
``inventory.workers.in_order`` (slices taken and not yet yielded): slice ``i + len(ring)`` can
be taken only once slice ``i`` was yielded and the writer asked for what follows it, so a slot
is never rewritten while it is read. Only with workers made by ``fork`` (a spawned or
forkserver worker has no such descriptors), elsewhere ``open_ring`` is None.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

KEEP = 2 << 20  # a slot holding more than this is emptied before it is written again
# the most of a slice's bytes its slot takes; the rest is compressed (render.record_pieces.Packed).
# Memory-file pages are in no process's RSS but are memory all the same: libtorch_cuda.so
# --kernels json (one fatbin 11.5 MB of JSON, 39 over 1 MiB of 475), peak tree RSS + memory
# files: uncapped 133 + 15 MB, 2 MiB 137 + 10 MB, 1 MiB 137 + 5 MB (the same CPU and wall time)
CAP = 1 << 20
PIECE = 1 << 20  # what Spilled.pieces reads at a time


class Spilled:
    """``size`` bytes at ``start`` of the memory file ``fd`` (a descriptor both processes hold)."""

    __slots__ = ("fd", "size", "start")

    def __init__(self, fd: int, start: int, size: int):
        self.fd, self.start, self.size = fd, start, size

    def pieces(self) -> Iterator[bytes]:
        pos, end = self.start, self.start + self.size
        while pos < end:
            piece = os.pread(self.fd, min(PIECE, end - pos), pos)
            if not piece:  # pragma: no cover - the file was cut under the reader
                raise OSError(f"memory file {self.fd}: {end - pos:,} bytes missing at {pos:,}")
            yield piece
            pos += len(piece)


class Sink:
    """A worker's writer into one slot, from its start."""

    __slots__ = ("fd", "pos")

    def __init__(self, fd: int):
        self.fd, self.pos = fd, 0
        if os.fstat(fd).st_size > KEEP:
            os.ftruncate(fd, 0)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            n = os.pwrite(self.fd, view, self.pos)
            self.pos += n
            view = view[n:]

    def room(self, n: int) -> bool:
        """Whether ``n`` more bytes stay within ``CAP``."""
        return self.pos + n <= CAP

    def since(self, start: int) -> Spilled:
        """What was written from ``start`` on."""
        return Spilled(self.fd, start, self.pos - start)


_current: Sink | None = None


def current() -> Sink | None:
    """The slot this worker writes its slice into now, if any (``writing``)."""
    return _current


@contextlib.contextmanager
def writing(fd: int | None) -> Iterator[None]:
    """Within: ``current()`` writes into slot ``fd`` (None: nothing is spilled)."""
    global _current
    _current = None if fd is None else Sink(fd)
    try:
        yield
    finally:
        _current = None


def open_ring(n: int) -> tuple[int, ...] | None:
    """``n`` memory files for workers forked after this, or None where there can be none."""
    if not hasattr(os, "memfd_create") or _start_method() != "fork":
        return None
    fds: list[int] = []
    try:
        for _ in range(n):
            fds.append(os.memfd_create("fatbin-inspect-slice", os.MFD_CLOEXEC))
    except OSError:  # no memfd here (an old kernel, a seccomp filter)
        close_ring(tuple(fds))
        return None
    return tuple(fds)


def close_ring(ring: tuple[int, ...] | None) -> None:
    for fd in ring or ():
        with contextlib.suppress(OSError):
            os.close(fd)


def _start_method() -> str:
    """How the pool will make its workers: the method set, else the platform's default."""
    import multiprocessing  # (not imported by a warm scan, which reads this module's records)

    return multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_all_start_methods()[0]
