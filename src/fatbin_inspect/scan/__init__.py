"""Scan environments, folders, wheels and image tarballs for device code, per distribution.

Pipeline: roots (``environment``) -> walk with the stat of each entry (``environment.iter_stat``)
-> cache lookup (``cache``) -> quick head test in this process -> misses in batches to a process
pool (``worker``: magic test, then the inventory) -> attribution (``distributions``). Only files
that hold device code, or could not be read, come back as records; at most ``jobs * 2`` batches are
in flight, so memory does not grow with the size of the tree, only with the records found.

With ``ScanOptions.summary`` the records are ``coverage.FileSummary`` (all the matrix needs); a warm
scan then reads neither a file nor a full record, and imports none of the parsers.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, List, Optional, Tuple

from fatbin_inspect.model import FileError, FileReport
from fatbin_inspect.scan.cache import MISS, ScanCache, default_dir
from fatbin_inspect.scan.distributions import Attributor, innermost_wheel, wheel_distribution
from fatbin_inspect.scan.environment import Root, iter_stat, resolve_roots

if TYPE_CHECKING:  # the parsers are imported only when a file has to be read
    from fatbin_inspect.inventory import Options

MIN_SIZE = 64  # smaller than a fatbin header + one entry header, or than a PTX header
BATCH_FILES = 64
BATCH_BYTES = 64 << 20

ProgressFn = Callable[[int, int, int], None]  # (files done, files seen, bytes done)


@dataclass(frozen=True)
class ScanOptions:
    inventory: Optional["Options"] = None  # None: ``inventory.Options()``
    jobs: int = 0  # worker processes; 0 = every available core, 1 = no pool
    cache_dir: Optional[str] = "default"  # None: no cache; "default": user cache dir / env override
    summary: bool = False  # records are ``coverage.FileSummary`` (enough for the matrix), not FileReport


@dataclass(frozen=True)
class ScanStats:
    files: int = 0  # regular files seen
    bytes: int = 0
    inspected: int = 0  # passed the head test (binary, archive, fatbin or PTX)
    cache_hits: int = 0
    skipped: int = 0  # symlinks, special files
    cache: Optional[str] = None  # the cache file used, if any


@dataclass(frozen=True)
class ScanResult:
    roots: Tuple[Root, ...]
    reports: Tuple[FileReport, ...]  # sorted by path; ``distribution`` set where metadata claims the file
    # (``coverage.FileSummary`` records with ``ScanOptions.summary``)
    stats: ScanStats


def _jobs(n: int) -> int:
    if n > 0:
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _options_fingerprint(o: "Options") -> str:
    return f"k{int(o.kernels)}d{int(o.details)}r{int(o.resources)}p{int(o.probe_small)}h{int(o.scan_hidden)}m{o.members}"


class _Scanner:
    def __init__(self, opts: ScanOptions, progress: Optional[ProgressFn]):
        if opts.inventory is None:
            from fatbin_inspect.inventory import Options

            opts = dataclasses.replace(opts, inventory=Options())
        self.opts = opts
        self.progress = progress
        cache_dir = default_dir() if opts.cache_dir == "default" else opts.cache_dir
        self.cache = ScanCache(cache_dir, _options_fingerprint(opts.inventory))
        self.full = not opts.summary
        self.attributor = Attributor()
        self.reports: List[FileReport] = []
        self.stats = dict(files=0, bytes=0, inspected=0, cache_hits=0, skipped=0)
        self.done = 0
        self.bytes_done = 0
        self.jobs = _jobs(opts.jobs)
        self.pool = None
        self.inflight = set()
        self.batch: List[Tuple[str, tuple]] = []
        self.batch_bytes = 0
        self.apaths = {}  # path in a batch -> its absolute path (the cache key)

    # ------------------------------------------------------------------ results
    def _tick(self, n: int, nbytes: int) -> None:
        self.done += n
        self.bytes_done += nbytes
        if self.progress:
            self.progress(self.done, self.stats["files"], self.bytes_done)

    def _accept(self, path: str, records: Iterable[FileReport]) -> None:
        for rec in records:
            if "!" in rec.path:
                dist = innermost_wheel(rec.path)
            elif path.lower().endswith(".whl"):
                dist = wheel_distribution(path)
            else:
                dist = self.attributor.distribution(path)
            self.reports.append(dataclasses.replace(rec, distribution=dist) if dist else rec)

    def _finish(self, results) -> None:
        for path, key, records in results:
            self.cache.put(self.apaths.pop(path, None) or os.path.abspath(path), key, records, path)
            if not self.full:
                from fatbin_inspect.coverage import summarize

                records = tuple(summarize(r) for r in records)
            self._accept(path, records)
            self._tick(1, key[0])

    # ------------------------------------------------------------------- batches
    def _flush(self) -> None:
        if not self.batch:
            return
        from fatbin_inspect.scan import worker

        batch, self.batch, self.batch_bytes = self.batch, [], 0
        if self.jobs == 1:
            self._finish(worker.inspect_batch(batch, self.opts.inventory))
            return
        if self.pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
            self.pool = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context(method))
        while len(self.inflight) >= self.jobs * 2:
            self._drain()
        self.inflight.add(self.pool.submit(worker.inspect_batch, batch, self.opts.inventory))

    def _drain(self) -> None:
        from concurrent.futures import FIRST_COMPLETED, wait

        done, self.inflight = wait(self.inflight, return_when=FIRST_COMPLETED)
        for fut in done:
            self._finish(fut.result())

    def _file(self, path: str, apath: str, st: Optional[os.stat_result]) -> None:
        """One regular file: ``apath`` its absolute path, ``st`` its stat when the walk had it."""
        if st is None:
            try:
                st = os.stat(path)
            except OSError as exc:
                self.reports.append(FileReport(path=path, format="unknown", size=0,
                                               error=FileError(f"unreadable: {exc.strerror}")))
                return
        size = st.st_size
        self.stats["files"] += 1
        self.stats["bytes"] += size
        if size < MIN_SIZE:
            self._tick(1, size)
            return
        key = (size, st.st_mtime_ns, st.st_ino)
        cached = self.cache.get(apath, key, path, self.full)
        if cached is not MISS:
            if cached is not None:
                self.stats["cache_hits"] += 1
                self.stats["inspected"] += 1
                self._accept(path, cached)
            self._tick(1, size)
            return
        from fatbin_inspect.scan import worker

        try:
            fmt = worker.head_format(path)
        except OSError as exc:
            self.reports.append(FileReport(path=path, format="unknown", size=size,
                                           error=FileError(f"cannot open: {exc.strerror}")))
            return
        if fmt == worker.NOT_DEVICE:
            self.cache.put(apath, key, None)  # remembered too: a warm scan reads no file at all
            self._tick(1, size)
            return
        self.stats["inspected"] += 1
        self.batch.append((path, key))
        self.apaths[path] = apath
        self.batch_bytes += size
        if len(self.batch) >= BATCH_FILES or self.batch_bytes >= BATCH_BYTES:
            self._flush()

    def run(self, roots: Tuple[Root, ...]) -> ScanResult:
        try:
            for root in roots:
                self.cache.preload(os.path.abspath(root.path))
                for path, apath, st, skip in iter_stat(root.path):
                    if skip is None:
                        self._file(path, apath, st)
                    elif skip.startswith("unreadable"):
                        self.reports.append(FileReport(path=path, format="unknown", size=0, error=FileError(skip)))
                    else:
                        self.stats["skipped"] += 1
            self._flush()
            while self.inflight:
                self._drain()
        finally:
            if self.pool is not None:
                for fut in self.inflight:
                    fut.cancel()
                self.pool.shutdown(wait=True)
            self.cache.close()
        self.reports.sort(key=lambda r: r.path)
        stats = ScanStats(cache=self.cache.path if self.cache.path else None, **self.stats)
        return ScanResult(roots, tuple(self.reports), stats)


def scan(paths: Iterable[str] = (), opts: ScanOptions = ScanOptions(),
         progress: Optional[ProgressFn] = None) -> ScanResult:
    """Scan ``paths`` (none: the running interpreter's site-packages) and return device-code records."""
    return _Scanner(opts, progress).run(resolve_roots(paths))
