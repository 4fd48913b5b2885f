"""``--format json``: one document; ``--format jsonl``: one record per line (streams).

``write`` streams a document whose long lists are ``Items``: each item is encoded (or arrives
encoded, from a worker or the scan cache) and written as it comes, in order, and never held; the
bytes are those of ``dumps`` of the same document with the lists filled in (``json.dumps`` puts
a raw newline only between tokens, never inside a string, so a nested value's text is indented
by replacing each newline with a newline and the indentation of its depth).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

from fatbin_inspect.render.json_encode import COMPACT, pretty, to_json
from fatbin_inspect.version import __version__

__all__ = [
    "SCHEMA_VERSION",
    "Items",
    "dumps",
    "dumps_line",
    "pretty",
    "to_json",
    "tool",
    "write",
    "write_lines",
]

# the ``schema_version`` of every JSON document the tool writes (a contract: docs/ci.md, "Versions")
SCHEMA_VERSION = 1


def tool() -> dict[str, str]:
    """The ``tool`` of a document: this program's name and version."""
    return {"name": "fatbin-inspect", "version": __version__}


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
            out.write(to_json(value, separators=COMPACT).encode())
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
    return (to_json(item, separators=COMPACT).encode(),)


def write_lines(out: IO[bytes], records: Iterable[dict[str, Any]]) -> None:
    """``dumps_line`` of each record, written as it comes."""
    for r in records:
        out.write(dumps_line(r).encode())


def dumps(document: dict[str, Any], pretty: bool = True) -> str:
    """Indented for people; ``pretty=False`` for large documents (the C encoder runs only without
    ``indent``: indenting libtorch_cuda.so's kernels is many times slower than compact)."""
    if not pretty:
        return to_json(document, separators=COMPACT) + "\n"
    return _pretty(document) + "\n"


def dumps_line(record: dict[str, Any]) -> str:
    return to_json(record, separators=COMPACT) + "\n"
