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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Optional, Tuple, Union

from fatbin_inspect.formats.model import FileError, FileReport
from fatbin_inspect.scan.cache import MISS, ScanCache, default_dir
from fatbin_inspect.scan.distributions import Attributor, innermost_wheel, wheel_distribution
from fatbin_inspect.scan.environment import Root, iter_stat, resolve_roots

if TYPE_CHECKING:  # the parsers are imported only when a file has to be read
    from fatbin_inspect.inventory.core import Options

MIN_SIZE = 64  # smaller than a fatbin header + one entry header, or than a PTX header
BATCH_FILES = 64
BATCH_BYTES = 64 << 20
# a zip this large (a wheel) is split into about ``jobs * 2`` units of its members, each of at
# least SPAN_BYTES inflated, so that one 500 MB wheel does not keep one worker busy while the
# others idle; the records are put together again in member order (same records, one cache entry)
SPLIT_BYTES = 64 << 20
SPAN_BYTES = 32 << 20

ProgressFn = Callable[[int, int, int], None]  # (files done, files seen, bytes done)


# the ``inventory.Options`` fields the records depend on (the cache fingerprint), with their
# defaults (a test holds them equal to Options'), so options given as a dict need no parser import
FINGERPRINT_DEFAULTS = dict(
    kernels=False, details=False, resources=True, probe_small=False, scan_hidden=True, members="device"
)


@dataclass(frozen=True)
class ScanOptions:
    # an ``inventory.Options``, or a dict of its fields (built where a file is read: a warm scan
    # then imports no parser); None: the defaults
    inventory: Options | Mapping[str, Any] | None = None
    jobs: int = 0  # worker processes; 0 = every available core, 1 = no pool
    cache_dir: str | None = "default"  # None: no cache; "default": user cache dir / env override
    summary: bool = False  # records are ``coverage.FileSummary`` (enough for the matrix), not FileReport
    # "local": a process pool on this machine; "dask": the same work units sent to the Dask
    # distributed cluster at ``scheduler`` (tcp://HOST:PORT), whose workers must see the paths
    executor: str = "local"
    scheduler: str | None = None


@dataclass(frozen=True)
class ScanStats:
    files: int = 0  # regular files seen
    bytes: int = 0
    inspected: int = 0  # passed the head test (binary, archive, fatbin or PTX)
    cache_hits: int = 0
    skipped: int = 0  # symlinks, special files
    cache: str | None = None  # the cache file used, if any


@dataclass(frozen=True)
class ScanResult:
    roots: tuple[Root, ...]
    reports: tuple[FileReport, ...]  # sorted by path; ``distribution`` set where metadata claims the file
    # (``coverage.FileSummary`` records with ``ScanOptions.summary``)
    stats: ScanStats


def _jobs(n: int) -> int:
    if n > 0:
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _options_fingerprint(o: Options | Mapping[str, Any] | None) -> str:
    o = o if o is not None else {}
    v = {k: o.get(k, d) if isinstance(o, Mapping) else getattr(o, k) for k, d in FINGERPRINT_DEFAULTS.items()}
    return (
        f"k{int(v['kernels'])}d{int(v['details'])}r{int(v['resources'])}p{int(v['probe_small'])}"
        f"h{int(v['scan_hidden'])}m{v['members']}"
    )


class _Scanner:
    def __init__(self, opts: ScanOptions, progress: ProgressFn | None):
        self.opts = opts
        self.progress = progress
        cache_dir = default_dir() if opts.cache_dir == "default" else opts.cache_dir
        self.cache = ScanCache(cache_dir, _options_fingerprint(opts.inventory))
        self.full = not opts.summary
        self.attributor = Attributor()
        self.reports: list[FileReport] = []
        self.stats = dict(files=0, bytes=0, inspected=0, cache_hits=0, skipped=0)
        self.done = 0
        self.bytes_done = 0
        self.client = None
        if opts.executor == "dask":
            self.client = _dask_client(opts.scheduler)
            # in flight and split as for a local pool of that many processes; never in-process
            self.jobs = max(2, sum(self.client.nthreads().values()))
        else:
            self.jobs = _jobs(opts.jobs)
        o = opts.inventory
        members = (
            (o.get("members", "device") if isinstance(o, Mapping) else o.members)
            if o is not None
            else "device"
        )
        self.all_members = members == "all"
        self.pool = None
        self.inflight = set()
        self.batch: list[tuple[str, tuple]] = []
        self.batch_bytes = 0
        self.apaths = {}  # path in a batch -> its absolute path (the cache key)
        self.spans = {}  # future of one span of a split zip -> (path, index of the span)
        self.split = {}  # token -> [path, key, records of each span (None until done), spans left]
        self.tokens = 0

    # ------------------------------------------------------------------ results
    def _tick(self, n: int, nbytes: int) -> None:
        self.done += n
        self.bytes_done += nbytes
        if self.progress:
            self.progress(self.done, self.stats["files"], self.bytes_done)

    def _accept(self, path: str, records: Iterable[FileReport]) -> None:
        owner = MISS  # the distribution of ``path`` itself, looked up once for all its members
        for rec in records:
            dist = innermost_wheel(rec.path) if "!" in rec.path else None
            if dist is None and rec.package is not None:  # a conda package names itself
                dist = rec.package if isinstance(rec.package, str) else rec.package.label
            if dist is None:  # a member of an archive belongs to the owner of the archive
                if owner is MISS:
                    owner = (
                        wheel_distribution(path)
                        if path.lower().endswith(".whl")
                        else self.attributor.distribution(path)
                    )
                dist = owner
            self.reports.append(dataclasses.replace(rec, distribution=dist) if dist else rec)

    def _finish(self, results) -> None:
        for path, key, records in results:
            self.cache.put(self.apaths.pop(path, None) or os.path.abspath(path), key, records, path)
            if not self.full:
                from fatbin_inspect.checks.coverage import summarize

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
        self._submit(worker.inspect_batch, batch, self.opts.inventory)

    def _submit(self, fn, *args):
        if self.pool is None and self.client is not None:
            self.pool = self.client.get_executor(pure=False)
        if self.pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
            self.pool = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context(method))
        while len(self.inflight) >= self.jobs * 2:
            self._drain()
        fut = self.pool.submit(fn, *args)
        self.inflight.add(fut)
        return fut

    def _drain(self) -> None:
        from concurrent.futures import FIRST_COMPLETED, wait

        done, self.inflight = wait(self.inflight, return_when=FIRST_COMPLETED)
        for fut in done:
            span = self.spans.pop(fut, None)
            if span is None:
                self._finish(fut.result())
            else:
                self._span_done(*span, fut.result())

    def _split_zip(self, path: str, key: tuple, spans) -> None:
        """Hand a large zip's spans to the pool, the largest first."""
        from fatbin_inspect.scan import worker

        self.tokens += 1  # a token, not the path: the same path may be in flight twice
        token = self.tokens
        self.split[token] = [path, key, [None] * len(spans), len(spans)]
        for i in sorted(range(len(spans)), key=lambda i: -spans[i][2]):
            fut = self._submit(worker.inspect_span, path, key, spans[i][:2], self.opts.inventory)
            self.spans[fut] = (token, i)

    def _span_done(self, token: int, i: int, records) -> None:
        state = self.split[token]
        state[2][i] = records
        state[3] -= 1
        if state[3] == 0:
            del self.split[token]
            path = state[0]
            self._finish([(path, state[1], _join_spans(path, state[2]))])

    def _file(self, path: str, apath: str, st: os.stat_result | None) -> None:
        """One regular file: ``apath`` its absolute path, ``st`` its stat when the walk had it."""
        if st is None:
            try:
                st = os.stat(path)
            except OSError as exc:
                self.reports.append(
                    FileReport(
                        path=path, format="unknown", size=0, error=FileError(f"unreadable: {exc.strerror}")
                    )
                )
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
            self.reports.append(
                FileReport(
                    path=path, format="unknown", size=size, error=FileError(f"cannot open: {exc.strerror}")
                )
            )
            return
        if fmt == worker.NOT_DEVICE:
            self.cache.put(apath, key, None)  # remembered too: a warm scan reads no file at all
            self._tick(1, size)
            return
        self.stats["inspected"] += 1
        self.apaths[path] = apath
        if fmt == "zip" and self.jobs > 1 and size >= SPLIT_BYTES:
            spans = worker.zip_spans(path, self.all_members, self.jobs * 2, SPAN_BYTES)
            if spans:
                self._split_zip(path, key, spans)
                return
        self.batch.append((path, key))
        self.batch_bytes += size
        if len(self.batch) >= BATCH_FILES or self.batch_bytes >= BATCH_BYTES:
            self._flush()

    def _quiet(self, n: int, nbytes: int) -> None:
        """``n`` files with nothing to report (too small, or cached as no binary)."""
        self.stats["files"] += n
        self.stats["bytes"] += nbytes
        self._tick(n, nbytes)

    def _root(self, root: Root) -> None:
        known = self.cache.preload(os.path.abspath(root.path))
        n = nbytes = 0  # files settled by their stat alone, not yet counted: the warm path of a
        for path, apath, st, skip in iter_stat(root.path):  # tree is this loop and nothing else
            if st is not None:
                size = st.st_size
                if size >= MIN_SIZE:
                    k = known.get(apath)
                    if (
                        k is None
                        or k[3] is not None
                        or k[0] != size
                        or k[1] != st.st_mtime_ns
                        or k[2] != st.st_ino
                    ):
                        self._file(path, apath, st)
                        continue
                n += 1
                nbytes += size
                if n >= 256:
                    self._quiet(n, nbytes)
                    n = nbytes = 0
            elif skip is None:
                self._file(path, apath, None)
            elif skip.startswith("unreadable"):
                self.reports.append(FileReport(path=path, format="unknown", size=0, error=FileError(skip)))
            else:
                self.stats["skipped"] += 1
        self._quiet(n, nbytes)

    def run(self, roots: tuple[Root, ...]) -> ScanResult:
        try:
            for root in _largest_files_first(roots):
                self._root(root)
            self._flush()
            while self.inflight:
                self._drain()
        finally:
            if self.pool is not None:
                for fut in self.inflight:
                    fut.cancel()
                self.pool.shutdown(wait=True)
            if self.client is not None:
                self.client.close()
            self.cache.close()
        self.reports.sort(key=lambda r: r.path)
        stats = ScanStats(cache=self.cache.path if self.cache.path else None, **self.stats)
        return ScanResult(roots, tuple(self.reports), stats)


def _dask_client(scheduler: str | None):
    """A ``distributed.Client`` of the cluster at ``scheduler``. Work units are the local pool's
    (``worker.inspect_batch``/``inspect_span`` on paths): the workers must see the same files (a
    shared file system) and have fatbin-inspect installed; the cache stays on this machine."""
    from fatbin_inspect.errors import UsageError

    if not scheduler:
        raise UsageError("--executor dask needs --scheduler tcp://HOST:PORT")
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(
            "--executor dask needs dask.distributed: pip install 'fatbin-inspect[dask]'"
        ) from None
    try:
        return Client(scheduler, timeout=30)
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None


def _join_spans(path: str, parts) -> tuple:
    """The records of a split zip as one whole-file unit gives them: its own record first (kept
    only with an error, which ended the walk through its members there), then the members'."""
    members = []
    for records in parts:
        members += [r for r in records if r.path != path]
        own = [r for r in records if r.path == path]
        if own:
            return tuple(own[:1] + members)
    return tuple(members)


def _largest_files_first(roots: tuple[Root, ...]) -> list[Root]:
    """Roots that are files (wheels, archives) by size, largest first, so that the pool ends on
    small units; then the folders, in the order given. Only the order of the work changes."""

    def size(root: Root) -> int:
        try:
            return os.path.getsize(root.path)
        except OSError:
            return 0

    files = [r for r in roots if not os.path.isdir(r.path)]
    return sorted(files, key=size, reverse=True) + [r for r in roots if os.path.isdir(r.path)]


def scan(
    paths: Iterable[str] = (), opts: ScanOptions = ScanOptions(), progress: ProgressFn | None = None
) -> ScanResult:
    """Scan ``paths`` (none: the running interpreter's site-packages) and return device-code records."""
    return _Scanner(opts, progress).run(resolve_roots(paths))
