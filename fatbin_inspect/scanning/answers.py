"""What the cache answers for a scan: one file's row, or the scan's whole kept answer.

Each function returns what the scan accepts (records, their texts or where they are, their
summary items); none accepts anything itself. A whole answer (``cache.Answer``) is kept for a
scan with an encoder of folders walked file by file, and given back only when the walk gives
what it gave then (``WalkDigest``).
"""

from __future__ import annotations

import collections
import itertools
import json
import operator
import os
from array import array as _array
from collections.abc import Sequence
from typing import Any, NamedTuple

from fatbin_inspect.inventory.roots import Root
from fatbin_inspect.inventory.walk import iter_stat
from fatbin_inspect.scanning.cache import MISS, ScanCache, has_checksum, pack_text, packed_size, stat_key
from fatbin_inspect.scanning.encoded import Encoder
from fatbin_inspect.scanning.texts import RowLoc, TextJob, TextStore, Unpacker

# roots a scan walks file by file: a scan of these alone can keep its whole answer (``cache.Answer``)
WALKED = ("directory", "site-packages", "venv", "conda")

# (C-level: a folder's entries go through no bytecode per entry)
_first, _second, _third = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(2)
_chain = itertools.chain.from_iterable


class WalkDigest:
    """The digest of what a walk gave (``iter_stat``'s ``listed``): each folder as shown with its
    entries' names, why for each entry that has no stat, the stat key (as the cache's: device,
    inode, size, mtime, ctime) of each that has one, or why the folder is not walked; BLAKE2b
    over ``marshal`` version 2 of them, 256 folders at a time (version 2 writes values only,
    never back-references, so equal listings give equal bytes). A folder's path is written once,
    not with each entry's (cheaper than a tuple per entry)."""

    CHUNK = 256

    def __init__(self) -> None:
        try:  # hashlib's own BLAKE2b: ``import hashlib`` also loads OpenSSL's (milliseconds of a warm scan)
            from _blake2 import blake2b
        except ImportError:  # pragma: no cover - a build without the module
            from hashlib import blake2b

        self._hash = blake2b(digest_size=32)
        self._chunk: list[tuple[Any, ...]] = []
        self.whole = True  # False once an input is one no answer may be kept for (an image layout)

    def listed(self, folder: str, entries: Any) -> None:
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


def largest_files_first(roots: Sequence[Root]) -> list[Root]:
    """Roots that are files (wheels, archives) by size, largest first, so that the pool ends on
    small units; then the folders, in the order given. Only the order of the work changes."""

    def size(root: Root) -> int:
        try:
            return os.path.getsize(root.path)
        except OSError:
            return 0

    files = [r for r in roots if not os.path.isdir(r.path)]
    return sorted(files, key=size, reverse=True) + [r for r in roots if os.path.isdir(r.path)]


def scan_key(cache: ScanCache, texts: bool, remote: bool, roots: Sequence[Root]) -> str | None:
    """The key of this scan's ``cache.Answer`` (with the cache's options), or None when it
    keeps none: not streamed ``texts``, no cache, a ``remote`` executor (Dask), or a root that
    is not a folder walked file by file (an image, a wheel, a file, stdin)."""
    if not texts or remote or not cache.enabled:
        return None
    if not roots or any(r.kind not in WALKED for r in roots):
        return None
    where = [[r.path, os.path.abspath(r.path), r.kind] for r in roots]
    return json.dumps([cache.options, cache.encoder, where])


class FileAnswer(NamedTuple):
    """A cache row's answer for one file, for ``ScanLoop.accept``: its records (or summaries),
    their texts (or where they are), the summaries to show, its summary items for the whole
    answer (None: none), and False where the scan can keep no whole answer."""

    records: Sequence[Any]
    texts: Sequence[Any] | None = None
    items: list[Any] | None = None
    answerable: bool = True


def hit_answer(
    hit: Any,
    path: str,
    apath: str,
    key: tuple[Any, ...],
    full: bool,
    encoder: Encoder | None,
    store: TextStore,
) -> FileAnswer | None:
    """What the cache row ``hit`` gives this scan (full records, summaries, or summaries and
    texts: unpacked ahead by a thread while the walk goes on); None when it cannot give what the
    scan needs (a miss). A row cached by a scan that kept no texts is encoded here and kept."""
    if encoder is None:
        if not full:
            return FileAnswer(hit.summaries(path))
        reports = hit.reports(path)
        return None if reports is MISS else FileAnswer(reports)
    job = store.unpacker.add(hit)
    if job is not None:
        where = [RowLoc(job, i, path, apath, key) for i in range(len(hit.summary))]
        return FileAnswer(hit.summaries(path), where, hit.summary)
    reports = hit.reports(path)
    if reports is MISS:
        return None
    texts = [pack_text(encoder(r)) for r in reports]
    store.cache.put(apath, key, reports, texts, base=path)
    return FileAnswer(reports, texts, answerable=False)


class Recalled(NamedTuple):
    """A scan's kept answer whose walk is this one's: its files as ``(path, summaries, where
    their texts are)``, its counts and skipped entries, the job unpacking its texts, and how many they are."""

    files: list[tuple[str, Sequence[Any], list[RowLoc]]]
    stats: dict[str, int]
    skipped: list[tuple[str, str]]
    job: TextJob
    n: int


def recall(cache: ScanCache, unpacker: Unpacker, key: str, roots: Sequence[Root]) -> Recalled | None:
    """The scan's kept answer when the walk gives what it gave then (its texts unpacked on the
    unpacker's thread while the walk goes on: the caller checks ``job.result()`` once it has
    accepted the files); None otherwise."""
    from fatbin_inspect.scanning.cache import summaries_from

    answer = cache.answer(key)
    if answer is None:
        return None
    job = unpacker.add(answer)
    if job is None:
        return None
    walk = WalkDigest()
    for root in largest_files_first(roots):
        walk.walk(root.path)
    if walk.digest() != answer.walk:
        job.result()  # (its bytes let go, not held against the unpacker's budget)
        unpacker.done(job)
        return None
    files: list[tuple[str, Sequence[Any], list[RowLoc]]] = []
    i = 0
    for path, items in answer.files:
        where = [RowLoc(job, i + k, path, None, None) for k in range(len(items))]
        files.append((path, summaries_from(items, path), where))
        i += len(items)
    return Recalled(files, answer.stats, answer.skipped, job, i)


def kept_answer(
    store: TextStore, kept: list[tuple[str, list[Any]]], stats: dict[str, int], skipped: list[tuple[str, str]]
) -> tuple[dict[str, Any], list[bytes]] | None:
    """This scan's answer and its texts' frames, to keep (``ScanCache.put_answer``); None when a
    text is not whole (one that failed its check when packed) or they do not fit one unpacking
    (``Unpacker.AHEAD``)."""
    if sum(len(items) for _, items in kept) != len(store.locs):
        return None
    frames = store.frames()
    if frames is None or not all(has_checksum(f) for f in frames):
        return None
    if sum(packed_size(f) for f in frames) > Unpacker.AHEAD:
        return None
    from fatbin_inspect.scanning.cache import Answer

    counts = {k: stats[k] for k in Answer.STATS}
    return {"stats": counts, "skipped": [list(p) for p in skipped], "files": kept}, frames
