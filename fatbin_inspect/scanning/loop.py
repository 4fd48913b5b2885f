"""The scan's one loop: it walks the roots (``entries``), asks the cache (``answers``), hands the
misses to an executor in units (``units``, ``executors``), and accepts what comes back, each
record attributed to its distribution (``distributions``).

The loop owns the executor, the records accepted, their texts (``texts.TextStore``) and the
attribution; the stages it calls return values and never call back. It looks at the units in
flight every ``PUMP_EVERY`` files walked and while it waits at the end.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import fatbin_inspect.scanning.answers as answers
import fatbin_inspect.scanning.entries as entries
import fatbin_inspect.scanning.units as units
from fatbin_inspect.formats.model import FileError, FileReport
from fatbin_inspect.inventory import member_path
from fatbin_inspect.inventory.roots import Root
from fatbin_inspect.scanning.cache import MISS, ScanCache, default_dir, pack_text, stat_key, summaries_from
from fatbin_inspect.scanning.distributions import Attributor, innermost_wheel, wheel_distribution
from fatbin_inspect.scanning.encoded import Encoded, Scanned
from fatbin_inspect.scanning.executors import Crash, Done, Executor, InProcess, LocalPool, Unread
from fatbin_inspect.scanning.options import ProgressFn, ScanOptions, options_fingerprint
from fatbin_inspect.scanning.texts import TextStore


class ScanLoop:
    """One scan: made (its cache opened, its executor reached), ``run`` once over the roots,
    then read (``ordered``, ``stats``, ``skipped``, ``images``, ``notes``, ``unread``)."""

    PUMP_EVERY = 64  # files walked between two looks at the units in flight

    def __init__(self, opts: ScanOptions, progress: ProgressFn | None) -> None:
        self.opts = opts
        self.progress = progress
        enc = opts.encoder
        self.encoder = enc
        self.cache = ScanCache(
            default_dir() if opts.cache_dir == "default" else opts.cache_dir,
            options_fingerprint(opts.inventory),
            f"{enc.__module__}.{enc.__qualname__}" if enc else None,
        )
        self.full = not opts.summary and enc is None  # the workers hand back whole records
        # the workers encode each record's data for the cache, except when they encode its text:
        # the text is all a scan with this encoder reads back, and the data cost that scan a
        # tenth of its cold CPU; a scan that needs records from a row holding only texts reads
        # the file again and adds them (``ScanCache.put_encoded``)
        self.work = units.Work(opts.inventory, enc, self.full, self.cache.enabled and enc is None)
        self.store = TextStore(self.cache, opts.inventory)
        self.attributor = Attributor()
        self.reports: list[Any] = []  # FileReport, or coverage.FileSummary
        self.stats = dict(files=0, bytes=0, inspected=0, cache_hits=0, skipped=0)
        self.skipped: list[tuple[str, str]] = []
        self.images: list[tuple[str, Any]] = []
        self.done = self.bytes_done = self.ticks = 0
        self.notes: list[str] = []
        self.unread: list[str] = []
        self.executor = executor_for(opts)
        self.shown: dict[str, str] = {}  # absolute path sent to a remote worker -> the path shown
        self.all_members = opts.option("members") == "all"
        self.batch = units.Batcher()
        self.apaths: dict[str, str] = {}  # path in a unit -> its absolute path (the cache key)
        self.splits = units.Splits()
        # (path, summary items) of each file, in the order accepted: the scan's ``cache.Answer``,
        # kept unless something is met that a rescan must read again (``answerable`` False)
        self.kept: list[tuple[str, list[Any]]] = []
        self.answerable = True

    # ------------------------------------------------------------------ records
    def _tick(self, n: int, nbytes: int) -> None:
        self.done += n
        self.bytes_done += nbytes
        if self.progress:
            self.progress(self.done, self.stats["files"], self.bytes_done)
        self.ticks += 1
        if self.ticks % self.PUMP_EVERY == 0 and self.executor.busy:  # the walk's turn to hand out work
            self._pump()

    def accept(
        self,
        path: str,
        records: Sequence[Any],
        texts: Sequence[Any] | None = None,
        summaries: Sequence[Any] | None = None,
        attribute: bool = True,
    ) -> None:
        """Keep the records of one file: full records, or their summaries (given, or made here),
        the texts (``cache.pack_text``ed, as workers hand them over) kept with an encoder."""
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
                self.store.keep(texts[i])

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

    def _finish(self, results: list[Scanned]) -> None:
        """The files a unit read (or a split file put together)."""
        for path, key, encs in results:
            apath = self.apaths.pop(path, None) or os.path.abspath(path)
            if self.executor.remote:  # sent as ``apath``: the records are shown on the path given
                path, encs = self._shown_on(path, encs)
            texts: list[Any] | None = [e.text for e in encs] if self.encoder is not None else None
            summaries: Sequence[Any]
            items = [e.item for e in encs if e.item is not None]
            if len(items) == len(encs):
                self.cache.put_encoded(
                    apath, key, [(e.item, e.data) for e in encs if e.item is not None], texts
                )
                summaries = summaries_from(items, path)
                self._kept(path, items)
            else:  # some record does not encode: not cached, summarized here
                summaries = [_summary(e, path) for e in encs]
                self.answerable = False
            self.accept(path, [e.record for e in encs] if self.full else summaries, texts, summaries)
            self._tick(1, key[2])

    def _kept(self, path: str, items: list[Any]) -> None:
        """A file's summary items, for the scan's answer (none is kept unless every item became
        a record with a text: an image's own record may not)."""
        if self.answerable:
            self.kept.append((path, items))

    def _shown_on(self, sent: str, encs: list[Encoded]) -> tuple[str, list[Encoded]]:
        """A remote unit's records, made on the absolute path ``sent``, on the path the scan shows."""
        shown = self.shown.pop(sent, sent)
        if shown != sent:
            encs = [
                e if e.record is None else e._replace(record=_rebase(e.record, sent, shown)) for e in encs
            ]
        return shown, encs

    def _error(self, path: str, size: int, message: str) -> None:
        """A file that cannot be read: one record with the error (its text encoded here)."""
        self.answerable = False  # (read again by the next scan)
        rec = FileReport(path=path, format="unknown", size=size, error=FileError(message))
        self.accept(path, (rec,), [pack_text(self.encoder(rec))] if self.encoder else None, attribute=False)

    def _unread(self, path: str, key: tuple[Any, ...], tried: int) -> None:
        """A file no Dask worker could read: an error record (never cached) and a non-zero exit."""
        self.apaths.pop(path, None)
        shown = self.shown.pop(path, path)
        self.unread.append(shown)
        self._error(shown, key[2], f"not readable on any Dask worker ({tried} tried)")
        self._tick(1, key[2])

    # -------------------------------------------------------------------- units
    def _submit(self, unit: units.Unit) -> None:
        self.executor.submit(unit)
        self._pump()

    def _pump(self, wait: bool = False) -> None:
        """Take in the units that ended (a result taken in ticks, and a tick may look again: the
        executor gives each ended unit once) and hand out the queued ones."""
        for done in self.executor.done(wait):
            self._result(done)

    def _result(self, done: Done) -> None:
        unit, result = done
        if type(result) is Crash:
            self._crashed(unit, f"the worker process inspecting this file died ({result.why}): not inspected")
        elif type(result) is Unread:
            if unit.part is not None:
                self._joined(self.splits.failed(unit.part, unread=result.tried))
            else:
                for path, key in unit.args[0]:
                    self._unread(path, key, result.tried)
        elif unit.part is not None:
            self._joined(self.splits.done(unit.part, result))
        else:
            self._finish(result)

    def _crashed(self, unit: units.Unit, message: str) -> None:
        """A unit that killed its process when run alone: its files get an error record (not
        cached: the next scan tries again)."""
        if unit.part is not None:
            self._joined(self.splits.failed(unit.part, error=message))
            return
        for path, key in unit.args[0]:
            self._failed(path, key, message)

    def _failed(self, path: str, key: tuple[Any, ...], message: str) -> None:
        """A file sent to the workers that gave no records: one error record (not cached)."""
        self.apaths.pop(path, None)
        self._error(path, key[2], message)
        self._tick(1, key[2])

    def _joined(self, joined: units.Joined | None) -> None:
        """A split file whose parts are all done: its records, its error, or a unit reading it whole."""
        if joined is None:
            return
        path, key = joined.path, joined.key
        if joined.unread:  # a part no Dask worker could read: the whole file is unread
            self._unread(path, key, joined.unread)
        elif joined.error is not None:  # a part's process died: the file is one error record
            self._failed(path, key, joined.error)
        elif joined.records is not None:
            self._finish([Scanned(path, key, joined.records)])
        else:  # a part could not vouch for its bytes: the file whole
            self._submit(units.batch_unit([units.FileRef(path, key)], self.work))

    def _flush(self) -> None:
        if self.batch.files:
            self._submit(units.batch_unit(self.batch.take(), self.work))

    def _split(self, path: str, key: tuple[Any, ...], size: int, fmt: str) -> bool:
        """A large file handed out in parts (a zip's spans, an ELF file's slices); False for one
        read whole."""
        jobs = self.executor.jobs
        if jobs == 1 or size < units.SPLIT_BYTES:
            return False
        parts = None
        if fmt == "zip":
            import fatbin_inspect.scanning.worker as worker

            spans = worker.zip_spans(path, self.all_members, jobs * 2, units.SPAN_BYTES)
            parts = units.zip_parts(path, key, spans, self.work) if spans else None
        elif fmt == "elf" and self._splits_elf():
            import fatbin_inspect.scanning.elf_split as elf_split

            split = elf_split.plan(path, self.opts.inventory, units.ELF_PARTS_PER_JOB * jobs)
            parts = units.elf_parts(path, key, split, self.work, self.opts.encoder_parts) if split else None
        if parts is None:
            return False
        for unit in self.splits.start(path, key, *parts):
            self._submit(unit)
        return True

    def _splits_elf(self) -> bool:
        """ELF files are split (``elf_split``) in this scan: on a local pool, with summaries."""
        return (
            not self.executor.remote
            and not self.full
            and (self.encoder is None or self.opts.encoder_parts is not None)
        )

    # --------------------------------------------------------------------- walk
    def _file(self, seen: entries.Seen) -> None:
        """One regular file: its cache key and size, then the cache's answer or a unit."""
        path, apath, st, fmt, key, stat_of, size = seen
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
        if (size < entries.MIN_SIZE and fmt != "oci") or self._answered(path, apath, key):
            self._tick(1, size)  # (too small: an image whose metadata fails says why)
            return
        self._miss(path, apath, key, size, fmt)

    def _answered(self, path: str, apath: str, key: tuple[Any, ...]) -> bool:
        """The cache answers for the file: a row of a file without device code, or a hit this
        scan can use (accepted)."""
        cached = self.cache.get(apath, key)
        if cached is None:
            return True
        if cached is MISS:
            return False
        got = answers.hit_answer(cached, path, apath, key, self.full, self.encoder, self.store)
        if got is None:
            return False
        if got.items is not None:
            self._kept(path, got.items)
        self.answerable = self.answerable and got.answerable
        self.accept(path, got.records, got.texts)
        self.stats["cache_hits"] += 1
        self.stats["inspected"] += 1
        return True

    def _miss(self, path: str, apath: str, key: tuple[Any, ...], size: int, fmt: str | None) -> None:
        """A file the cache cannot answer for: its head read here (a file with no device format
        is remembered as such), then a unit (a large file split into parts)."""
        import fatbin_inspect.scanning.worker as worker

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
        if self.executor.remote:  # remote workers get absolute paths (not their own cwd's)
            self.shown[apath] = path
            path = apath
        self.apaths[path] = apath
        if self._split(path, key, size, fmt):
            return
        if self.batch.add(path, key, size):
            self._flush()

    def _settled(self, n: int, nbytes: int) -> None:
        """``n`` files with nothing to report (too small, or cached as no binary)."""
        self.stats["files"] += n
        self.stats["bytes"] += nbytes
        self._tick(n, nbytes)

    def _stdin(self, path: str) -> None:
        """``-``: standard input read once, here (a pipe is not for the pool), never cached."""
        import fatbin_inspect.scanning.worker as worker
        from fatbin_inspect.inventory.options import as_options
        from fatbin_inspect.inventory.reader import inspect_blob
        from fatbin_inspect.inventory.stdin import stdin_blob

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
        texts = [e.text for e in encs] if self.encoder is not None else None
        self.accept(path, records, texts, attribute=False)
        self._tick(1, blob.size)

    def _root(self, root: Root, walk: answers.WalkDigest | None) -> None:
        if root.kind == "stdin":
            self._stdin(root.path)
            return
        image = entries.image_root(root, self.opts.option("platform"))
        if image is not None:
            self.images += [(root.path, i) for i in image.images]
            if image.unit is not None:
                self._file(image.unit)
                return
        known = self.cache.preload(os.path.abspath(root.path))
        for entry in entries.walk(root.path, known, None if walk is None else walk.listed):
            if isinstance(entry, entries.Seen):
                self._file(entry)
            elif isinstance(entry, entries.Settled):
                self._settled(*entry)
            elif isinstance(entry, entries.Unreadable):
                self._error(entry.path, 0, entry.why)
            else:
                self.stats["skipped"] += 1
                self.skipped.append((entry.path, entry.why))

    # ---------------------------------------------------------------------- run
    def run(self, roots: tuple[Root, ...]) -> None:
        self.attributor = Attributor(r.path for r in roots)  # metadata read up to each root's ceiling
        self.notes += self.executor.start([os.path.abspath(r.path) for r in roots])
        scan_key = answers.scan_key(self.cache, self.encoder is not None, self.executor.remote, roots)
        walk = None
        try:
            if scan_key is None or not self._recall(scan_key, roots):
                walk = None if scan_key is None else answers.WalkDigest()
                for root in answers.largest_files_first(roots):
                    self._root(root, walk)
                self._flush()
                self._pump()
                while self.executor.pending:
                    self._pump(wait=True)
        except BaseException:  # Ctrl-C, or an error: end the workers now, not after their units
            self.executor.abandon()
            raise
        finally:
            self._close()
        if walk is not None and scan_key is not None:
            self._keep_answer(scan_key, walk)

    def _recall(self, scan_key: str, roots: tuple[Root, ...]) -> bool:
        """Answer from the scan's kept answer (``answers.recall``); False, with nothing
        changed, when there is none or its texts fail."""
        got = answers.recall(self.cache, self.store.unpacker, scan_key, roots)
        if got is None:
            return False
        for path, summaries, where in got.files:
            self.accept(path, summaries, where, summaries)
        if got.job.result() is MISS or len(self.reports) != got.n:
            self.store.unpacker.done(got.job)
            self.reports, self.store.locs = [], []
            return False
        self.stats.update(got.stats, cache_hits=got.stats["inspected"])
        self.skipped = list(got.skipped)
        self._tick(got.stats["files"], got.stats["bytes"])
        return True

    def _keep_answer(self, scan_key: str, walk: answers.WalkDigest) -> None:
        """Keep this scan's answer (``cache.Answer``) when nothing in it must be read again."""
        digest = walk.digest()
        if not (self.answerable and walk.whole) or self.unread or len(self.store.locs) != len(self.reports):
            return
        kept = answers.kept_answer(self.store, self.kept, self.stats, self.skipped)
        if kept is not None:
            self.cache.put_answer(scan_key, digest, *kept)

    def _close(self) -> None:
        """The executor let go; the cache closed (with an encoder: flushed, as the texts still in
        cache rows are read from it as they are written out)."""
        self.executor.close()
        if self.encoder is None:
            self.cache.close()
        else:
            self.cache.flush()

    def ordered(self) -> tuple[list[Any], Callable[[], Iterator[bytes]] | None]:
        """The records sorted by path, and with an encoder their texts in that order."""
        order = sorted(range(len(self.reports)), key=lambda i: self.reports[i].path)
        texts = None
        if self.encoder is not None:
            encoder = self.encoder
            texts = lambda: self.store.texts(order, encoder)  # noqa: E731
        return [self.reports[i] for i in order], texts


def executor_for(opts: ScanOptions) -> Executor:
    """The executor a scan asked for: the Dask scheduler's (reached here), else a local pool of
    ``jobs`` processes (``inventory.workers.processes``), or this process alone for one."""
    if opts.executor == "dask":
        from fatbin_inspect.scanning.dask_executor import DaskExecutor

        return DaskExecutor(opts.scheduler, opts.scheduler_file, opts.connect_timeout, opts.tls)
    from fatbin_inspect.inventory.workers import processes

    n = processes(opts.jobs)
    return InProcess() if n == 1 else LocalPool(n)


def _summary(enc: Encoded, path: str) -> Any:
    """The ``coverage.FileSummary`` of one record of ``path``: of the record where it came back
    whole, else of its summary item."""
    if enc.record is None:
        assert enc.item is not None  # a record that does not encode comes back whole
        return summaries_from([enc.item], path)[0]
    from fatbin_inspect.scanning.coverage import summarize

    return summarize(enc.record)


def _rebase(rec: Any, sent: str, shown: str) -> Any:
    """A record made on the absolute path ``sent``, on the path ``shown`` instead."""
    if rec.path.startswith(sent):
        return dataclasses.replace(rec, path=shown + rec.path[len(sent) :])
    return rec
