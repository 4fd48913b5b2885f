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

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.inventory.roots import Root, resolve_roots
from fatbin_inspect.scanning.options import FINGERPRINT_DEFAULTS, ProgressFn, ScanOptions, options_fingerprint

__all__ = [
    "FINGERPRINT_DEFAULTS",
    "ProgressFn",
    "ScanOptions",
    "ScanResult",
    "ScanStats",
    "options_fingerprint",
    "scan",
]


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


def scan(
    paths: Iterable[str] = (), opts: ScanOptions = ScanOptions(), progress: ProgressFn | None = None
) -> ScanResult:
    """Scan ``paths`` (none: the running interpreter's site-packages) and return device-code records."""
    from fatbin_inspect.scanning.loop import ScanLoop

    loop = ScanLoop(opts, progress)  # (a Dask scheduler is reached before the paths are resolved)
    roots = resolve_roots(paths)
    loop.run(roots)
    reports, texts = loop.ordered()
    return ScanResult(
        roots,
        tuple(reports),
        ScanStats(cache=loop.cache.path, **loop.stats),
        texts=texts,
        skipped=tuple(loop.skipped),
        notes=tuple(loop.notes + loop.attributor.notes),  # + system package databases not read
        unread=tuple(sorted(loop.unread)),
        images=tuple(loop.images),
    )
