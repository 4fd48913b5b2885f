"""One large ELF file's hidden fatbins read by several scan workers, then joined by the scan.

cuFFT holds 24,000 fatbins in a 265 MB ``.ldata`` section, found by the magic scan: one worker
was still on them long after the other had finished the rest of the tree. The plan
(``inventory.slices.HiddenSplit``) cuts those pieces into slices. Part 0 reads the file as ever,
less the slices' pieces (the record's other fields, its own fatbins); part ``i`` reads slice
``i - 1``. Each part encodes its fatbins where it found them (the scan's text by
``ScanOptions.encoder_parts``, the cache's data by ``cache.record_data_parts``) and counts them
for the summary (``coverage.tally``); ``join`` keeps of each slice the fatbins the magic scan of
the whole piece finds (``slices.chained``: a slice that begins inside a fatbin drops the false
hits it took there) and puts the bytes together in file order, so the text, the data and the
summary are those one worker makes of the file (tests/scanning/test_elf_split.py). When that cannot be
vouched for (a false hit across the point where the whole scan resumes, a limit reached, the
static cudart marker in a slice's bytes, budgets that together overspend the file's, the file
changed or unreadable) ``join`` answers None and the scan reads the file whole, as before.
Local pools only: a Dask scan sends each file whole.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from fatbin_inspect.errors import InputError
from fatbin_inspect.formats.binio import Blob, open_blob
from fatbin_inspect.formats.decompress import Budget
from fatbin_inspect.formats.mapguard import faults
from fatbin_inspect.inventory.options import Options, as_options
from fatbin_inspect.inventory.slices import (
    HiddenSplit,
    chained,
    hidden_split,
    inspect_split_main,
    scan_slice,
    slice_has_marker,
)
from fatbin_inspect.scanning.cache import (
    Key,
    is_inert,
    pack,
    pack_stream,
    packed_size,
    record_data_parts,
    stat_key,
    unpack_stream,
)
from fatbin_inspect.scanning.coverage import Tally, codes, merged, summary_of, tally, tally_codes
from fatbin_inspect.scanning.encoded import Encoded

HEAD = 512


def plan(path: str, opts: Any, parts: int) -> HiddenSplit | None:
    """The split of the ELF file at ``path`` into at most ``parts`` slices, or None (read it
    whole). Reads its section table and looks for the static cudart marker outside the slices."""
    from fatbin_inspect.containers import detect

    opts, blob = _opened(path, opts)
    if blob is None or detect(blob.head(HEAD)) != "elf":
        return None
    return hidden_split("elf", blob, opts, parts)


def _opened(path: str, opts: Any) -> tuple[Options, Blob | None]:
    """``opts`` as ``Options`` and the file mapped (None when it cannot be)."""
    try:
        return as_options(opts), open_blob(path)
    except InputError:
        return as_options(opts), None


def sizes(split: HiddenSplit) -> list[int]:
    """Bytes each part scans (part 0: 0, its work is not known ahead), to hand out the largest first."""
    return [0] + [hi - lo for lo, hi, _end, _name in split.slices]


@dataclass(frozen=True)
class Items:
    """A part's items of one kind (the scan's text or the cache's data), as they cross the pipe:
    ``first`` as they are (all of part 0's; a slice's first ``FIRST_CODES``, which ``chained``
    may drop), the others joined by ``sep`` and ``cache.pack``ed in ``rest`` (a split cuFFT's
    23 MB of text reach the scan as 0.5 MB, which it never holds unpacked whole); ``inert``:
    all pass ``cache.pack_text``'s check."""

    first: list[bytes]
    rest: bytes | None
    sep: bytes
    inert: bool


@dataclass(frozen=True)
class Part:
    """What one part hands back. ``starts``/``ends``: its fatbins' extents, in file order;
    ``text``/``data``: their ``Items`` (None when not asked for); ``first_codes``:
    ``coverage.codes`` of the first ``FIRST_CODES`` fatbins, ``rest``: the ``coverage.tally`` of
    the others; part 0 also the record less its fatbins and the text and data around them
    (before, after, separator)."""

    starts: list[int]
    ends: list[int]
    text: Items | None
    data: Items | None
    first_codes: list[frozenset]
    rest: Tally
    spent: int  # inflation budget spent (``decompress.Budget``)
    marker: bool  # the static cudart marker seen in a slice's bytes
    record: Any = None
    text_around: tuple[bytes, bytes, bytes] | None = None
    data_around: tuple[bytes, bytes, bytes] | None = None


FIRST_CODES = 16

# (before, after, separator, items) of a record's text or data, as ``cache.record_data_parts``
EncodedParts = tuple[bytes, bytes, bytes, list[bytes]]
Piece = bytes | tuple[bytes]  # bytes as they are, or a packed rest as ``(frame,)``


def inspect_part(
    path: str,
    split: HiddenSplit,
    i: int,
    opts: Any,
    encoder_parts: Callable[..., EncodedParts | None] | None,
    data: bool,
    key: tuple[int, ...] | None = None,
) -> Part | None:
    """Pool entry point: part ``i`` of ``split`` (0: the file less its slices; ``i``: slice
    ``i - 1``), encoded; None when it cannot vouch for its bytes (the file is then read whole),
    as when the file's ``cache.stat_key`` is no longer ``key`` once read (the parts map the file
    one after another: a file replaced meanwhile would mix two files' fatbins)."""
    opts, blob = _opened(path, opts)
    if blob is None:
        return None
    before = faults()
    rec = None
    if i == 0:
        got = inspect_split_main(path, blob, opts, split)
        if got is None:
            return None
        rec, spent = got
        fatbins, marker = list(rec.fatbins), False
    else:
        budget = Budget(blob.size)
        found = scan_slice(blob, split, i - 1, opts, budget)
        if found is None:
            return None
        fatbins, spent, marker = (
            found,
            budget.limit - budget.left,
            slice_has_marker(blob, split, i - 1, found),
        )
    if faults() != before:  # read from zeros: the file shrank meanwhile
        return None
    texts = encoder_parts(rec, fatbins) if encoder_parts is not None else None
    if encoder_parts is not None and texts is None:
        return None
    try:
        datas = record_data_parts(rec, path, fatbins) if data else None
    except ValueError:  # (a record path not under the file's: the whole file's unit tells)
        return None
    if key is not None and _key(path) != tuple(key):
        return None
    first = len(fatbins) if i == 0 else FIRST_CODES
    return Part(
        [fb.offset for fb in fatbins],
        [fb.end for fb in fatbins],
        _items(texts, first, True),
        _items(datas, first, False),
        [codes(fb) for fb in fatbins[:FIRST_CODES]],
        tally(fatbins[FIRST_CODES:]),
        spent,
        marker,
        dataclasses.replace(rec, fatbins=()) if rec is not None else None,
        texts[:3] if texts is not None else None,
        datas[:3] if datas is not None else None,
    )


def _key(path: str) -> Key | None:
    try:
        return stat_key(os.stat(path))
    except OSError:
        return None


def _items(parts: EncodedParts | None, first: int, text: bool) -> Items | None:
    if parts is None:
        return None
    sep, items = parts[2], parts[3]
    rest = sep.join(items[first:]) if len(items) > first else None
    inert = not text or (all(map(is_inert, items[:first])) and (rest is None or is_inert(rest)))
    return Items(items[:first], pack(rest) if rest is not None else None, sep, inert)


def join(path: str, parts: list[Any], split: HiddenSplit) -> list[Encoded] | None:
    """The ``worker.encoded`` records of the whole file from its parts' results, or None (read
    it whole: a part could not vouch for its bytes, their budgets together overspent the file's,
    or no fatbin was found)."""
    from fatbin_inspect.scanning.record_data import rebased_data

    if any(not isinstance(p, Part) for p in parts) or any(p.marker for p in parts):
        return None
    if sum(p.spent for p in parts) > Budget(split.size).limit:
        return None
    main, slices = parts[0], parts[1:]
    keep = chained(split, [list(zip(p.starts, p.ends)) for p in slices])
    if keep is None or any(j > FIRST_CODES for j in keep):
        return None
    # segments of consecutive fatbins, (first offset, text, data) as pieces: the main part's
    # between the pieces of the split, each slice's from its first kept fatbin
    segments = _segments(main, sorted(a for a, _b in split.pieces))
    counts = [tally_codes(main.first_codes), main.rest]
    for p, j in zip(slices, keep):
        if j < len(p.starts):
            segments.append((p.starts[j], _from(p.text, j), _from(p.data, j)))
            counts += [tally_codes(p.first_codes[j:]), p.rest]
    if not segments:
        return None
    segments.sort(key=lambda s: s[0])
    item = rebased_data(summary_of(main.record, merged(counts)), path)
    data = _packed(main.data_around, [s[2] for s in segments], [p.data for p in parts], False)
    text = _packed(main.text_around, [s[1] for s in segments], [p.text for p in parts], True)
    return [Encoded(item, data, text, None)]


def _segments(main: Part, cuts: list[int]) -> list[tuple[int, list[Piece] | None, list[Piece] | None]]:
    """The main part's fatbins as runs no piece of the split falls between."""
    runs = itertools.groupby(range(len(main.starts)), key=lambda j: bisect.bisect(cuts, main.starts[j]))
    out = []
    for _at, run in runs:
        indexes = list(run)
        j, k = indexes[0], indexes[-1] + 1
        out.append((main.starts[j], _from(main.text, j, k), _from(main.data, j, k)))
    return out


def _from(items: Items | None, j: int, k: int | None = None) -> list[Piece] | None:
    """The pieces of items ``j`` to ``k`` (default: to the last), separators between them; a
    packed rest as ``(frame,)``."""
    if items is None:
        return None
    pieces: list[Piece] = []
    for item in items.first[j:k]:
        pieces += [items.sep, item] if pieces else [item]
    if k is None and items.rest is not None:
        pieces += [items.sep, (items.rest,)] if pieces else [(items.rest,)]
    return pieces


def _packed(
    around: tuple[bytes, bytes, bytes] | None,
    segments: Sequence[list[Piece] | None],
    items: Sequence[Items | None],
    text: bool,
) -> bytes | None:
    """One frame of ``before + separator.join(segments) + after`` (``around``), the packed rests
    unpacked into it a step at a time; None without ``around``."""
    if around is None:
        return None
    before, after, sep = around
    pieces: list[Piece] = [before]
    for j, seg in enumerate(segments):
        assert seg is not None  # with ``around``, every part handed back its items
        pieces += [sep, *seg] if j else seg
    pieces.append(after)
    size = sum(len(p) if isinstance(p, bytes) else packed_size(p[0]) for p in pieces)
    inert = text and is_inert(before + after) and all(it is not None and it.inert for it in items)
    return pack_stream(_unpacked(pieces), size, inert)


def _unpacked(pieces: list[Piece]) -> Iterator[bytes]:
    for p in pieces:
        if isinstance(p, bytes):
            yield p
        else:
            yield from unpack_stream(p[0])
