"""Records as JSON-ready dicts, derived from their one declaration (issue 21 step 5).

A record is a frozen dataclass or a ``NamedTuple`` (``formats.model``, the ``compat`` results);
where its JSON is a faithful image of it, ``as_dict`` writes the fields in declaration order, so a
new field is one edit to the record plus its schema (``tests/formats/test_schema_records.py`` holds each
schema in ``fatbin_inspect/schemas/`` to the records). Here, below every layer that encodes
records (the renderers, the scan cache), because it imports nothing of the package.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_NAMES: dict[type, tuple[str, ...]] = {}


def field_names(cls: type) -> tuple[str, ...]:
    """The fields of a dataclass or ``NamedTuple`` class, in declaration order."""
    names = _NAMES.get(cls)
    if names is None:
        if dataclasses.is_dataclass(cls):
            names = tuple(f.name for f in dataclasses.fields(cls))
        elif hasattr(cls, "_fields"):
            names = tuple(cls._fields)
        else:
            raise TypeError(f"{cls.__name__} is neither a dataclass nor a NamedTuple")
        _NAMES[cls] = names
    return names


_ORDERS: dict[tuple, tuple[str, ...]] = {}


def _order(cls: type, lead: tuple[str, ...], omit: tuple[str, ...]) -> tuple[str, ...]:
    """The keys ``as_dict`` writes for ``cls``, worked out once per (class, lead, omit): cuFFT's
    24,000 fatbins would otherwise redo it per record."""
    key = (cls, lead, omit)
    names = _ORDERS.get(key)
    if names is None:
        names = _ORDERS[key] = (*lead, *(n for n in field_names(cls) if n not in lead and n not in omit))
    return names


def as_dict(
    record: Any,
    *,
    lead: Sequence[str] = (),
    omit: Sequence[str] = (),
    convert: Mapping[str, Callable[[Any], Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``record`` as a dict: the names in ``lead`` first (fields or properties), then its other
    fields in declaration order but ``omit``, then ``extra`` (computed keys, in their order). A
    tuple value becomes a list (what ``json`` writes for both); ``convert`` maps a name to the
    function that makes its value JSON (a nested record's dict). Not recursive, unlike
    ``dataclasses.asdict``: nested records are the converters' business."""
    names = _order(type(record), tuple(lead), tuple(omit))
    out: dict[str, Any] = {}
    for name in names:
        value = getattr(record, name)
        to_json = convert.get(name) if convert else None
        out[name] = to_json(value) if to_json else list(value) if isinstance(value, tuple) else value
    if extra:
        out.update(extra)
    return out
