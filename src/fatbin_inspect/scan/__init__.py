"""Scan environments, folders, wheels and image tarballs for device code, per distribution.

Pipeline: roots (``environment``) -> walk (``walk.iter_files``) -> stat + quick head test in this
process -> cache lookup (``cache``) -> misses in batches to a process pool (``worker``: magic test,
then the inventory) -> attribution (``distributions``). Only files that hold device code, or could
not be read, come back as records; at most ``jobs * 2`` batches are in flight, so memory does not
grow with the size of the tree, only with the records found.
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Callable, Iterable, List, Optional, Tuple

from fatbin_inspect.inventory import Options
from fatbin_inspect.model import FileError, FileReport
from fatbin_inspect.scan import worker
from fatbin_inspect.scan.cache import MISS, ScanCache, default_dir, stat_key
from fatbin_inspect.scan.distributions import Attributor, innermost_wheel, wheel_distribution
from fatbin_inspect.scan.environment import Root, resolve_roots
from fatbin_inspect.walk import iter_files

MIN_SIZE = 64  # smaller than a fatbin header + one entry header, or than a PTX header
BATCH_FILES = 64
BATCH_BYTES = 64 << 20

ProgressFn = Callable[[int, int, int], None]  # (files done, files seen, bytes done)


@dataclass(frozen=True)
class ScanOptions:
    inventory: Options = Options()
    jobs: int = 0  # worker processes; 0 = every available core, 1 = no pool
    cache_dir: Optional[str] = "default"  # None: no cache; "default": user cache dir / env override


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
    stats: ScanStats


def _jobs(n: int) -> int:
    if n > 0:
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _options_fingerprint(o: Options) -> str:
    return f"k{int(o.kernels)}d{int(o.details)}r{int(o.resources)}p{int(o.probe_small)}h{int(o.scan_hidden)}m{o.members}"


class _Scanner:
    def __init__(self, opts: ScanOptions, progress: Optional[ProgressFn]):
        self.opts = opts
        self.progress = progress
        cache_dir = default_dir() if opts.cache_dir == "default" else opts.cache_dir
        self.cache = ScanCache(cache_dir, _options_fingerprint(opts.inventory))
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
            self.cache.put(os.path.abspath(path), key, records)
            self._accept(path, records)
            self._tick(1, key[0])

    # ------------------------------------------------------------------- batches
    def _flush(self) -> None:
        if not self.batch:
            return
        batch, self.batch, self.batch_bytes = self.batch, [], 0
        if self.jobs == 1:
            self._finish(worker.inspect_batch(batch, self.opts.inventory))
            return
        if self.pool is None:
            import multiprocessing

            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
            self.pool = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context(method))
        while len(self.inflight) >= self.jobs * 2:
            self._drain(FIRST_COMPLETED)
        self.inflight.add(self.pool.submit(worker.inspect_batch, batch, self.opts.inventory))

    def _drain(self, how) -> None:
        done, self.inflight = wait(self.inflight, return_when=how)
        for fut in done:
            self._finish(fut.result())

    def _file(self, path: str) -> None:
        try:
            st = os.stat(path)
        except OSError as exc:
            self.reports.append(FileReport(path=path, format="unknown", size=0,
                                           error=FileError(f"unreadable: {exc.strerror}")))
            return
        self.stats["files"] += 1
        self.stats["bytes"] += st.st_size
        if st.st_size < MIN_SIZE:
            self._tick(1, st.st_size)
            return
        key = stat_key(st)
        apath = os.path.abspath(path)
        cached = self.cache.get(apath, key)
        if cached is not MISS:
            if cached is not None:
                self.stats["cache_hits"] += 1
                self.stats["inspected"] += 1
                self._accept(path, cached)
            self._tick(1, st.st_size)
            return
        try:
            fmt = worker.head_format(path)
        except OSError as exc:
            self.reports.append(FileReport(path=path, format="unknown", size=st.st_size,
                                           error=FileError(f"cannot open: {exc.strerror}")))
            return
        if fmt == worker.NOT_DEVICE:
            self.cache.put(apath, key, None)  # remembered too: a warm scan reads no file at all
            self._tick(1, st.st_size)
            return
        self.stats["inspected"] += 1
        self.batch.append((path, key))
        self.batch_bytes += st.st_size
        if len(self.batch) >= BATCH_FILES or self.batch_bytes >= BATCH_BYTES:
            self._flush()

    def run(self, roots: Tuple[Root, ...]) -> ScanResult:
        try:
            for root in roots:
                self.cache.preload(os.path.abspath(root.path))
                for path, skip in iter_files(root.path):
                    if skip is None:
                        self._file(path)
                    elif skip.startswith("unreadable"):
                        self.reports.append(FileReport(path=path, format="unknown", size=0, error=FileError(skip)))
                    else:
                        self.stats["skipped"] += 1
            self._flush()
            while self.inflight:
                self._drain(FIRST_COMPLETED)
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
