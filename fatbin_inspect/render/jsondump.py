"""``--format json``: one document; ``--format jsonl``: one record per line (streams).

``write`` streams a document whose long lists are ``Items``: each item is encoded (or arrives
encoded, from a worker or the scan cache) and written as it comes, in order, and never held; the
bytes are those of ``dumps`` of the same document with the lists filled in (``json.dumps`` puts
a raw newline only between tokens, never inside a string, so a nested value's text is indented
by replacing each newline with a newline and the indentation of its depth).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import IO, Any

from fatbin_inspect.inventory import spill
from fatbin_inspect.render.escape import utf8_json

_COMPACT = (",", ":")


def to_json(value: Any, **kw: Any) -> str:
    """``json.dumps`` whose text never holds a lone surrogate: a file name's undecodable bytes
    become U+FFFD (``escape.utf8_json``; ``files[].path_bytes`` keeps the exact bytes)."""
    return utf8_json(json.dumps(value, **kw))


def pretty(value: Any, depth: int = 0) -> str:
    """``json.dumps(value, indent=2)`` with every line after the first indented by ``depth``
    levels, byte for byte, in half the time: the standard library's indenting encoder is pure
    Python built of generators (cuFFT's 23 MB record: 0.60 s there, 0.29 s here). Here the
    scalars are written by the C encoder (``json.dumps`` without ``indent`` uses it), whose item
    separator can be a comma, a newline and the indentation of one depth: a container of scalars
    (a kernel, an entry's ``cubin``) is one call. A container that also holds containers (an
    entry) is encoded with each nested one replaced by a placeholder integer, whose digits are
    then replaced by the nested container's text, once each has been seen exactly once in the
    text (else, a string that holds the digits, the container is written item by item). Values
    other than dicts with string keys, lists, tuples, strings, numbers, booleans and None go to
    ``json.dumps``."""
    try:
        if _C_ENCODER is None:
            raise _Other
        text = _text(value, "\n" + "  " * depth)
    except _Other:
        return to_json(value, indent=2).replace("\n", "\n" + "  " * depth)
    return utf8_json(text)


def _text(o: Any, ind: str) -> str:
    """``o``'s text, its lines after the first indented by ``ind`` (a newline and spaces)."""
    t = type(o)
    scalar = _SCALAR_TEXT.get(t)
    if scalar is not None:
        return scalar(o)
    if t is dict:
        return _dict_text(o, ind)
    if t is list or t is tuple:
        return _list_text(o, ind)
    raise _Other


def _dict_text(o: dict, ind: str) -> str:
    if not o:
        return "{}"
    nxt = ind + "  "
    nested = [k for k, v in o.items() if type(v) not in _SCALARS]
    if not nested:  # (keys that are no strings are converted as json.dumps converts them)
        return "{" + nxt + "".join(_leaf_encoder(nxt)(o, 0))[1:-1] + ind + "}"
    if len(nested) * 2 < len(o) and len(nested) <= len(_PLACEHOLDERS):
        flat = dict(o)
        for j, k in enumerate(nested):
            flat[k] = _PLACEHOLDERS[j]
        text = _with_nested(o, nested, "".join(_leaf_encoder(nxt)(flat, 0)), nxt)
        if text is not None:
            return "{" + nxt + text[1:-1] + ind + "}"
    if not _STR.issuperset(map(type, o)):
        raise _Other
    return "{" + nxt + ("," + nxt).join(_ascii(k) + ": " + _text(v, nxt) for k, v in o.items()) + ind + "}"


def _list_text(o: list | tuple, ind: str) -> str:
    if not o:
        return "[]"
    nxt = ind + "  "
    if _SCALARS.issuperset(map(type, o)):
        return "[" + nxt + "".join(_leaf_encoder(nxt)(o, 0))[1:-1] + ind + "]"
    return "[" + nxt + ("," + nxt).join([_text(v, nxt) for v in o]) + ind + "]"


def _with_nested(o: dict, nested: list, text: str, nxt: str) -> str | None:
    """``text`` (``o`` encoded with placeholders for the values of the keys ``nested``) with
    each placeholder's digits replaced by that value's text; None when some placeholder's digits
    are not there exactly once (a string or number of ``o`` holds them too)."""
    if len(nested) == 1:  # the usual record: one list or table among scalars
        digits = _PLACEHOLDER_TEXTS[0]
        head, found, tail = text.partition(digits)
        if not found or digits in tail:
            return None
        return head + _text(o[nested[0]], nxt) + tail
    at = []
    for j, k in enumerate(nested):
        digits = _PLACEHOLDER_TEXTS[j]
        if text.count(digits) != 1:
            return None
        at.append((text.index(digits), len(digits), k))
    at.sort()
    pieces: list[str] = []
    pos = 0
    for start, n, k in at:
        pieces += (text[pos:start], _text(o[k], nxt))
        pos = start + n
    pieces.append(text[pos:])
    return "".join(pieces)


class _Other(Exception):
    """A value ``pretty`` leaves to ``json.dumps`` (floats, other key types, other objects)."""


_ascii = json.encoder.encode_basestring_ascii
# the scalars ``_text`` writes itself, as ``json.dumps`` does (floats go to it: their repr rules)
_SCALAR_TEXT: dict[type, Callable[[Any], str]] = {
    str: _ascii,
    int: int.__repr__,
    type(None): lambda o: "null",
    bool: lambda o: "true" if o else "false",
}
_SCALARS = frozenset((str, int, float, bool, type(None)))
_STR = frozenset((str,))


_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)  # None without the _json C module
# placeholders of one length (none is part of another), unlike any number a record holds
_PLACEHOLDERS = tuple(7 * 10**40 + i for i in range(16))
_PLACEHOLDER_TEXTS = tuple(str(p) for p in _PLACEHOLDERS)


@lru_cache(maxsize=64)
def _leaf_encoder(nxt: str) -> Callable[[Any, int], Any]:
    """The C encoder whose item separator is ``","`` + ``nxt``: its chunks, joined, are a
    container's text at that depth when it holds scalars only."""
    assert _C_ENCODER is not None
    return _C_ENCODER(None, _no_default, _ascii, None, ": ", "," + nxt, False, False, True)


def _no_default(o: Any) -> Any:
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


class Items:
    """A list of a document written item by item: dicts (encoded by ``write``) or, ``encoded``,
    their final bytes at their depth (a top-level list's items are at depth 2), each item bytes
    or an iterable of byte pieces written as they come."""

    __slots__ = ("encoded", "items")

    def __init__(self, items: Iterable[Any], encoded: bool = False):
        self.items, self.encoded = items, encoded


_pretty = pretty  # ``write``'s and ``dumps``' flag of the same name hides the function there


def write(out: IO[bytes], document: dict[str, Any], pretty: bool = True) -> None:
    """Write ``dumps(document, pretty)`` to ``out``; values that are ``Items`` are streamed."""
    if not document:
        out.write(b"{}\n")
        return
    for i, (key, value) in enumerate(document.items()):
        k = to_json(key)
        if pretty:
            out.write(f"{'{' if i == 0 else ','}\n  {k}: ".encode())
        else:
            out.write(f"{'{' if i == 0 else ','}{k}:".encode())
        if isinstance(value, Items):
            _write_items(out, value, pretty)
        elif pretty:
            out.write(_pretty(value, 1).encode())
        else:
            out.write(to_json(value, separators=_COMPACT).encode())
    out.write(b"\n}\n" if pretty else b"}\n")


def _write_items(out: IO[bytes], items: Items, pretty: bool) -> None:
    opening, between, closing = (b"[\n    ", b",\n    ", b"\n  ]") if pretty else (b"[", b",", b"]")
    first = True
    for item in items.items:
        out.write(opening if first else between)
        first = False
        for piece in _pieces(item, items.encoded, pretty):
            out.write(piece)
    out.write(b"[]" if first else closing)


def _pieces(item: Any, encoded: bool, pretty: bool) -> Iterable[bytes]:
    """An item's bytes: as it came (encoded: bytes, or its pieces), or encoded here."""
    if encoded:
        return (item,) if isinstance(item, bytes) else item
    if pretty:
        return (_pretty(item, 2).encode(),)
    return (to_json(item, separators=_COMPACT).encode(),)


def write_lines(out: IO[bytes], records: Iterable[dict[str, Any]]) -> None:
    """``dumps_line`` of each record, written as it comes."""
    for r in records:
        out.write(dumps_line(r).encode())


def dumps(document: dict[str, Any], pretty: bool = True) -> str:
    """Indented for people; ``pretty=False`` for large documents (the C encoder runs only without
    ``indent``: 170 MB of libtorch_cuda.so kernels take 20 s indented, 1 s compact)."""
    if not pretty:
        return to_json(document, separators=(",", ":")) + "\n"
    return _pretty(document) + "\n"


def dumps_line(record: dict[str, Any]) -> str:
    return to_json(record, separators=(",", ":")) + "\n"


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

    def __init__(self):
        self.plain = bytearray()
        self.packer = None
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


def fatbins_fragment(pairs) -> bytearray | Packed | spill.Spilled:
    """Compact JSON of some fatbins, comma-joined: a piece of one file's ``"fatbins"`` array
    (``Packed`` when large), made by the worker that decoded them; the bytes cross the pipe and
    are written as they are, not copied again. Module-level for the worker processes
    (``inventory.decoding.iter_decoded``: ``(fatbin, its decoded entries)`` pairs). Written one
    entry at a time, each as it is decoded: a fatbin's dicts and text at once were most of a
    worker's peak, then its records."""
    from fatbin_inspect.render.inventory_json import fatbin_dict

    out = _Fragment()
    for i, (fb, entries) in enumerate(pairs):
        d = fatbin_dict(dataclasses.replace(fb, entries=()))
        keys = list(d)
        k = keys.index("entries")
        before = to_json({n: d[n] for n in keys[:k]}, separators=_COMPACT)[:-1]
        after = to_json({n: d[n] for n in keys[k + 1 :]}, separators=_COMPACT)[1:]
        out.write((("," if i else "") + before + ("," if k else "") + '"entries":[').encode())
        for j, e in enumerate(entries):
            texts = entry_texts(e)
            out.write((("," if j else "") + next(texts)).encode())
            for text in texts:
                out.write(text.encode())
        out.write(("]" + ("," if after != "}" else "") + after).encode())
    return out.result()


_NO_KERNELS = '"kernels":null}'


def entry_json(e) -> str:
    """Compact JSON of one entry, as ``to_json(entry_dict(e))`` writes it."""
    return "".join(entry_texts(e))


def entry_texts(e) -> Iterator[str]:
    """``entry_json(e)`` in pieces, made as they are taken: its kernels' array (last of its
    keys) in those of ``inventory_json.kernels_json_pieces``, not copied into the entry's text
    (it was, five times over, 134 MB of libtorch_cuda.so's)."""
    from fatbin_inspect.render.inventory_json import entry_dict, kernels_json_pieces

    if e.kernels:
        head = to_json(entry_dict(e, with_kernels=False), separators=_COMPACT)
        if head.endswith(_NO_KERNELS):  # (entry_dict writes the kernels last)
            yield head[: -len(_NO_KERNELS)] + '"kernels":'
            yield from kernels_json_pieces(e.kernels)  # (utf8_json's already)
            yield "}"
            return
    yield to_json(entry_dict(e), separators=_COMPACT)


def file_pretty(report, depth: int) -> str:
    """``pretty(file_dict(report), depth)``, byte for byte: the file's other fields by ``pretty``,
    its fatbins from the records by ``inventory_json.fatbin_pretty`` (the scan document's
    ``files[]``, depth 2, and ``list --format json`` of small inventories); all by ``pretty``
    when the fatbin record has fields ``fatbin_pretty`` does not write."""
    from fatbin_inspect.render import inventory_json as inv

    fatbins = report.fatbins
    if fatbins and inv.writes_fields(fatbins):
        around = file_pretty_around(report, depth)
        if around is not None:
            sep, items = fatbins_pretty(fatbins, depth)
            # f-strings, not chains of +: each + copies the whole text (23 MB for cuFFT)
            return f"{around[0]}{sep.join(items)}{around[1]}"
    return _pretty(inv.file_dict(report), depth)


def file_pretty_around(report, depth: int) -> tuple[str, str] | None:
    """The text ``file_pretty`` writes before and after the items of a record's fatbins (one at
    least, ``fatbins_pretty``), from the record's other fields; None when ``file_dict`` does not
    write its fatbins last."""
    from fatbin_inspect.render import inventory_json as inv

    ind = "\n" + "  " * depth  # the file's braces; its keys one level in, its fatbins two
    head = _pretty(inv.file_dict(dataclasses.replace(report, fatbins=())), depth)
    end = '"fatbins": []' + ind + "}"
    if not head.endswith(end):
        return None
    return f'{head[: -len(end)]}"fatbins": [{ind}    ', f"{ind}  ]{ind}}}"


def fatbins_pretty(fatbins, depth: int) -> tuple[str, list[str]]:
    """The separator and the items of ``fatbins`` in a ``file_pretty`` text at ``depth``: the same
    whether a file's fatbins are written at once or in runs joined by the separator
    (``escape.utf8_json`` rewrites escapes inside strings only, never across an item)."""
    from fatbin_inspect.render import inventory_json as inv

    fbi = "\n" + "  " * depth + "    "
    return "," + fbi, [utf8_json(inv.fatbin_pretty(fb, fbi + "  ")) for fb in fatbins]


def file_pieces(report, fragments=None) -> Iterator[bytes]:
    """One compact ``files[]`` element in pieces: ``to_json(file_dict(report))``, byte for byte.
    ``fragments`` (from ``fatbins_fragment``, pulled one at a time as they are written) replace
    its fatbins; without them its fatbins are written by ``inventory_json.fatbin_compact``,
    ``COMPACT_RUN`` at a time, when it writes their fields."""
    from fatbin_inspect.render import inventory_json as inv

    if fragments is None:
        if not (report.fatbins and inv.writes_fields(report.fatbins)):
            yield to_json(inv.file_dict(report), separators=_COMPACT).encode()
            return
        fragments = _compact_runs(report.fatbins)
    d = inv.file_dict(dataclasses.replace(report, fatbins=()))
    d.pop("fatbins")
    head = to_json(d, separators=_COMPACT)
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


def _compact_runs(fatbins) -> Iterator[bytes]:
    """The compact JSON of ``fatbins``, ``COMPACT_RUN`` comma-joined at a time."""
    from fatbin_inspect.render.inventory_json import fatbin_compact

    for i in range(0, len(fatbins), COMPACT_RUN):
        yield utf8_json(",".join(fatbin_compact(fb) for fb in fatbins[i : i + COMPACT_RUN])).encode()
