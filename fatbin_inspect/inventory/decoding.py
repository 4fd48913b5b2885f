"""A file's fatbins decoded as ``Options`` ask (kernels, details, or only small cubins:
``decode_fatbins``), in this process or, for a large file on disk, by worker processes that map
the same file and decode contiguous slices of its fatbins (``iter_decoded``), the results
yielded in file order as they are ready.
"""

from __future__ import annotations

import dataclasses
import mmap
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from fatbin_inspect.errors import TruncatedError
from fatbin_inspect.formats import mapguard
from fatbin_inspect.formats.binio import Blob, open_blob
from fatbin_inspect.formats.decompress import Budget
from fatbin_inspect.formats.model import KIND_SASS, Entry, Fatbin
from fatbin_inspect.inventory import spill, workers
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.record_errors import shrank_message, size_or_zero

PARALLEL_MIN_BYTES = 64 << 20  # compressed payload bytes that make a second process worth its start
PROBE_MAX = 64 << 10  # nvcc's device-link cubins are ~1.5 KB and hold no kernels
# each fatbin as listed with an iterator of its entries, decoded as they are taken
Pairs = list[tuple[Fatbin, Iterator[Entry]]]
T = TypeVar("T")  # what an ``iter_decoded`` function makes of a run of decoded fatbins
TOOLKIT_PROBES = 4  # cubins decoded for their toolkit note when the cudart is static (R-RT 3)


def decode_fatbins(
    blob: Blob,
    fatbins: Sequence[Fatbin],
    opts: Options,
    path: str | None = None,
    toolkit_probe: bool = False,
    budget: Budget | None = None,
) -> list[Fatbin]:
    """``probe_small`` decodes only small cubins (device-link output is told apart by them) and,
    for a file with a static cudart, the first few cubins, whose toolkit note gives its CUDA."""
    if opts.kernels or opts.details:
        return [fb for part in iter_decoded(blob, fatbins, opts, path, _same, budget) for fb in part]
    if opts.probe_small:
        return probed(blob, fatbins, toolkit_probe, budget if budget is not None else Budget(blob.size))
    return list(fatbins)


def probed(blob: Blob, fatbins: Sequence[Fatbin], toolkit_probe: bool, budget: Budget) -> list[Fatbin]:
    """``fatbins`` with their small cubins decoded (and the first ``TOOLKIT_PROBES`` larger ones
    when ``toolkit_probe``), the rest as they are."""
    from fatbin_inspect.inventory.payloads import decode_entry  # (here: a plain listing decodes none)

    probes = [TOOLKIT_PROBES if toolkit_probe else 0]

    def probe(e: Entry) -> bool:
        if e.kind != KIND_SASS:
            return False
        if e.size <= PROBE_MAX:
            return True
        probes[0] -= 1
        return probes[0] >= 0

    return [
        dataclasses.replace(
            fb,
            entries=tuple(
                decode_entry(blob, e, kernels=False, budget=budget) if probe(e) else e for e in fb.entries
            ),
        )
        for fb in fatbins
    ]


def _same(pairs: Pairs) -> list[Fatbin]:
    """The decoded fatbins, whole (an ``iter_decoded`` function)."""
    return [dataclasses.replace(fb, entries=tuple(entries)) for fb, entries in pairs]


def parallel_worthwhile(blob: Blob, fatbins: Sequence[Fatbin], opts: Options, path: str | None) -> bool:
    """Large enough (compressed payload) for worker processes to pay for their start."""
    jobs = workers.processes(opts.jobs)
    work = sum(e.stored_size for fb in fatbins for e in fb.entries if e.compression != "none")
    if not (
        jobs > 1 and path is not None and work >= PARALLEL_MIN_BYTES and workers.maps_whole_file(blob, path)
    ):
        return False
    return all(fb.offset + 16 + fb.size <= blob.size for fb in fatbins)  # none read from an inflated section


def iter_decoded(
    blob: Blob,
    fatbins: Sequence[Fatbin],
    opts: Options,
    path: str | None,
    fn: Callable[[Pairs], T],
    budget: Budget | None = None,
) -> Iterator[T]:
    """Decode ``fatbins`` (kernels/details per ``opts``) and yield ``fn(pairs)`` for consecutive
    runs of them, in file order, as they are ready: all of them at once, or, for a large file on
    disk decoded by worker processes, one fatbin at a time, each worker applying ``fn`` where it
    decoded it, so a caller can turn records into their final form (JSON text) without shipping
    150k kernel records back, and write each piece before the next arrives. ``pairs``: each
    fatbin as listed with an iterator of its entries, decoded as they are taken, so ``fn`` can
    let each entry's records go before the next is decoded (``_same``: the decoded fatbins
    whole); ``fn`` must be a module-level function and take the entries in order."""
    if path is not None and parallel_worthwhile(blob, fatbins, opts, path):
        yield from _iter_parallel(path, blob.size, fatbins, opts, workers.processes(opts.jobs), fn)
        return
    yield fn(_pairs(blob, fatbins, opts, budget))


def _pairs(
    blob: Blob, fatbins: Sequence[Fatbin], opts: Options, budget: Budget | None = None, release: bool = False
) -> Pairs:
    """``(fatbin, its entries decoded one at a time)`` of each of ``fatbins``; ``release``: let
    the pages read go every ``RELEASE_STEP`` bytes (one of libtorch_cuda.so's fatbins holds 30 MB
    of compressed cubins)."""
    budget = budget if budget is not None else Budget(blob.size)
    return [(fb, _decoded(blob, fb, opts, budget, release)) for fb in fatbins]


def _decoded(blob: Blob, fb: Fatbin, opts: Options, budget: Budget, release: bool) -> Iterator[Entry]:
    from fatbin_inspect.inventory.payloads import decode_entry

    lo = fb.offset
    for e in fb.entries:
        yield decode_entry(blob, e, kernels=opts.kernels, resources=opts.resources, budget=budget)
        end = e.payload_offset + e.stored_size
        if release and end - lo >= RELEASE_STEP:
            blob.release(lo, end)
            lo = end - (blob.base + end) % mmap.PAGESIZE  # the page it ends in: next time
    if release:
        blob.release(lo, fb.offset + 16 + fb.size)


RELEASE_STEP = 4 << 20


# what glibc may keep free after a slice before it is trimmed: libtorch_cuda.so --kernels, a
# trim after every slice re-faulted tens of thousands of pages; untrimmed, a process kept at most
# ~6 MB free (main arena up to 11 MB) and the tree's peak RSS was ~10 MB higher
TRIM_OVER = 8 << 20


SLICES_PER_JOB = 96  # small slices: ~0.7 MB of JSON each (16: 13 MB pieces, held 3 times over by the parent)


WINDOW_PER_JOB = 3  # slices taken and not yet yielded, per process decoding


def _iter_parallel(
    path: str, size: int, fatbins: Sequence[Fatbin], opts: Options, jobs: int, fn: Callable[[Pairs], T]
) -> Iterator[T]:
    """Decompressing and parsing thousands of cubins is CPU-bound (libtorch_cuda.so: 5 GB of
    zstd output): split the fatbins into contiguous slices of similar decoded size, decoded by
    ``jobs`` processes (this one and ``jobs - 1`` workers that map the same file:
    ``workers.in_order``), and yield the results in order. At most ``jobs * WINDOW_PER_JOB``
    slices are taken and not yet yielded, so the results held at once, and the memory, do not
    grow with the file. ``size``: the file's bytes as this process mapped it (a worker that finds
    another size decodes nothing). What ``fn`` writes to ``spill.current()`` comes back through
    memory files (slice ``i`` into ``ring[i % len(ring)]``), not the pipe."""
    slices: list[list[Fatbin]] = [[] for _ in range(jobs * SLICES_PER_JOB)]
    total = sum(e.size for fb in fatbins for e in fb.entries) or 1
    done = 0
    for fb in fatbins:  # contiguous slices, balanced by decoded bytes (what the work scales with)
        slices[min(len(slices) - 1, done * len(slices) // total)].append(fb)
        done += sum(e.size for e in fb.entries)
    slices = [sl for sl in slices if sl]
    serial_opts = dataclasses.replace(opts, jobs=1)
    workers.trim_heap()  # the workers start with what this process holds, freed pages included
    window = jobs * WINDOW_PER_JOB
    ring = spill.open_ring(window)  # (made before the workers fork)
    crew = workers.in_order(
        _decode_nth, (path, slices, serial_opts, fn, size, ring), len(slices), jobs, window
    )
    try:
        for out in crew:
            yield from out
            if ring is None:
                # (the slice's fragments are written and freed: what glibc keeps of them was
                # 4 MB of this process at the tree's peak, libtorch_cuda.so --kernels: 141 ->
                # 138 MB; read back from a memory file, a piece at a time, they are not held,
                # and a trim only made the next slice's pieces fault their pages in again)
                workers.trim_heap()
    finally:
        crew.close()  # (its workers end before their memory files do)
        spill.close_ring(ring)


def _decode_nth(
    path: str,
    slices: list[list[Fatbin]],
    opts: Options,
    fn: Callable[[Pairs], T],
    size: int,
    ring: tuple[int, ...] | None,
    i: int,
) -> list[T]:
    """``_decode_slice`` of ``slices[i]``, written into the memory file ``ring[i % len(ring)]``."""
    return _decode_slice(path, slices[i], opts, fn, size, ring[i % len(ring)] if ring else None)


def _decode_slice(
    path: str,
    fatbins: Sequence[Fatbin],
    opts: Options,
    fn: Callable[[Pairs], T],
    size: int,
    slot: int | None,
) -> list[T]:
    """``fn`` of each of ``fatbins`` decoded from the file at ``path`` (a worker maps it anew).
    ``size``: the bytes the parent's listing mapped; a file of another size now (truncated or
    replaced since) is not decoded: its entries would each read as cut, the file's record not.
    ``slot``: the memory file ``fn`` may write into (``spill.current()``)."""
    import gc

    old = gc.get_threshold()
    gc.set_threshold(100_000, 50, 100)  # many small acyclic records: see cli.main
    try:
        blob = open_blob(path)
        if blob.size != size:
            raise TruncatedError(
                shrank_message(size, size_or_zero(path))
                if blob.size < size
                else f"the file changed while it was read ({size:,} -> {blob.size:,} bytes): not inspected"
            )
        before = mapguard.faults()
        # each fatbin turned into its final form (JSON) at once, entry by entry: a slice's
        # records together were most of a worker's peak (one of libtorch_cuda.so's: 5 fatbins,
        # 11 MB of JSON), then one fatbin's (4,320 kernels); the pages read stay cached, not
        # resident here
        with spill.writing(slot):
            out = [fn(_pairs(blob, [fb], opts, release=True)) for fb in fatbins]
        if mapguard.faults() != before:  # decoded from zeros: the parent's record says so
            raise TruncatedError(shrank_message(blob.size, size_or_zero(path)))
        workers.trim_heap(TRIM_OVER)
        return out
    finally:
        gc.set_threshold(*old)
