"""Scan environments, folders, wheels and image tarballs for device code, per distribution.

Pipeline: roots (``inventory.roots``) -> walk with the stat of each entry (``inventory.walk.iter_stat``)
-> cache lookup (``cache``) -> quick head test in this process -> misses in batches to a process
pool (``worker``: magic test outside code, then the inventory) -> attribution (``distributions``).
Only files that hold device code, or could not be read, come back as records; at most ``jobs + 1``
batches are in flight (the others wait as paths), so memory does not grow with the size of the
tree, only with the records found.

With ``ScanOptions.summary`` the records are ``coverage.FileSummary`` (all the matrix needs); a warm
scan then reads neither a file nor a full record, and imports none of the parsers. With
``ScanOptions.encoder`` the records are summaries too, and each full record is encoded and
zstd-packed (``cache.pack``) by the worker that made it, and spilled to an unlinked temporary
file: ``ScanResult.texts`` streams the texts back in path order, so memory does not grow with the
records either; a warm scan copies the cached texts and builds no record.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import operator
import os
from array import array as _array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from fatbin_inspect.formats.model import FileError, FileReport
from fatbin_inspect.inventory import member_path
from fatbin_inspect.inventory.roots import Root, resolve_roots
from fatbin_inspect.inventory.walk import iter_stat
from fatbin_inspect.inventory.zip_plan import SPAN_BYTES, SPLIT_BYTES  # a large zip's units (no parser)
from fatbin_inspect.scanning.cache import (
    MISS,
    Answer,
    ScanCache,
    default_dir,
    has_checksum,
    pack_text,
    packed_size,
    stat_key,
    summaries_from,
    text_frames,
    texts_size,
    unpack,
    unpack_texts,
)
from fatbin_inspect.scanning.distributions import Attributor, innermost_wheel, wheel_distribution

if TYPE_CHECKING:  # the parsers are imported only when a file has to be read
    from fatbin_inspect.inventory.options import Options

MIN_SIZE = 64  # smaller than a fatbin header + one entry header, or than a PTX header
BATCH_FILES = 64
BATCH_BYTES = 64 << 20
ELF_PARTS_PER_JOB = 8  # slices of one ELF file's hidden fatbins per worker (cuFFT, 2 workers: 16 of 16 MB)

ProgressFn = Callable[[int, int, int], None]  # (files done, files seen, bytes done)


# roots a scan walks file by file: a scan of these alone can keep its whole answer (``cache.Answer``)
WALKED = ("directory", "site-packages", "venv", "conda")


# (C-level: a folder's entries go through no bytecode per entry, ~1 us an entry less)
_first, _second, _third = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(2)
_chain = itertools.chain.from_iterable


class _Walk:
    """The digest of what a walk gave (``iter_stat``'s ``listed``): each folder as shown with its
    entries' names, why for each entry that has no stat, the stat key (as the cache's: device,
    inode, size, mtime, ctime) of each that has one, or why the folder is not walked; BLAKE2b
    over ``marshal`` version 2 of them, 256 folders at a time (version 2 writes values only,
    never back-references, so equal listings give equal bytes). A folder's path is written once,
    not with each entry's: the 15,129 files of the six extracted wheels cost ~11 ms of digest,
    where a tuple per entry cost ~20 ms (in-process, best of 5)."""

    CHUNK = 256

    def __init__(self):
        try:  # hashlib's own BLAKE2b: ``import hashlib`` also loads OpenSSL's (~7 ms of a warm scan)
            from _blake2 import blake2b
        except ImportError:  # pragma: no cover - a build without the module
            from hashlib import blake2b

        self._hash = blake2b(digest_size=32)
        self._chunk: list[tuple] = []
        self.whole = True  # False once an input is one no answer may be kept for (an image layout)

    def listed(self, folder: str, entries) -> None:
        """One folder's listing (``inventory.walk.Listed``), counted into the digest: its names,
        their notes (None but where an entry has no stat) and the keys of the stats there are,
        as 64-bit integers (a list where one does not fit: an inode number past 2**63)."""
        if not isinstance(entries, list):
            self.whole = self.whole and entries is not None
            self._chunk.append((folder, entries))
        else:
            keys = list(_chain(map(stat_key, filter(None, map(_second, entries)))))
            try:
                packed: Any = _array("q", keys).tobytes()
            except OverflowError:
                packed = keys
            self._chunk.append((folder, list(map(_first, entries)), list(map(_third, entries)), packed))
        if len(self._chunk) >= self.CHUNK:
            self._add()

    def walk(self, root: str) -> None:
        """Walk ``root`` for its digest alone."""
        collections.deque(iter_stat(root, self.listed), maxlen=0)

    def _add(self) -> None:
        import marshal

        self._hash.update(marshal.dumps(self._chunk, 2))
        self._chunk.clear()

    def digest(self) -> bytes:
        self._add()
        return self._hash.digest()


# the ``inventory.Options`` fields the records depend on (the cache fingerprint), with their
# defaults (a test holds them equal to Options'), so options given as a dict need no parser import
FINGERPRINT_DEFAULTS = dict(
    kernels=False,
    details=False,
    resources=True,
    probe_small=False,
    scan_hidden=True,
    members="device",
    platform="",
    digests=False,
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
    scheduler_file: str | None = None  # instead of ``scheduler``: the file ``dask scheduler`` wrote
    connect_timeout: float = 30  # seconds to reach the scheduler
    tls: tuple[str, str, str | None] | None = None  # (CA file, certificate, key) for a tls:// scheduler
    # a module-level function: a record -> its bytes as the caller writes them (run in the workers,
    # kept in the cache under the function's name); given, the records are summaries and
    # ``ScanResult.texts`` yields the texts
    encoder: Callable[[FileReport], bytes] | None = None
    # ``encoder``'s text in parts (``scan_json.file_rest_parts``): given, a large ELF file's hidden
    # fatbins are read and encoded by several workers (``elf_split``); without it (and an encoder)
    # each file is one worker's
    encoder_parts: Callable[..., Any] | None = None


@dataclass(frozen=True)
class ScanStats:
    files: int = 0  # regular files seen (an image's: those of its final filesystem)
    bytes: int = 0  # their bytes as stored (an image's: its blobs)
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
    # with ``ScanOptions.encoder``: the encoded records, one per report and in their order
    texts: Callable[[], Iterator[bytes]] | None = None
    # (path, why) of entries that are no regular file: FIFOs, devices, sockets, symlink loops,
    # dangling symlinks (``list`` reports them as records; ``scan --strict`` exits 3 for them)
    skipped: tuple[tuple[str, str], ...] = ()
    # (input, ``containers.oci.Image``) of every image named as an input: its reference, manifest
    # digest, tag, platform and layers, as its checked metadata says
    images: tuple[tuple[str, Any], ...] = ()
    notes: tuple[str, ...] = ()  # one line each, for the user: Dask workers left out
    # files no Dask worker could read (each also an error record, never cached): the exit is not 0
    unread: tuple[str, ...] = ()


def _jobs(n: int) -> int:
    from fatbin_inspect.inventory.workers import processes

    return processes(n)


def options_fingerprint(o: Options | Mapping[str, Any] | None) -> str:
    o = o if o is not None else {}
    v = {k: o.get(k, d) if isinstance(o, Mapping) else getattr(o, k) for k, d in FINGERPRINT_DEFAULTS.items()}
    return (
        f"k{int(v['kernels'])}d{int(v['details'])}r{int(v['resources'])}p{int(v['probe_small'])}"
        f"h{int(v['scan_hidden'])}m{v['members']}"
        + (f"p{v['platform']}" if v["platform"] else "")
        + ("s" if v["digests"] else "")  # rows with SHA-256 digests (the SBOM) are rows of their own
    )


class _Scanner:
    PUMP_EVERY = 64  # files walked between two looks at the units in flight

    def __init__(self, opts: ScanOptions, progress: ProgressFn | None):
        self.opts = opts
        self.progress = progress
        cache_dir = default_dir() if opts.cache_dir == "default" else opts.cache_dir
        enc = opts.encoder
        self.encoder = enc
        self.cache = ScanCache(
            cache_dir,
            options_fingerprint(opts.inventory),
            f"{enc.__module__}.{enc.__qualname__}" if enc else None,
        )
        self.full = not opts.summary and enc is None
        self.keep = self.full  # the workers hand back whole records
        # the workers encode each record's data for the cache, except when they encode its text:
        # the text is all a scan with this encoder reads back, and the data cost that scan a
        # tenth of its cold CPU (six wheels: 1.51 s, not 1.35 s); a scan that needs records from
        # a row holding only texts reads the file again and adds them (``ScanCache.put_encoded``)
        self.data = self.cache.enabled and enc is None
        self.spill: IO[bytes] | None = None  # with an encoder: the unlinked file holding the texts
        # where each record's text is: (offset, length) in ``spill``, or (``_Job`` of its cache
        # row, index, path shown, absolute path, key) for a text still in its cache row
        self.locs: list[tuple] = []
        self.unpacker = _Unpacker()
        self.attributor = Attributor()
        self.reports: list[Any] = []  # FileReport, or coverage.FileSummary
        self.stats = dict(files=0, bytes=0, inspected=0, cache_hits=0, skipped=0)
        self.skipped: list[tuple[str, str]] = []
        self.images: list[tuple[str, Any]] = []
        self.done = 0
        self.bytes_done = 0
        self.client: Any = None  # a dask.distributed Client
        self.notes: list[str] = []
        self.unread: list[str] = []
        if opts.executor == "dask":
            from fatbin_inspect.scanning import dask_executor

            self.client = dask_executor.connect(
                opts.scheduler, opts.scheduler_file, opts.connect_timeout, opts.tls
            )
            self.jobs = 2  # until the probe has found the workers that see the roots (``run``)
            self.workers: dict[str, int] = {}
            self.executors: dict[frozenset, Any] = {}  # workers left out -> an executor for the rest
            self.shown: dict[str, str] = {}  # absolute path sent -> the path as the scan shows it
        else:
            self.jobs = _jobs(opts.jobs)
        o = opts.inventory
        members = (
            (o.get("members", "device") if isinstance(o, Mapping) else o.members)
            if o is not None
            else "device"
        )
        self.all_members = members == "all"
        self.pool: Any = None  # a ProcessPoolExecutor, made when the first unit is handed out
        self.inflight: set[Any] = set()  # futures
        # units waiting for a free process, in the order found: (function, arguments, span or
        # None); the walk never waits for the pool. (Not the largest first: bytes do not tell the
        # cost; cuFFT's 273 MB take longer than libtorch_cpu's 425 MB.)
        self.queue: collections.deque[tuple] = collections.deque()
        self.ticks = 0
        self.batch: list[tuple[str, tuple]] = []
        self.batch_bytes = 0
        self.apaths: dict[str, str] = {}  # path in a batch -> its absolute path (the cache key)
        self.spans: dict[Any, tuple[int, int]] = {}  # future of a split zip's span -> (token, index)
        # future -> its unit (function, arguments, span), to run it again; on Dask (function,
        # arguments, span, workers tried)
        self.units: dict[Any, tuple] = {}
        # units whose process died with others in flight (which one killed it is unknown): run
        # again one at a time; a unit that fails alone costs its file an error record
        self.suspects: collections.deque[tuple] = collections.deque()
        self.alone = None  # the future of the suspect running alone
        # token -> [path, key, records of each span (None until done), spans left, error or None]
        self.split: dict[int, list[Any]] = {}
        self.tokens = 0
        # (path, summary items) of each file, in the order accepted: the scan's ``cache.Answer``,
        # kept unless something is met that a rescan must read again (``answerable`` False)
        self.kept: list[tuple[str, list]] = []
        self.answerable = True

    # ------------------------------------------------------------------ results
    def _tick(self, n: int, nbytes: int) -> None:
        self.done += n
        self.bytes_done += nbytes
        if self.progress:
            self.progress(self.done, self.stats["files"], self.bytes_done)
        self.ticks += 1
        if self.inflight and self.ticks % self.PUMP_EVERY == 0:  # the walk's turn to hand out work
            self._pump()

    def _accept(
        self,
        path: str,
        records: Iterable,
        texts: Sequence | None = None,
        summaries: Sequence | None = None,
        attribute: bool = True,
    ) -> None:
        """Keep the records of one file: full records, or their summaries (given, or made here),
        the texts (``cache.pack_text``ed, as workers hand them over) spilled with an encoder."""
        owner: Any = MISS  # the owner of ``path`` itself, looked up once for all its members
        for i, rec in enumerate(records):
            if rec.contents is not None and rec.path == path:  # an image: its files are the files
                self.stats["files"] += rec.contents[0] - 1
                if not (rec.fatbins or rec.error):
                    continue
            dist, package, owner = self._attribution(path, rec, attribute, owner)
            if dist:
                rec = dataclasses.replace(rec, distribution=dist)
                if package is not None and self.full:
                    rec = dataclasses.replace(rec, package=package)
            if self.full:
                self.reports.append(rec)
                continue
            if summaries is None:
                from fatbin_inspect.scanning.coverage import summarize

                self.reports.append(summarize(rec))
            else:
                self.reports.append(
                    dataclasses.replace(summaries[i], distribution=dist) if dist else summaries[i]
                )
            if self.encoder is not None and texts is not None:
                self._keep_text(texts[i])

    def _attribution(self, path: str, rec: Any, attribute: bool, owner: Any) -> tuple[Any, Any, Any]:
        """``(distribution, package or None, owner)`` of one record of ``path``: the innermost
        wheel of a member, the package a conda record names, else (with ``attribute``) the
        owner of ``path`` (looked up once: ``owner`` is ``MISS`` until then). An installed
        conda package (conda-meta) keeps the CUDA it declares, as its .conda did: the judging
        reads it from the record's package."""
        dist = innermost_wheel(rec.path) if member_path.is_member(rec.path) else None
        if dist is None and rec.package is not None:  # a conda package names itself
            dist = rec.package if isinstance(rec.package, str) else rec.package.label
        if dist is not None or not attribute:
            return dist, None, owner
        if owner is MISS:  # a member of an archive belongs to the owner of the archive
            owner = wheel_distribution(path) if path.lower().endswith(".whl") else self.attributor.owner(path)
        if owner is None or isinstance(owner, str):
            return owner, None, owner
        return owner.label, owner, owner

    def _keep_text(self, text: Any) -> None:
        """A record's text: where it is in its cache row (read when it is written out), or
        packed bytes, spilled."""
        if type(text) is tuple:
            self.locs.append(text)
            return
        if self.spill is None:
            import tempfile

            self.spill = tempfile.TemporaryFile(prefix="fatbin-inspect-scan-")
        self.locs.append((self.spill.tell(), len(text), packed_size(text)))
        self.spill.write(text)

    def _finish(self, results) -> None:
        """``[(path, key, worker.encoded records)]`` from a worker (or a split zip put together)."""
        for path, key, encs in results:
            apath = self.apaths.pop(path, None) or os.path.abspath(path)
            if self.client is not None:  # sent as ``apath``: the records are shown on the path given
                path, encs = self._shown_on(path, encs)
            texts = [e[2] for e in encs] if self.encoder is not None else None
            summaries: Sequence[Any]
            if all(e[0] is not None for e in encs):
                self.cache.put_encoded(apath, key, [e[:2] for e in encs], texts)
                summaries = summaries_from([e[0] for e in encs], path)
                self._kept(path, [e[0] for e in encs])
            else:  # some record does not encode: not cached, summarized here
                from fatbin_inspect.scanning.coverage import summarize

                summaries = [summarize(e[3]) for e in encs]
                self.answerable = False
            records = [e[3] for e in encs] if self.keep else summaries
            self._accept(path, records, texts, summaries)
            self._tick(1, key[2])

    def _kept(self, path: str, items: list) -> None:
        """A file's summary items, for the scan's answer (``_keep_answer`` keeps none unless
        every item became a record with a text: an image's own record may not)."""
        if self.answerable:
            self.kept.append((path, items))

    def _shown_on(self, sent: str, encs: list) -> tuple[str, list]:
        """A Dask unit's records, made on the absolute path ``sent``, on the path the scan shows."""
        shown = self.shown.pop(sent, sent)
        if shown != sent:
            encs = [e if e[3] is None else (*e[:3], _rebase(e[3], sent, shown)) for e in encs]
        return shown, encs

    def _hit(self, path: str, apath: str, key: tuple, hit) -> bool:
        """Accept a cache hit; False when the row cannot give what this scan needs (a miss)."""
        if self.encoder is None:
            if not self.full:
                self._accept(path, hit.summaries(path))
                return True
            reports = hit.reports(path)
            if reports is MISS:
                return False
            self._accept(path, reports)
            return True
        job = self.unpacker.add(hit)  # its texts, unpacked ahead by a thread while the walk goes on
        if job is not None:
            where = [(job, i, path, apath, key) for i in range(len(hit.summary))]
            self._kept(path, hit.summary)
            self._accept(path, hit.summaries(path), where)
            return True
        reports = hit.reports(path)  # cached by a scan that kept no texts: encode here, keep them
        if reports is MISS:
            return False
        self.answerable = False
        texts = [pack_text(self.encoder(r)) for r in reports]
        self.cache.put(apath, key, reports, texts, base=path)
        self._accept(path, reports, texts)
        return True

    # ------------------------------------------------------------------- batches
    def _flush(self) -> None:
        if not self.batch:
            return
        from fatbin_inspect.scanning import worker

        batch, self.batch, self.batch_bytes = self.batch, [], 0
        if self.jobs == 1:
            self._finish(worker.inspect_batch(batch, self.opts.inventory, self.encoder, self.keep, self.data))
            return
        self._submit(worker.inspect_batch, (batch, self.opts.inventory, self.encoder, self.keep, self.data))

    def _submit(self, fn, args: tuple, span: tuple | None = None) -> None:
        """Queue one unit for the pool; ``span``: (token, index) of a split zip."""
        self.queue.append((fn, args, span))
        self._pump()

    def _pump(self) -> None:
        """Take in the results that are ready (never waits), then hand queued units to the pool,
        while at most ``jobs + 1`` are in flight: one more than the processes, so a process that
        ends a unit finds the next one waiting. Results wait in their futures until taken in here,
        from the walk every ``PUMP_EVERY`` files (``_tick``) or while waiting (``_drain``). Taking
        a result in ticks, and a tick may look again: the ended units leave ``inflight`` before
        any is taken in, so a nested look never takes one in twice."""
        if self.inflight:
            done = [f for f in self.inflight if f.done()]
            self.inflight.difference_update(done)
            for fut in done:
                self._result(fut)
        if self.suspects:  # one at a time, nothing beside it, until every suspect has run
            if not self.inflight:
                self.alone = self._start(self.suspects.popleft())
            return
        while self.queue and len(self.inflight) <= self.jobs:
            fn, args, span = unit = self.queue.popleft()
            if self.client is not None:
                self._send(fn, args, span, frozenset())
            else:
                self._start(unit)

    def _start(self, unit: tuple) -> Any:
        """One unit ``(function, arguments, span or None)`` handed to the local pool: its future."""
        from fatbin_inspect.inventory import workers

        self._ensure_pool()
        fn, args, span = unit
        fut = workers.submit(self.pool, fn, *args)
        self.inflight.add(fut)
        self.units[fut] = unit
        if span is not None:
            self.spans[fut] = span
        return fut

    def _ensure_pool(self) -> None:
        if self.pool is None:
            import multiprocessing

            from fatbin_inspect.inventory import workers

            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
            self.pool = workers.pool(self.jobs, multiprocessing.get_context(method))

    def _send(self, fn, args: tuple, span, tried: frozenset) -> None:
        """One unit to the Dask workers that see the roots, less those in ``tried``."""
        from fatbin_inspect.scanning import dask_executor

        ex = self.executors.get(tried)
        if ex is None:
            ex = self.executors[tried] = self.client.get_executor(
                pure=False, workers=[w for w in self.workers if w not in tried], allow_other_workers=False
            )
        fut = ex.submit(dask_executor.run_unit, fn, args)
        self.inflight.add(fut)
        self.units[fut] = (fn, args, span, tried)

    def _remote(self, fut):
        """A Dask unit's result for ``_result``; units a worker could not see go to another worker,
        or, when none is left, become error records (``None`` back: nothing more to take in)."""
        fn, args, span, tried = self.units.pop(fut)
        here, out, unseen = self._remote_result(fut)
        if not unseen:
            return out
        tried = tried | {here}
        left = [w for w in self.workers if w not in tried]
        if span is not None:  # a span: again elsewhere, or the whole zip is unread
            if left:
                self._send(fn, args, span, tried)
                return None
            return "unread", len(tried)
        if left:  # a batch: the files it could not see, elsewhere
            self._send(fn, (unseen, *args[1:]), None, tried)
        else:
            for path, key in unseen:
                self._unread(path, key, len(tried))
        return out

    def _remote_result(self, fut) -> tuple:
        """``(worker, result, files it could not see)`` of a Dask unit; a lost scheduler is
        ``ClusterLost``."""
        from fatbin_inspect.scanning.dask_executor import ClusterLost

        try:
            return fut.result()
        except (KeyboardInterrupt, ClusterLost):
            raise
        except Exception as exc:
            lost = ("CancelledError", "CommClosedError", "FutureCancelledError")
            if self.client.status != "running" or type(exc).__name__ in lost:
                where = self.opts.scheduler or self.opts.scheduler_file
                raise ClusterLost(f"lost the Dask scheduler at {where}: {type(exc).__name__}") from None
            raise

    def _unread(self, path: str, key: tuple, tried: int) -> None:
        """A file no Dask worker could read: an error record (never cached) and a non-zero exit."""
        self.apaths.pop(path, None)
        shown = self.shown.pop(path, path)
        self.unread.append(shown)
        self._error(shown, key[2], f"not readable on any Dask worker ({tried} tried)")
        self._tick(1, key[2])

    def _drain(self) -> None:
        """Wait for one unit in flight to end, take in its result, and hand out the next."""
        from concurrent.futures import FIRST_COMPLETED, wait

        done, self.inflight = wait(self.inflight, return_when=FIRST_COMPLETED)
        for fut in done:
            self._result(fut)
        self._pump()

    def _result(self, fut) -> None:
        if self.client is not None:
            span = self.units[fut][2]
            out = self._remote(fut)
            if out is None:
                return
        else:
            span = self.spans.pop(fut, None)
            unit = self.units.pop(fut, None)
            alone, self.alone = self.alone is fut, None if self.alone is fut else self.alone
            try:
                out = fut.result()
            except Exception as exc:  # a process died (a signal, a native crash), or the unit raised
                self._lost(unit, exc, alone)
                return
        if span is None:
            self._finish(out)
        else:
            self._span_done(span[0], span[1], out)

    def _lost(self, unit: tuple | None, exc: Exception, alone: bool) -> None:
        """A unit that gave no result. With others in flight when its process died, any of them
        may be the cause: each is run again alone (a batch split into its files). Alone, it is
        the cause: its files get an error record (not cached: the next scan tries again)."""
        why = self._why(exc)
        if unit is None:
            raise exc
        fn, args, span = unit
        if not alone:
            if span is None:  # a batch: each file alone
                self.suspects.extend((fn, ((item,), *args[1:]), None) for item in args[0])
            else:
                self.suspects.append(unit)
            return
        message = f"the worker process inspecting this file died ({why}): not inspected"
        if span is None:
            for path, key in args[0]:
                self.apaths.pop(path, None)
                self._error(path, key[2], message)
                self._tick(1, key[2])
            return
        token, i = span
        self.split[token][4] = message
        self._span_done(token, i, [])

    def _why(self, exc: Exception) -> str:
        """Why a unit gave no result; a broken local pool is stopped (the next unit starts a new one)."""
        from concurrent.futures.process import BrokenProcessPool

        if not (isinstance(exc, BrokenProcessPool) and self.pool is not None and self.client is None):
            return f"{type(exc).__name__}: {exc}"
        from fatbin_inspect.inventory import workers

        codes = [p.exitcode for p in (getattr(self.pool, "_processes", None) or {}).values()]
        killed = sorted({-c for c in codes if isinstance(c, int) and c < 0} - {15})  # not our SIGTERMs
        workers.stop(self.pool)
        self.pool = None
        return "killed by " + ", ".join(_signal_name(k) for k in killed) if killed else "it exited"

    def _split_zip(self, path: str, key: tuple, spans) -> None:
        """Hand a large zip's spans to the pool, the largest first."""
        from fatbin_inspect.scanning import worker

        units = [
            (path, key, span[:2], self.opts.inventory, self.encoder, self.keep, self.data) for span in spans
        ]
        self._split(path, key, worker.inspect_span, units, [span[2] for span in spans], _join_spans)

    def _split_elf(self, path: str, key: tuple, split) -> None:
        """Hand a large ELF file's parts (``elf_split``) to the pool, the largest first."""
        import functools

        from fatbin_inspect.scanning import elf_split

        parts = self.opts.encoder_parts if self.encoder is not None else None
        sizes = elf_split.sizes(split)
        units = [(path, split, i, self.opts.inventory, parts, self.data, key) for i in range(len(sizes))]
        self._split(
            path, key, elf_split.inspect_part, units, sizes, functools.partial(elf_split.join, split=split)
        )

    def _split(self, path: str, key: tuple, fn, units: list[tuple], sizes: list[int], join) -> None:
        """One file's units (``fn``'s arguments) to the pool, the largest first; ``join``: ``(path,
        results in unit order)`` -> the file's ``worker.encoded`` records, or None (the file is
        then read whole, one unit)."""
        self.tokens += 1  # a token, not the path: the same path may be in flight twice
        token = self.tokens
        # [path, key, results, units left, error if a unit's process died, join]
        self.split[token] = [path, key, [None] * len(units), len(units), None, join]
        for i in sorted(range(len(units)), key=lambda i: -sizes[i]):
            self._submit(fn, units[i], (token, i))

    def _splits_elf(self, size: int) -> bool:
        """A file this large is worth an ELF split (``elf_split``) in this scan."""
        return (
            size >= SPLIT_BYTES
            and self.jobs > 1
            and self.client is None
            and not self.keep
            and (self.encoder is None or self.opts.encoder_parts is not None)
        )

    def _span_done(self, token: int, i: int, pairs) -> None:
        state = self.split[token]
        state[2][i] = pairs
        state[3] -= 1
        if state[3] == 0:
            del self.split[token]
            path = state[0]
            lost = [p for p in state[2] if type(p) is tuple and p and p[0] == "unread"]
            if lost:  # a span no Dask worker could read: the whole file is unread
                self._unread(path, state[1], max(p[1] for p in lost))
            if state[4] is not None:  # a span's process died: the zip is one error record
                self.apaths.pop(path, None)
                self._error(path, state[1][2], state[4])
                self._tick(1, state[1][2])
                return
            encs = state[5](path, state[2])
            if encs is not None:
                self._finish([(path, state[1], encs)])
                return
            from fatbin_inspect.scanning import worker  # a part could not vouch: the file whole

            args = ([(path, state[1])], self.opts.inventory, self.encoder, self.keep, self.data)
            self._submit(worker.inspect_batch, args)

    def _file(
        self,
        path: str,
        apath: str,
        st: os.stat_result | None,
        fmt: str | None = None,
        key: tuple | None = None,
        stat_of: str | None = None,
        size: int | None = None,
    ) -> None:
        """One regular file: ``apath`` its absolute path, ``st`` its stat when the walk had it;
        ``fmt``: its format when known without reading it (an image); ``key``: its cache key
        when no stat gives it (a registry image), ``stat_of``: the file whose stat does (a
        layout's index.json: the blobs are content-addressed); ``size``: its true size when the
        stat's is not (an image layout: its blobs)."""
        if st is None and key is None and stat_of is None and os.path.isdir(path):
            fmt = "oci"  # an OCI image layout found in a tree (the walk yields it whole): one unit
            stat_of = os.path.join(path, "index.json")
        if key is None:
            if st is None:
                try:
                    st = os.stat(stat_of or path)
                except OSError as exc:
                    self._error(path, 0, f"unreadable: {exc.strerror}")
                    return
            key = stat_key(st)
        if size is None:
            size = st.st_size if st is not None else 0
        self.stats["files"] += 1
        self.stats["bytes"] += size
        if (size < MIN_SIZE and fmt != "oci") or self._answered(path, apath, key):
            self._tick(1, size)  # (too small: an image whose metadata fails says why)
            return
        self._miss(path, apath, key, size, fmt)

    def _answered(self, path: str, apath: str, key: tuple) -> bool:
        """The cache answers for the file: a row of a file without device code, or a hit this
        scan can use (accepted)."""
        cached = self.cache.get(apath, key)
        if cached is None:
            return True
        if cached is MISS or not self._hit(path, apath, key, cached):
            return False
        self.stats["cache_hits"] += 1
        self.stats["inspected"] += 1
        return True

    def _miss(self, path: str, apath: str, key: tuple, size: int, fmt: str | None) -> None:
        """A file the cache cannot answer for: its head read here (a file with no device format
        is remembered as such), then a unit for the pool (a large zip split into spans)."""
        from fatbin_inspect.scanning import worker

        try:
            fmt = fmt or worker.head_format(path)
        except OSError as exc:
            self._error(path, size, f"cannot open: {exc.strerror}")
            return
        if fmt == worker.NOT_DEVICE:
            self.cache.put(apath, key, None)  # remembered too: a warm scan reads no file at all
            self._tick(1, size)
            return
        self.stats["inspected"] += 1
        if self.client is not None:  # Dask workers get absolute paths (not their own cwd's)
            self.shown[apath] = path
            path = apath
        self.apaths[path] = apath
        if fmt == "zip" and self.jobs > 1 and size >= SPLIT_BYTES:
            spans = worker.zip_spans(path, self.all_members, self.jobs * 2, SPAN_BYTES)
            if spans:
                self._split_zip(path, key, spans)
                return
        if fmt == "elf" and self._splits_elf(size):
            from fatbin_inspect.scanning import elf_split

            split = elf_split.plan(path, self.opts.inventory, ELF_PARTS_PER_JOB * self.jobs)
            if split is not None:
                self._split_elf(path, key, split)
                return
        self.batch.append((path, key))
        self.batch_bytes += size
        if len(self.batch) >= BATCH_FILES or self.batch_bytes >= BATCH_BYTES:
            self._flush()

    def _error(self, path: str, size: int, message: str) -> None:
        """A file that cannot be read: one record with the error (its text encoded here)."""
        self.answerable = False  # (read again by the next scan)
        rec = FileReport(path=path, format="unknown", size=size, error=FileError(message))
        self._accept(path, (rec,), [pack_text(self.encoder(rec))] if self.encoder else None, attribute=False)

    def _quiet(self, n: int, nbytes: int) -> None:
        """``n`` files with nothing to report (too small, or cached as no binary)."""
        self.stats["files"] += n
        self.stats["bytes"] += nbytes
        self._tick(n, nbytes)

    def _platform(self) -> str:
        o = self.opts.inventory
        return (o.get("platform", "") if isinstance(o, Mapping) else o.platform) if o is not None else ""

    def _image_root(self, root: Root) -> bool:
        """An image named as an input (a layout, an image tar, ``DIR:TAG``, a registry
        reference, stdin): its facts read here (metadata only), then one unit; False for others."""
        if root.kind == "stdin":
            self._stdin(root.path)
            return True
        if root.kind not in ("oci-image", "registry", "archive", "image", "file"):
            return False
        from fatbin_inspect.inventory.reader import image_facts

        facts = image_facts(root.path, self._platform())
        if facts is None:
            return False
        self.images += [(root.path, image) for image in facts]
        if root.kind in ("archive", "file"):
            return False  # a file: walked (and cached) as one
        size = sum(i.size for i in facts)
        if root.kind == "registry":  # content-addressed: the manifest digests are the key
            import hashlib

            digests = "".join(i.digest or "" for i in facts)
            tag = int(hashlib.sha256(digests.encode()).hexdigest()[:15], 16)
            self._file(root.path, root.path, None, "oci", key=(0, 0, size, tag, 0), size=size)
        else:
            self._local_image(root.path, size)
        return True

    def _local_image(self, path: str, size: int) -> None:
        """An image on disk as one unit: a layout (keyed by its index.json's stat, ``size`` the
        blobs') or an image tar, with the tag chosen in its name (``DIR:TAG``) in its key."""
        from fatbin_inspect.inventory.walk import image_ref

        ref = image_ref(path)
        where = ref.path if ref is not None else path
        apath = os.path.abspath(where) + (f":{ref.select}" if ref is not None and ref.select else "")
        if os.path.isdir(where):
            self._file(path, apath, None, "oci", stat_of=os.path.join(where, "index.json"), size=size)
        else:
            self._file(path, apath, None, "oci", stat_of=where)

    def _stdin(self, path: str) -> None:
        """``-``: standard input read once, here (a pipe is not for the pool), never cached."""
        from fatbin_inspect.inventory.options import as_options
        from fatbin_inspect.inventory.reader import inspect_blob
        from fatbin_inspect.inventory.walk import stdin_blob
        from fatbin_inspect.scanning import worker

        opts = as_options(self.opts.inventory)
        self.stats["files"] += 1
        try:
            blob = stdin_blob()
        except Exception as exc:
            self._error(path, 0, str(exc))
            return
        self.stats["bytes"] += blob.size
        self.stats["inspected"] += 1
        records = [r for r in inspect_blob(path, blob, opts, 0) if worker.kept(r, path)]
        encs = worker.encoded(records, path, self.encoder, True, False)
        texts = [e[2] for e in encs] if self.encoder is not None else None
        self._accept(path, records, texts, attribute=False)
        self._tick(1, blob.size)

    def _root(self, root: Root, walk: _Walk | None = None) -> None:
        if self._image_root(root):
            return
        known = self.cache.preload(os.path.abspath(root.path))
        n = nbytes = 0  # files settled by their stat alone, not yet counted: the warm path of a
        items = iter_stat(root.path, None if walk is None else walk.listed)
        for path, apath, st, skip in items:  # tree is this loop and nothing else
            if st is not None:
                size = st.st_size
                if size >= MIN_SIZE:
                    k = known.get(apath)
                    if (
                        k is None
                        or k[5] is not None
                        or k[2] != size
                        or k[3] != st.st_mtime_ns
                        or k[4] != st.st_ctime_ns
                        or k[1] != st.st_ino
                        or k[0] != st.st_dev
                    ):
                        self._file(path, apath, st)
                        continue
                n += 1
                nbytes += size
                if n >= 256:
                    self._quiet(n, nbytes)
                    n = nbytes = 0
            else:
                self._unstated(path, apath, skip)
        self._quiet(n, nbytes)

    def _unstated(self, path: str, apath: str, skip: str | None) -> None:
        """An entry the walk gave without a stat: a root that is a file or an image layout
        (``skip`` None), one it could not read (an error record), or one it skipped (a FIFO, a
        symlink loop: counted, and named under ``--strict``)."""
        if skip is None:
            self._file(path, apath, None)
        elif skip.startswith("unreadable"):
            self._error(path, 0, skip)
        else:
            self.stats["skipped"] += 1
            self.skipped.append((path, skip))

    def run(self, roots: tuple[Root, ...]) -> ScanResult:
        self.attributor = Attributor(r.path for r in roots)  # metadata read up to each root's ceiling
        if self.client is not None:
            self._probe_workers(roots)
        scan_key = self._scan_key(roots)
        walk = None
        try:
            if scan_key is None or not self._answer(scan_key, roots):
                walk = None if scan_key is None else _Walk()
                for root in _largest_files_first(roots):
                    self._root(root, walk)
                self._flush()
                self._pump()
                while self.inflight or self.suspects:
                    self._drain()
        except BaseException:  # Ctrl-C, or an error: end the workers now, not after their batches
            self._abandon()
            raise
        finally:
            self._close()
        if walk is not None and scan_key is not None:
            self._keep_answer(scan_key, walk)
        order = sorted(range(len(self.reports)), key=lambda i: self.reports[i].path)
        texts = None
        if self.encoder is not None:
            locs = [self.locs[i] for i in order]
            texts = functools.partial(self._texts, locs, self.encoder)
        return ScanResult(
            roots,
            tuple(self.reports[i] for i in order),
            ScanStats(cache=self.cache.path, **self.stats),
            texts=texts,
            skipped=tuple(self.skipped),
            notes=tuple(self.notes + self.attributor.notes),  # + system package databases not read
            unread=tuple(sorted(self.unread)),
            images=tuple(self.images),
        )

    # ------------------------------------------------------------- whole answers
    def _scan_key(self, roots: tuple[Root, ...]) -> str | None:
        """The key of this scan's ``cache.Answer`` (with the cache's options), or None when it
        keeps none: not streamed texts, no cache, a Dask cluster, or a root that is not a folder
        walked file by file (an image, a wheel, a file, stdin)."""
        if self.encoder is None or self.client is not None or not self.cache.enabled:
            return None
        if not roots or any(r.kind not in WALKED for r in roots):
            return None
        import json

        where = [[r.path, os.path.abspath(r.path), r.kind] for r in roots]
        return json.dumps([self.cache.options, self.cache.encoder, where])

    def _answer(self, scan_key: str, roots: tuple[Root, ...]) -> bool:
        """Answer from the scan's kept answer when the walk gives what it gave then (its texts
        unpacked on the unpacker's thread while the walk goes on, and checked before anything
        is kept); False, with nothing changed, otherwise."""
        answer = self.cache.answer(scan_key)
        if answer is None:
            return False
        job = self.unpacker.add(answer)  # (unpacked on the unpacker's thread as the walk goes)
        if job is None:
            return False
        walk = _Walk()
        for root in _largest_files_first(roots):
            walk.walk(root.path)
        if walk.digest() != answer.walk:
            job.result()  # (its bytes let go, not held against the unpacker's budget)
            self.unpacker.done(job)
            return False
        i = 0
        for path, items in answer.files:
            where = [(job, i + k, path, None, None) for k in range(len(items))]
            summaries = summaries_from(items, path)
            self._accept(path, summaries, where, summaries)
            i += len(items)
        if job.result() is MISS or len(self.reports) != i:
            self.unpacker.done(job)
            self.reports, self.locs = [], []
            return False
        self.stats.update(answer.stats, cache_hits=answer.stats["inspected"])
        self.skipped = list(answer.skipped)
        self._tick(answer.stats["files"], answer.stats["bytes"])
        return True

    def _keep_answer(self, scan_key: str, walk: _Walk) -> None:
        """Keep this scan's answer (``cache.Answer``) when nothing in it must be read again and
        its texts fit one unpacking (``_Unpacker.AHEAD``)."""
        digest = walk.digest()
        if not (self.answerable and walk.whole) or self.unread or len(self.locs) != len(self.reports):
            return
        if sum(len(items) for _, items in self.kept) != len(self.locs):
            return
        frames: list[bytes] = []
        rows: dict[int, list[bytes] | None] = {}
        for loc in self.locs:
            if len(loc) == 3:  # (offset, frame bytes, text bytes) in the spill file
                assert self.spill is not None
                self.spill.seek(loc[0])
                frames.append(self.spill.read(loc[1]))
                continue
            job, i = loc[0], loc[1]
            if id(job) not in rows:
                rows[id(job)] = text_frames(job.packed, job.n)
            row = rows[id(job)]
            if row is None:
                return
            frames.append(row[i])
        if not all(has_checksum(f) for f in frames):  # (a text that failed its check when packed)
            return
        if sum(packed_size(f) for f in frames) > _Unpacker.AHEAD:
            return
        stats = {k: self.stats[k] for k in Answer.STATS}
        answer = {"stats": stats, "skipped": [list(p) for p in self.skipped], "files": self.kept}
        self.cache.put_answer(scan_key, digest, answer, frames)

    def _probe_workers(self, roots: tuple[Root, ...]) -> None:
        """The Dask workers that see the roots (the others are left out, with a note)."""
        from fatbin_inspect.scanning import dask_executor

        try:
            self.workers, notes = dask_executor.usable_workers(
                self.client, [os.path.abspath(r.path) for r in roots]
            )
        except BaseException:
            self.client.close()
            raise
        self.notes += notes
        # in flight and split as for a local pool of that many processes; never in-process
        self.jobs = max(2, sum(self.workers.values()))

    def _abandon(self) -> None:
        """End the units in flight now (Ctrl-C, or an error), not after their batches."""
        if self.client is not None:
            import contextlib

            with contextlib.suppress(Exception):
                self.client.cancel(list(self.inflight), force=True)
            self.inflight = set()
        if self.pool is not None:
            from fatbin_inspect.inventory import workers

            workers.stop(self.pool)
            self.pool = None

    def _close(self) -> None:
        """The pool and the cluster let go; the cache closed (with an encoder: flushed, as the
        texts still in cache rows are read from it as they are written out)."""
        if self.pool is not None:
            for fut in self.inflight:
                fut.cancel()
            self.pool.shutdown(wait=True)
        if self.client is not None:
            import contextlib

            with contextlib.suppress(Exception):
                self.client.close(timeout=5)
        if self.encoder is None:
            self.cache.close()
        else:
            self.cache.flush()

    def _texts(self, locs: list[tuple], encoder: Callable[[FileReport], bytes]) -> Iterator[bytes]:
        """The texts at ``locs`` in that order, from the spill file or a cache row (unpacked by
        the ``_Unpacker``'s thread, most of them while the walk went on; a row whose texts do not
        validate is encoded again from its records); then the spill file (unlinked) and the cache
        are closed."""
        row: Any = None
        texts: Any = None
        try:
            for loc in locs:
                if len(loc) == 3:  # (offset, frame bytes, text bytes) in the spill file
                    yield self._spilled(*loc)
                    continue
                job, i, shown, apath, key = loc
                if job is not row:
                    if row is not None:
                        self.unpacker.done(row)
                    row = job
                    texts = self._cached(job.hit, job.result(), shown, apath, key, encoder)
                yield texts[i]
        finally:
            self.unpacker.close()
            if self.spill is not None:
                self.spill.close()
            self.cache.close()

    def _spilled(self, offset: int, frame: int, size: int) -> bytes:
        """One text from the spill file (unlinked, this process's alone: only a disk error fails)."""
        from fatbin_inspect.errors import InputError

        if self.spill is None:
            raise InputError("the scan's spill file is gone")
        self.spill.seek(offset)
        text = unpack(self.spill.read(frame), size)
        if text is None:
            raise InputError(f"{self.spill.name}: the scan's spill file does not read back")
        return text

    def _cached(
        self, hit, unpacked: Any, shown: str, apath: str, key: tuple, encoder: Callable[[FileReport], bytes]
    ) -> list:
        """The texts of a cache row (``unpacked``: ``cache.unpack_texts`` of it); a row whose
        texts no longer validate is encoded again from its records, or from the file read again
        here when the row has none (a row a scan with texts wrote), and kept."""
        if unpacked is not MISS:
            return unpacked
        reports = hit.reports(shown)
        if reports is MISS:
            reports = self._reread(shown, apath, key, len(hit.summary))
        texts = [encoder(r) for r in reports]
        self.cache.put(apath, key, reports, [pack_text(t) for t in texts], base=shown)
        return texts

    def _reread(self, shown: str, apath: str, key: tuple, n: int) -> tuple:
        """The records of a file whose row was taken (its ``n`` summaries are in the answer
        already), read again in this process: the same key before and after, and ``n`` records.
        Else the row is dropped (the next scan reads the file) and the scan stops."""
        from fatbin_inspect.errors import InputError
        from fatbin_inspect.inventory.options import as_options
        from fatbin_inspect.scanning import worker

        def same() -> bool:
            try:
                return stat_key(os.stat(apath)) == tuple(key)
            except OSError:
                return False

        if same():
            reports = worker.inspect_file(shown, as_options(self.opts.inventory))
            if len(reports) == n and same():
                return reports
        self.cache.forget(apath)
        raise InputError(f"{self.cache.path}: the scan cache changed while it was read; scan again")


class _Job:
    """One cache row's texts: packed (``Hit.packed_texts``), and unpacked once ``ready``."""

    __slots__ = ("hit", "n", "out", "packed", "ready", "sent", "size")

    def __init__(self, hit, packed: tuple, size: int):
        import threading

        self.hit, self.packed, self.n, self.size = hit, packed, len(hit.summary), size
        self.out: Any = None
        self.sent = False  # handed to the thread (its bytes held against ``_Unpacker.AHEAD``)
        self.ready = threading.Event()

    def result(self) -> Any:
        """The texts (``cache.unpack_texts``), or ``MISS``; unpacked here when the thread has
        not got to them, or they were let go (a row whose texts are written in two runs)."""
        if self.sent:
            self.ready.wait()
        out = self.out
        return unpack_texts(self.packed, self.n) if out is None else out


class _Unpacker:
    """Unpacks cache rows' texts on one thread, in the order the walk found them, while the walk
    goes on (libzstd lets go of the GIL, so a warm scan's 35 MB unpack on the second core, not
    after the walk); at most ``AHEAD`` unpacked bytes are held that were not yet written, so
    memory does not grow with the tree. The rows' queries run on the scan's thread, which owns
    the database connection."""

    AHEAD = 64 << 20

    def __init__(self):
        self.held = 0
        self.waiting: collections.deque[_Job] = collections.deque()
        self.jobs: Any = None  # a queue.SimpleQueue, with the thread, at the first row
        self.closed = False

    def add(self, hit) -> _Job | None:
        """A job for ``hit``'s texts; None when the row holds none for this encoder (or sizes
        that do not parse: its texts are made from its records instead)."""
        packed = hit.packed_texts()
        size = None if packed is MISS else texts_size(packed, len(hit.summary))
        if size is None:
            return None
        job = _Job(hit, packed, size)
        self.waiting.append(job)
        self._send()
        return job

    def done(self, job: _Job) -> None:
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

    def _run(self, jobs) -> None:
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


def _rebase(rec, sent: str, shown: str):
    """A record made on the absolute path ``sent``, on the path ``shown`` instead."""
    if rec.path.startswith(sent):
        return dataclasses.replace(rec, path=shown + rec.path[len(sent) :])
    return rec


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _join_spans(path: str, parts) -> list:
    """The ``worker.encoded`` records of a split zip as one whole-file unit gives them: its own
    record first (kept only with an error, which ended the walk through its members there), then
    the members'."""
    members = []
    shown = member_path.escape(path)  # the zip's own record path (a real "!" is written "\\!")
    for encs in parts:
        members += [e for e in encs if _record_path(e, path) != shown]
        own = [e for e in encs if _record_path(e, path) == shown]
        if own:
            return own[:1] + members
    return members


def _record_path(enc, base: str) -> str:
    return base + enc[0][0] if enc[0] is not None else enc[3].path


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
