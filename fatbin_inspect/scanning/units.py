"""The scan's work units: files in batches, large files split into parts, and parts joined.

A unit is a module-level function and its arguments, run by an executor (``executors``) in a
worker process or on a Dask worker; what it gives back is a list of ``(path, key, worker.encoded
records)`` for a batch, or one part's result for a part of a split file. Each function here
returns units or records; none holds the scan's state.

A zip this large (a wheel) is split into about ``jobs * 2`` spans of its members, each of at least
``SPAN_BYTES`` inflated, so that one 500 MB wheel does not keep one worker busy while the others
idle; a large ELF file's hidden fatbins are read in slices (``elf_split``). The parts' records
are put together again in file order: the same records, one cache entry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from fatbin_inspect.inventory import member_path

# a large zip's units (no parser imported); the loop reads them here, tests change them here
from fatbin_inspect.inventory.zip_plan import SPAN_BYTES as SPAN_BYTES
from fatbin_inspect.inventory.zip_plan import SPLIT_BYTES as SPLIT_BYTES
from fatbin_inspect.scanning.encoded import Encoded, Encoder, Key

BATCH_FILES = 64
BATCH_BYTES = 64 << 20
ELF_PARTS_PER_JOB = 8  # slices of one ELF file's hidden fatbins per worker


class FileRef(NamedTuple):
    """One file of a batch, as the workers get it."""

    path: str
    key: Key


class PartRef(NamedTuple):
    """Which part of which split file a unit is: ``token`` names the split (not the path: the
    same path may be in flight twice), ``at`` the part's place in it."""

    token: int
    at: int


class Unit(NamedTuple):
    """``fn(*args)`` for an executor; ``part`` set for a part of a split file. A batch's
    ``args[0]`` is its ``FileRef`` list."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    part: PartRef | None = None

    def alone(self) -> list[Unit]:
        """This unit as units of one file each (a part is one already)."""
        if self.part is not None:
            return [self]
        return [Unit(self.fn, ((ref,), *self.args[1:])) for ref in self.args[0]]


class Work(NamedTuple):
    """What every unit of one scan passes on to the worker functions: the inventory options, the
    encoder, whether the records come back whole (``keep``), and whether they are encoded for the
    cache (``data``)."""

    inventory: Any
    encoder: Encoder | None
    keep: bool
    data: bool


def batch_unit(files: Sequence[FileRef], work: Work) -> Unit:
    """One unit reading ``files`` whole (``worker.inspect_batch``)."""
    import fatbin_inspect.scanning.worker as worker

    return Unit(worker.inspect_batch, (list(files), *work))


class Batcher:
    """Files gathered into batches of at most ``BATCH_FILES`` files or ``BATCH_BYTES`` bytes."""

    __slots__ = ("files", "nbytes")

    def __init__(self) -> None:
        self.files: list[FileRef] = []
        self.nbytes = 0

    def add(self, path: str, key: Key, size: int) -> bool:
        """Add a file; True when the batch is full (``take`` it)."""
        self.files.append(FileRef(path, key))
        self.nbytes += size
        return len(self.files) >= BATCH_FILES or self.nbytes >= BATCH_BYTES

    def take(self) -> list[FileRef]:
        """The files gathered (none left here)."""
        files, self.files, self.nbytes = self.files, [], 0
        return files


JoinFn = Callable[[str, list[Any]], "list[Encoded] | None"]


@dataclass(slots=True)
class SplitFile:
    """A file whose parts are in flight: their results (None until done), how many are left,
    why one gave none (its process died), the Dask workers tried for a part none could read,
    and ``join``: ``(path, results in part order)`` -> the file's ``worker.encoded`` records, or
    None (the file is then read whole, one unit)."""

    path: str
    key: Key
    results: list[Any]
    left: int
    join: JoinFn
    error: str | None = None
    unread: int = 0


class Joined(NamedTuple):
    """A split file whose parts are all done: its records (None: read it whole), or why it is
    one error record (``error``), or the Dask workers tried where no worker could read a part."""

    path: str
    key: Key
    records: list[Encoded] | None
    error: str | None
    unread: int


class Splits:
    """The split files in flight, each under a token."""

    __slots__ = ("files", "tokens")

    def __init__(self) -> None:
        self.files: dict[int, SplitFile] = {}
        self.tokens = 0

    def start(
        self,
        path: str,
        key: Key,
        fn: Callable[..., Any],
        args: list[tuple[Any, ...]],
        sizes: list[int],
        join: JoinFn,
    ) -> list[Unit]:
        """The units of one file's parts (``fn``'s ``args``), the largest first."""
        self.tokens += 1
        token = self.tokens
        self.files[token] = SplitFile(path, key, [None] * len(args), len(args), join)
        order = sorted(range(len(args)), key=lambda i: -sizes[i])
        return [Unit(fn, args[i], PartRef(token, i)) for i in order]

    def done(self, part: PartRef, result: Any) -> Joined | None:
        """One part's result; the file ``Joined`` once it was the last part's."""
        state = self.files[part.token]
        state.results[part.at] = result
        state.left -= 1
        if state.left:
            return None
        del self.files[part.token]
        return self._joined(state)

    def failed(self, part: PartRef, error: str | None = None, unread: int = 0) -> Joined | None:
        """A part that gave no result: its process died (``error``), or no Dask worker could read
        it (``unread`` workers tried)."""
        state = self.files[part.token]
        if error is not None:
            state.error = error
        state.unread = max(state.unread, unread)
        return self.done(part, [])

    @staticmethod
    def _joined(state: SplitFile) -> Joined:
        if state.error is not None or state.unread:
            return Joined(state.path, state.key, None, state.error, state.unread)
        return Joined(state.path, state.key, state.join(state.path, state.results), None, 0)


def zip_parts(
    path: str, key: Key, spans: Sequence[tuple[int, int, int]], work: Work
) -> tuple[Any, list[Any], list[int], JoinFn]:
    """``Splits.start``'s function, arguments, sizes and join for a large zip's ``spans``
    (``worker.zip_spans``: first member, end, inflated bytes)."""
    import fatbin_inspect.scanning.worker as worker

    args = [(path, key, span[:2], *work) for span in spans]
    return worker.inspect_span, args, [span[2] for span in spans], join_spans


def elf_parts(
    path: str, key: Key, split: Any, work: Work, encoder_parts: Callable[..., Any] | None
) -> tuple[Any, list[Any], list[int], JoinFn]:
    """``Splits.start``'s function, arguments, sizes and join for a large ELF file's ``split``
    (``elf_split.plan``)."""
    import fatbin_inspect.scanning.elf_split as elf_split

    parts = encoder_parts if work.encoder is not None else None
    sizes = elf_split.sizes(split)
    args = [(path, split, i, work.inventory, parts, work.data, key) for i in range(len(sizes))]
    return elf_split.inspect_part, args, sizes, functools.partial(elf_split.join, split=split)


def join_spans(path: str, parts: list[list[Encoded]]) -> list[Encoded]:
    """The ``worker.encoded`` records of a split zip as one whole-file unit gives them: its own
    record first (kept only with an error, which ended the walk through its members there), then
    the members'."""
    members: list[Encoded] = []
    shown = member_path.escape(path)  # the zip's own record path (a real "!" is written "\\!")
    for encs in parts:
        own: list[Encoded] = []
        for e in encs:
            (own if _record_path(e, path) == shown else members).append(e)
        if own:
            return own[:1] + members
    return members


def _record_path(enc: Encoded, base: str) -> str:
    if enc.item is not None:
        return base + enc.item[0]
    assert enc.record is not None  # (one that does not encode is handed back whole)
    return enc.record.path
