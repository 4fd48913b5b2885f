"""The texts a scan with an encoder keeps: where each is, and how they are read back in order.

A fresh text (``cache.pack_text``ed by the worker that made it) is spilled to an unlinked
temporary file (``SpillLoc``); a cached one stays in its cache row (``RowLoc``) and is unpacked
by the ``Unpacker``'s thread, most of them while the walk goes on. ``TextStore.texts`` streams
them back in the order asked, so memory grows with neither the tree nor the records.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Iterator, Sequence
from typing import IO, Any, NamedTuple

from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.scanning.cache import (
    MISS,
    ScanCache,
    pack_text,
    packed_size,
    stat_key,
    text_frames,
    texts_size,
    unpack,
    unpack_texts,
)
from fatbin_inspect.scanning.encoded import Encoder


class TextJob:
    """One cache row's texts: packed (``Hit.packed_texts``), and unpacked once ``ready``."""

    __slots__ = ("hit", "n", "out", "packed", "ready", "sent", "size")

    def __init__(self, hit: Any, packed: tuple[Any, ...], size: int) -> None:
        import threading

        self.hit, self.packed, self.n, self.size = hit, packed, len(hit.summary), size
        self.out: Any = None
        self.sent = False  # handed to the thread (its bytes held against ``Unpacker.AHEAD``)
        self.ready = threading.Event()

    def result(self) -> Any:
        """The texts (``cache.unpack_texts``), or ``MISS``; unpacked here when the thread has
        not got to them, or they were let go (a row whose texts are written in two runs)."""
        if self.sent:
            self.ready.wait()
        out = self.out
        return unpack_texts(self.packed, self.n) if out is None else out


class SpillLoc(NamedTuple):
    """A text in the spill file: its offset, its frame's bytes, its text's bytes."""

    offset: int
    frame: int
    size: int


class RowLoc(NamedTuple):
    """A text still in its cache row: the row's job, its place there, the path shown, and the
    absolute path and key of the file (None for a text of the scan's whole answer)."""

    job: TextJob
    at: int
    shown: str
    apath: str | None
    key: tuple[Any, ...] | None


class Unpacker:
    """Unpacks cache rows' texts on one thread, in the order the walk found them, while the walk
    goes on (libzstd lets go of the GIL, so a warm scan's unpacking runs on the second core, not
    after the walk); at most ``AHEAD`` unpacked bytes are held that were not yet written, so
    memory does not grow with the tree. The rows' queries run on the scan's thread, which owns
    the database connection."""

    AHEAD = 64 << 20

    def __init__(self) -> None:
        self.held = 0
        self.waiting: collections.deque[TextJob] = collections.deque()
        self.jobs: Any = None  # a queue.SimpleQueue, with the thread, at the first row
        self.closed = False

    def add(self, hit: Any) -> TextJob | None:
        """A job for ``hit``'s texts; None when the row holds none for this encoder (or sizes
        that do not parse: its texts are made from its records instead)."""
        packed = hit.packed_texts()
        size = None if packed is MISS else texts_size(packed, len(hit.summary))
        if size is None:
            return None
        job = TextJob(hit, packed, size)
        self.waiting.append(job)
        self._send()
        return job

    def done(self, job: TextJob) -> None:
        """``job``'s texts are written: its bytes let go, and more rows sent."""
        if job.sent and job.out is not None:
            self.held -= job.size
            job.out = None
        self._send()

    def _send(self) -> None:
        while self.waiting and (self.held + self.waiting[0].size <= self.AHEAD or not self.held):
            job = self.waiting.popleft()
            if self.jobs is None:
                import queue
                import threading

                self.jobs = queue.SimpleQueue()
                threading.Thread(target=self._run, args=(self.jobs,), daemon=True).start()
            job.sent = True
            self.held += job.size
            self.jobs.put(job)

    def _run(self, jobs: Any) -> None:
        while (job := jobs.get()) is not None:
            try:
                job.out = MISS if self.closed else unpack_texts(job.packed, job.n)
            except MemoryError:  # (unpack_texts catches everything else a row can cause)
                job.out = MISS
            job.ready.set()

    def close(self) -> None:
        """No more rows: the thread skips what is left and ends."""
        self.closed = True
        self.waiting.clear()
        if self.jobs is not None:
            self.jobs.put(None)


class TextStore:
    """Where each kept record's text is (``locs``, in the order kept), and the spill file."""

    def __init__(self, cache: ScanCache, inventory: Any) -> None:
        self.cache = cache
        self.inventory = inventory  # the scan's ``ScanOptions.inventory``, to read a file again
        self.unpacker = Unpacker()
        self.spill: IO[bytes] | None = None  # the unlinked file holding the fresh texts
        self.locs: list[SpillLoc | RowLoc] = []

    def keep(self, text: bytes | RowLoc) -> None:
        """A record's text: where it is in its cache row (read when it is written out), or
        packed bytes, spilled."""
        if type(text) is RowLoc:
            self.locs.append(text)
            return
        assert isinstance(text, bytes)
        if self.spill is None:
            import tempfile

            self.spill = tempfile.TemporaryFile(prefix="fatbin-inspect-scan-")
        self.locs.append(SpillLoc(self.spill.tell(), len(text), packed_size(text)))
        self.spill.write(text)

    def frames(self) -> list[bytes] | None:
        """Every text's packed frame, in the order kept; None when a row's do not parse."""
        frames: list[bytes] = []
        rows: dict[int, list[bytes] | None] = {}
        for loc in self.locs:
            if type(loc) is SpillLoc:
                assert self.spill is not None
                self.spill.seek(loc.offset)
                frames.append(self.spill.read(loc.frame))
                continue
            assert type(loc) is RowLoc
            job = loc.job
            if id(job) not in rows:
                rows[id(job)] = text_frames(job.packed, job.n)
            row = rows[id(job)]
            if row is None:
                return None
            frames.append(row[loc.at])
        return frames

    def texts(self, order: Sequence[int], encoder: Encoder) -> Iterator[bytes]:
        """The texts kept ``order``-th, in that order, from the spill file or a cache row (a row
        whose texts do not validate is encoded again from its records); then the spill file
        (unlinked) and the cache are closed."""
        row: TextJob | None = None
        texts: Any = None
        try:
            for i in order:
                loc = self.locs[i]
                if type(loc) is SpillLoc:
                    yield self._spilled(loc)
                    continue
                assert type(loc) is RowLoc
                if loc.job is not row:
                    if row is not None:
                        self.unpacker.done(row)
                    row = loc.job
                    texts = self._cached(row.hit, row.result(), loc, encoder)
                yield texts[loc.at]
        finally:
            self.unpacker.close()
            if self.spill is not None:
                self.spill.close()
            self.cache.close()

    def _spilled(self, loc: SpillLoc) -> bytes:
        """One text from the spill file (unlinked, this process's alone: only a disk error fails)."""
        from fatbin_inspect.errors import InputError

        if self.spill is None:
            raise InputError("the scan's spill file is gone")
        self.spill.seek(loc.offset)
        text = unpack(self.spill.read(loc.frame), loc.size)
        if text is None:
            raise InputError(f"{self.spill.name}: the scan's spill file does not read back")
        return text

    def _cached(self, hit: Any, unpacked: Any, loc: RowLoc, encoder: Encoder) -> list[bytes]:
        """The texts of a cache row (``unpacked``: ``cache.unpack_texts`` of it); a row whose
        texts no longer validate is encoded again from its records, or from the file read again
        here when the row has none (a row a scan with texts wrote), and kept."""
        if unpacked is not MISS:
            return unpacked
        reports = hit.reports(loc.shown)
        assert loc.apath is not None and loc.key is not None  # (a whole answer's texts validated)
        if reports is MISS:
            reports = self._reread(loc.shown, loc.apath, loc.key, len(hit.summary))
        texts = [encoder(r) for r in reports]
        self.cache.put(loc.apath, loc.key, reports, [pack_text(t) for t in texts], base=loc.shown)
        return texts

    def _reread(self, shown: str, apath: str, key: tuple[Any, ...], n: int) -> tuple[FileReport, ...]:
        """The records of a file whose row was taken (its ``n`` summaries are in the answer
        already), read again in this process: the same key before and after, and ``n`` records.
        Else the row is dropped (the next scan reads the file) and the scan stops."""
        import fatbin_inspect.scanning.worker as worker
        from fatbin_inspect.errors import InputError
        from fatbin_inspect.inventory.options import as_options

        def same() -> bool:
            try:
                return stat_key(os.stat(apath)) == tuple(key)
            except OSError:
                return False

        if same():
            reports = worker.inspect_file(shown, as_options(self.inventory))
            if len(reports) == n and same():
                return reports
        self.cache.forget(apath)
        raise InputError(f"{self.cache.path}: the scan cache changed while it was read; scan again")
