"""Records as JSON text in pieces, for documents written as they come: a file's element pretty
(``file_pretty``, the scan document's and a small listing's) or compact in pieces
(``file_pieces``), and fragments of fatbins encoded by the worker that decoded them
(``fatbins_fragment``: kept as bytes, spilled to the worker's memory file or ``Packed``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from fatbin_inspect.formats.model import Entry, Fatbin, FileReport
from fatbin_inspect.inventory import spill
from fatbin_inspect.render import record_json as inv
from fatbin_inspect.render.escape import utf8_json
from fatbin_inspect.render.json_encode import COMPACT, pretty, to_json

# -- the same document assembled from pre-encoded pieces (large decoded inventories) ------------
# a fragment larger than this goes into the worker's memory file (inventory.spill), else, where
# there is none, crosses the pipe zstd-compressed (Packed): pickled whole, a worker held a
# slice's fragments, then their pickle, and the parent the slices in flight; libtorch_cuda.so
# --kernels, peak RSS of the process tree, packed: 2 MiB 154 MB, 256 KiB 145 MB, 64 KiB 142 MB,
# 16 KiB 142 MB. Spilled (from 64 KiB) instead of packed: a quarter fewer page faults, without
# zstd at both ends; RSS 133 MB, with the memory files' pages (in no RSS) 137 + 5 MB once a
# slot takes at most 1 MiB (spill.CAP; bench_table.py row 5 counts both)
PACK_OVER = 64 << 10
PIECE = 1 << 20  # what Packed.pieces yields at a time


class Packed:
    """A large fragment as one zstd frame, made as it was written: neither the worker that
    encodes it nor the process that writes it holds its text whole. One of libtorch_cuda.so's
    fatbins is 11.5 MB of JSON (a ~1 MB frame): held as text, then pickled, then received and
    unpickled, it was the largest part of both processes' peaks. ``head``: the fragment's
    bytes before the frame's, in the worker's memory file (the slot was full: ``spill.CAP``)."""

    __slots__ = ("frame", "head")

    def __init__(self, frame: bytes | bytearray, head: spill.Spilled | None = None):
        self.frame, self.head = frame, head

    def pieces(self) -> Iterator[bytes]:
        import zstandard

        if self.head is not None:
            yield from self.head.pieces()
        with zstandard.ZstdDecompressor().stream_reader(self.frame) as reader:
            while piece := reader.read(PIECE):
                yield piece


class _Fragment:
    """Bytes written in order: kept as they are up to ``PACK_OVER``; past it, written on into
    the worker's memory file (``inventory.spill``: ``Spilled``) where it has one and the slot
    has room (``spill.CAP``), else compressed (``Packed``, after what the slot took)."""

    def __init__(self) -> None:
        self.plain = bytearray()
        self.packer: Any = None  # a zstandard compressobj, once the fragment is past PACK_OVER
        self.frame = bytearray()
        self.sink = spill.current()
        self.start = self.sink.pos if self.sink is not None else 0
        self.spilled = False

    def write(self, data: bytes) -> None:
        if self.packer is not None:
            self.frame += self.packer.compress(data)
            return
        self.plain += data
        if len(self.plain) > PACK_OVER:
            if self.sink is not None and self.sink.room(len(self.plain)):
                self.sink.write(self.plain)
                self.plain, self.spilled = bytearray(), True
                return
            import zstandard

            self.packer = zstandard.ZstdCompressor(level=1).compressobj()
            self.frame += self.packer.compress(self.plain)
            self.plain = bytearray()

    def result(self) -> bytearray | Packed | spill.Spilled:
        sink = self.sink if self.spilled else None
        if self.packer is None:
            if sink is None:
                return self.plain
            sink.write(self.plain)  # (past the cap by less than PACK_OVER at most)
            return sink.since(self.start)
        self.frame += self.packer.flush()
        return Packed(self.frame, None if sink is None else sink.since(self.start))


def fatbins_fragment(pairs: Iterable[tuple[Fatbin, Iterable[Entry]]]) -> bytearray | Packed | spill.Spilled:
    """Compact JSON of some fatbins, comma-joined: a piece of one file's ``"fatbins"`` array
    (``Packed`` when large), made by the worker that decoded them; the bytes cross the pipe and
    are written as they are, not copied again. Module-level for the worker processes
    (``inventory.decoding.iter_decoded``: ``(fatbin, its decoded entries)`` pairs). Written one
    entry at a time, each as it is decoded: a fatbin's dicts and text at once were most of a
    worker's peak, then its records."""
    out = _Fragment()
    for i, (fb, entries) in enumerate(pairs):
        d = inv.fatbin_dict(dataclasses.replace(fb, entries=()))
        keys = list(d)
        k = keys.index("entries")
        before = to_json({n: d[n] for n in keys[:k]}, separators=COMPACT)[:-1]
        after = to_json({n: d[n] for n in keys[k + 1 :]}, separators=COMPACT)[1:]
        out.write((("," if i else "") + before + ("," if k else "") + '"entries":[').encode())
        for j, e in enumerate(entries):
            texts = entry_texts(e)
            out.write((("," if j else "") + next(texts)).encode())
            for text in texts:
                out.write(text.encode())
        out.write(("]" + ("," if after != "}" else "") + after).encode())
    return out.result()


_NO_KERNELS = '"kernels":null}'


def entry_json(e: Entry) -> str:
    """Compact JSON of one entry, as ``to_json(inv.entry_dict(e))`` writes it."""
    return "".join(entry_texts(e))


def entry_texts(e: Entry) -> Iterator[str]:
    """``entry_json(e)`` in pieces, made as they are taken: its kernels' array (last of its
    keys) in those of ``record_json.kernels_json_pieces``, not copied into the entry's text
    (it was, five times over, 134 MB of libtorch_cuda.so's)."""
    if e.kernels:
        head = to_json(inv.entry_dict(e, with_kernels=False), separators=COMPACT)
        if head.endswith(_NO_KERNELS):  # (entry_dict writes the kernels last)
            yield head[: -len(_NO_KERNELS)] + '"kernels":'
            yield from inv.kernels_json_pieces(e.kernels)  # (utf8_json's already)
            yield "}"
            return
    yield to_json(inv.entry_dict(e), separators=COMPACT)


def file_pretty(report: FileReport, depth: int) -> str:
    """``pretty(file_dict(report), depth)``, byte for byte: the file's other fields by ``pretty``,
    its fatbins from the records by ``record_json.fatbin_pretty`` (the scan document's
    ``files[]``, depth 2, and ``list --format json`` of small inventories); all by ``pretty``
    when the fatbin record has fields ``fatbin_pretty`` does not write."""
    fatbins = report.fatbins
    if fatbins and inv.writes_fields(fatbins):
        around = file_pretty_around(report, depth)
        if around is not None:
            sep, items = fatbins_pretty(fatbins, depth)
            # f-strings, not chains of +: each + copies the whole text (23 MB for cuFFT)
            return f"{around[0]}{sep.join(items)}{around[1]}"
    return pretty(inv.file_dict(report), depth)


def file_pretty_around(report: FileReport, depth: int) -> tuple[str, str] | None:
    """The text ``file_pretty`` writes before and after the items of a record's fatbins (one at
    least, ``fatbins_pretty``), from the record's other fields; None when ``file_dict`` does not
    write its fatbins last."""
    ind = "\n" + "  " * depth  # the file's braces; its keys one level in, its fatbins two
    head = pretty(inv.file_dict(dataclasses.replace(report, fatbins=())), depth)
    end = '"fatbins": []' + ind + "}"
    if not head.endswith(end):
        return None
    return f'{head[: -len(end)]}"fatbins": [{ind}    ', f"{ind}  ]{ind}}}"


def fatbins_pretty(fatbins: Sequence[Fatbin], depth: int) -> tuple[str, list[str]]:
    """The separator and the items of ``fatbins`` in a ``file_pretty`` text at ``depth``: the same
    whether a file's fatbins are written at once or in runs joined by the separator
    (``escape.utf8_json`` rewrites escapes inside strings only, never across an item)."""
    fbi = "\n" + "  " * depth + "    "
    return "," + fbi, [utf8_json(inv.fatbin_pretty(fb, fbi + "  ")) for fb in fatbins]


def file_pieces(report: FileReport, fragments: Iterable[Any] | None = None) -> Iterator[bytes]:
    """One compact ``files[]`` element in pieces: ``to_json(file_dict(report))``, byte for byte.
    ``fragments`` (from ``fatbins_fragment``, pulled one at a time as they are written) replace
    its fatbins; without them its fatbins are written by ``record_json.fatbin_compact``,
    ``COMPACT_RUN`` at a time, when it writes their fields."""
    if fragments is None:
        if not (report.fatbins and inv.writes_fields(report.fatbins)):
            yield to_json(inv.file_dict(report), separators=COMPACT).encode()
            return
        fragments = _compact_runs(report.fatbins)
    d = inv.file_dict(dataclasses.replace(report, fatbins=()))
    d.pop("fatbins")
    head = to_json(d, separators=COMPACT)
    yield (head[:-1] + ',"fatbins":[').encode()
    first = True
    for f in fragments:
        if f:
            if not first:
                yield b","
            if isinstance(f, (Packed, spill.Spilled)):
                yield from f.pieces()
            else:
                yield f
            first = False
    yield b"]}"


COMPACT_RUN = 256  # fatbins per piece of a compact record (cuFFT's 24,000: 20 MB of text)


def _compact_runs(fatbins: Sequence[Fatbin]) -> Iterator[bytes]:
    """The compact JSON of ``fatbins``, ``COMPACT_RUN`` comma-joined at a time."""
    for i in range(0, len(fatbins), COMPACT_RUN):
        yield utf8_json(",".join(inv.fatbin_compact(fb) for fb in fatbins[i : i + COMPACT_RUN])).encode()
