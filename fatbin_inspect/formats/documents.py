"""JSON and TOML documents read as input: configuration, ``--targets`` files, package metadata.

One reader for all of them, so a value the file holds cannot reach the code that uses it in a
shape nobody checked (README "Bad input"):

- the bytes come from ``binio.read_regular``: a regular file only (a FIFO, a device,
  ``/dev/zero`` is refused unread), at most ``limit`` bytes, checked before parsing;
- UTF-8 text only (the error names the offset);
- nesting at most ``MAX_DEPTH`` deep (``json.loads`` raises RecursionError on 100,000 nested
  brackets, ``tomllib`` too; both are caught, and a parsed document is walked without recursion);
- no NaN or Infinity (JSON's ``NaN``/``Infinity`` words, TOML's ``nan``/``inf``), no lone
  surrogate in a key or string (JSON's ``"\\ud800"``: such text cannot be written as UTF-8).

Errors are ``InputError``s whose message names the key path (``tool.fatbin-inspect.require[2]``);
the callers add the file name and turn them into a usage error (a config) or a note (metadata).
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any, NoReturn

from fatbin_inspect.errors import CorruptError, LimitExceeded
from fatbin_inspect.formats.binio import read_regular

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

MAX_DEPTH = 64  # nesting of tables/arrays; real configs and doctor reports use under 10
CONFIG_BYTES = 4 << 20  # pyproject.toml, a policy file
TARGETS_BYTES = 32 << 20  # a --targets file: a JSON list of thousands of doctor reports
_SURROGATE = re.compile("[\ud800-\udfff]")


def read_text(path: str, limit: int = CONFIG_BYTES) -> str:
    """The UTF-8 text of a small regular file (see ``binio.read_regular``)."""
    raw = read_regular(path, limit)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptError("not UTF-8 text", exc.start) from None


def loads_json(text: str | bytes) -> Any:
    """A JSON document under the bounds above."""

    def no_constant(word: str) -> NoReturn:
        raise CorruptError(f"{word} is not a number JSON allows")

    try:
        doc = json.loads(text, parse_constant=no_constant)
    except RecursionError:
        raise LimitExceeded(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise CorruptError(f"invalid JSON: {exc.msg}", exc.pos) from None
    except (UnicodeDecodeError, ValueError) as exc:  # bytes that are no UTF-8, an int too long
        raise CorruptError(f"invalid JSON: {exc}") from None
    check(doc)
    return doc


def loads_toml(text: str) -> dict[str, Any]:
    """A TOML document under the bounds above (``tomllib.TOMLDecodeError`` becomes CorruptError)."""
    try:
        doc = tomllib.loads(text)
    except RecursionError:
        raise LimitExceeded(f"nested deeper than {MAX_DEPTH} levels") from None
    except tomllib.TOMLDecodeError as exc:
        raise CorruptError(f"invalid TOML: {exc}") from None
    except ValueError as exc:  # an integer of thousands of digits
        raise CorruptError(f"invalid TOML: {exc}") from None
    check(doc)
    return doc


def key_path(parts: tuple) -> str:
    """``("tool", "fatbin-inspect", "require", 2)`` -> ``tool.fatbin-inspect.require[2]``."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            name = p if len(p) <= 60 else p[:60] + "..."
            out += ("." if out else "") + (name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else repr(name))
    return out or "(top level)"


def check(doc: Any, max_depth: int = MAX_DEPTH) -> None:
    """CorruptError/LimitExceeded at the first value nested too deep, non-finite float, or key or
    string with a lone surrogate; walked with an explicit stack (no recursion)."""
    stack: list[tuple[Any, tuple]] = [(doc, ())]
    while stack:
        value, parts = stack.pop()
        if len(parts) > max_depth:
            raise LimitExceeded(f"{key_path(parts[:max_depth])}: nested deeper than {max_depth} levels")
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(k, str) and _SURROGATE.search(k):
                    raise CorruptError(f"{key_path(parts)}: a key holds a lone surrogate (not UTF-8 text)")
                stack.append((v, (*parts, k)))
        elif isinstance(value, list):
            stack.extend((v, (*parts, i)) for i, v in enumerate(value))
        elif isinstance(value, str):
            if _SURROGATE.search(value):
                raise CorruptError(f"{key_path(parts)}: a lone surrogate in a string (not UTF-8 text)")
        elif isinstance(value, float) and not math.isfinite(value):
            raise CorruptError(f"{key_path(parts)}: {value} is not a finite number")
