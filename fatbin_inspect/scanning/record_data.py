"""Records as plain data for the scan cache: nested JSON lists in, validated frozen records out.

The cache never stores code (no pickles): a record is written as lists of numbers, strings,
booleans and nulls, and read back only if every value has the type its field declares; anything
else (a row written by another version, or by someone else) raises ``ValueError`` and the cache
treats the row as a miss. Paths are stored relative to the file the row belongs to (a member
record keeps ``!member``), so a row follows the path a scan was given.

Nothing here spells a record out: each ``Codec`` is derived from its dataclass's fields (their
declaration order and annotated types, as pyelftools derives a struct's parser from its one
declaration in ``elftools/elf/structs.py``), so a new field of ``formats.model`` or
``coverage.FileSummary`` is stored and checked with no edit here (and ``cache.CACHE_VERSION``
bumped). The fields the scan fills in itself (``distribution``) are not stored.
"""

from __future__ import annotations

import dataclasses
import operator
import types
import typing
from collections.abc import Callable
from typing import Any

from fatbin_inspect.formats.model import FileReport

NOT_STORED = frozenset({"distribution"})  # filled in by the scan (its attribution), never cached
_SCALARS = {int: int, str: str, bool: bool, type(None): type(None)}

Convert = Callable[[Any], Any]


def _wrong(what: str) -> ValueError:
    return ValueError(f"cache row: {what}")


class Codec:
    """``encode``: a record as a list of its stored fields' values (nested records and tuples as
    lists); ``decode``: that list checked against the field types and made a record again."""

    def __init__(self, cls: type) -> None:
        hints = typing.get_type_hints(cls)
        fields = [f for f in dataclasses.fields(cls) if f.name not in NOT_STORED]
        self.cls, self.names = cls, tuple(f.name for f in fields)
        self.positional = len(fields) == len(dataclasses.fields(cls))
        # per field: (scalar types it may hold, None) or (empty, a converter of its data)
        self._read: list[tuple[frozenset, Convert | None]] = []
        self._write: list[tuple[int, Convert]] = []  # (index, converter) of the non-scalar fields
        for i, f in enumerate(fields):
            scalars = _scalar_types(hints[f.name])
            if scalars is not None:
                self._read.append((scalars, None))
            else:
                self._read.append((frozenset(), _decoder(hints[f.name])))
                self._write.append((i, _encoder(hints[f.name])))
        get = operator.attrgetter(*self.names)
        self._get = (lambda obj: (get(obj),)) if len(self.names) == 1 else get

    def encode(self, obj: Any) -> list:
        row = list(self._get(obj))
        for i, conv in self._write:
            v = row[i]
            if v is not None:
                row[i] = conv(v)
        return row

    def values(self, v: Any) -> list:
        """The checked field values of a stored row (before the record is made)."""
        if type(v) is not list or len(v) != len(self._read):
            raise _wrong(f"not a {self.cls.__name__}")
        out = []
        for x, (scalars, conv) in zip(v, self._read):
            if conv is None:
                if type(x) not in scalars:
                    raise _wrong(f"wrong type in a {self.cls.__name__}")
                out.append(x)
            else:
                out.append(conv(x))
        return out

    def make(self, values: list) -> Any:
        if self.positional:
            return self.cls(*values)
        return self.cls(**dict(zip(self.names, values)))

    def decode(self, v: Any) -> Any:
        return self.make(self.values(v))


def _args(tp: Any) -> tuple[Any, tuple]:
    """(origin, arguments) of a type hint, ``X | None`` and ``Optional[X]`` alike."""
    origin = typing.get_origin(tp)
    if origin is types.UnionType:
        origin = typing.Union
    return origin, typing.get_args(tp)


def _scalar_types(tp: Any) -> frozenset | None:
    """The types a scalar field may hold (``int | None``: int and NoneType); None when not scalar."""
    origin, args = _args(tp)
    members = args if origin is typing.Union else (tp,)
    if all(m in _SCALARS for m in members):
        return frozenset(members)
    return None


_CODECS: dict[type, Codec] = {}


def codec(cls: type) -> Codec:
    """The one ``Codec`` of a record class."""
    c = _CODECS.get(cls)
    if c is None:
        c = _CODECS[cls] = Codec(cls)
    return c


def _optional_decoder(tp: Any, args: tuple) -> Convert:
    """``X | None`` (no other unions are stored)."""
    inner = [a for a in args if a is not type(None)]
    if len(inner) != 1 or len(args) != 2:
        return _unsupported(tp)
    conv = _decoder(inner[0])
    return lambda v: None if v is None else conv(v)


def _is_record(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _encoder(tp: Any) -> Convert:
    """Data of a non-scalar value (never None: the caller keeps a None as it is)."""
    origin, args = _args(tp)
    if origin is typing.Union:
        return _encoder(next(a for a in args if a is not type(None)))
    if _is_record(tp):
        return codec(tp).encode
    if origin not in (tuple, frozenset):
        return _unsupported(tp)
    if _scalar_types(args[0]) is not None:  # (a fixed tuple's first type says: all are scalars)
        return sorted if origin is frozenset else list
    conv = _encoder(args[0])
    return lambda v: [None if x is None else conv(x) for x in v]


def _decoder(tp: Any) -> Convert:
    """The checked value of a non-scalar field from its data."""
    origin, args = _args(tp)
    if origin is typing.Union:
        return _optional_decoder(tp, args)
    if _is_record(tp):
        return codec(tp).decode
    if origin is frozenset or (origin is tuple and args[-1:] == (Ellipsis,)):
        return _sequence(args[0], origin)
    return _fixed(args) if origin is tuple else _unsupported(tp)


def _unsupported(tp: Any) -> Convert:
    raise TypeError(f"no cache encoding for {tp!r}")


def _sequence(item: Any, make: type) -> Convert:
    scalars = _scalar_types(item)
    if scalars is not None:

        def scalar_items(v: Any) -> Any:
            if type(v) is not list or any(type(x) not in scalars for x in v):
                raise _wrong(f"expected a list of {item!r}")
            return make(v)

        return scalar_items
    conv = _decoder(item)

    def items(v: Any) -> Any:
        if type(v) is not list:
            raise _wrong("expected a list")
        return make(conv(x) for x in v)

    return items


def _fixed(args: tuple) -> Convert:
    kinds = [_scalar_types(a) for a in args]
    checks = [k for k in kinds if k is not None]
    if len(checks) != len(kinds):
        return _unsupported(args)

    def fixed(v: Any) -> tuple:
        if type(v) is not list or len(v) != len(kinds) or any(type(x) not in k for x, k in zip(v, checks)):
            raise _wrong(f"expected {len(kinds)} values")
        return tuple(v)

    return fixed


# ------------------------------------------------------------------------------ records
def rebased_data(obj: Any, base: str) -> list:
    """A record (``FileReport``, ``FileSummary``) as data, its path (its first field) stored
    relative to ``base``, the file the row belongs to."""
    if not obj.path.startswith(base):
        raise ValueError(f"{obj.path!r} is not under {base!r}")
    row = codec(type(obj)).encode(obj)
    row[0] = obj.path[len(base) :]
    return row


def rebased_record(cls: type, v: Any, base: str) -> Any:
    """The record ``rebased_data`` wrote, its path on ``base``; ``ValueError`` if it is not one."""
    c = codec(cls)
    values = c.values(v)
    values[0] = base + values[0]
    return c.make(values)


def report_data(r: FileReport, base: str) -> list:
    """``r`` as data; ``base``: the path prefix stored as empty (the file the row belongs to)."""
    return rebased_data(r, base)


def report_from_data(v: Any, base: str) -> FileReport:
    """The record ``report_data`` wrote, its path rebased on ``base``; ``ValueError`` if it is not one."""
    return rebased_record(FileReport, v, base)
