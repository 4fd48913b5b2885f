"""JSON text: ``to_json`` (``json.dumps`` without lone surrogates) and ``pretty`` (its indented
form, byte for byte, faster). Below every JSON writer: ``jsondump`` (streamed documents),
``record_json`` and ``record_pieces`` (records as JSON)."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from fatbin_inspect.render.escape import utf8_json

COMPACT = (",", ":")  # json.dumps' separators without blanks


def to_json(value: Any, **kw: Any) -> str:
    """``json.dumps`` whose text never holds a lone surrogate: a file name's undecodable bytes
    become U+FFFD (``escape.utf8_json``; ``files[].path_bytes`` keeps the exact bytes)."""
    return utf8_json(json.dumps(value, **kw))


def pretty(value: Any, depth: int = 0) -> str:
    """``json.dumps(value, indent=2)`` with every line after the first indented by ``depth``
    levels, byte for byte, faster: the standard library's indenting encoder is pure
    Python built of generators. Here the
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
