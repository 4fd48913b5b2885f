"""PTX text: the directives that matter for loading (docs/format.md §3.8).

Embedded PTX is ASCII and NUL-terminated; fatbinary strips comments, so only directives are
read: ``.version M.m`` (the ISA the driver's JIT must know), ``.target sm_XY[a|f][, ...]``
(first token) and ``.entry NAME`` (kernels; ``.func`` are device functions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fatbin_inspect.errors import CorruptError
from fatbin_inspect.formats.model import Kernel, PtxShape

if TYPE_CHECKING:
    import mmap

# `[ \t]*`, not `\s*`, after `^`: `\s*` spans newlines, so every line start of a blank run would
# rescan the whole run (quadratic in the run's length). Numbers are capped at 6 digits: int() of a
# 5000-digit string raises ValueError.
_VERSION = re.compile(rb"^[ \t\r\f\v]*\.version\s+(\d{1,6})\.(\d{1,6})(?!\d)", re.M)
_TARGET = re.compile(rb"^[ \t\r\f\v]*\.target\s+([A-Za-z0-9_]+)", re.M)
_ENTRY = re.compile(rb"\.entry\s+([A-Za-z_$%][\w$]*)")
_MAXNTID = re.compile(rb"\.maxntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?")

HEAD_BYTES = 1 << 16  # .version and .target come first in every PTX seen


@dataclass(frozen=True)
class PtxHeader:
    version: tuple[int, int]
    target: str | None


def looks_like_ptx(head: bytes) -> bool:
    """Text (no NUL before the directives) that declares a PTX ``.version``."""
    probe = head[:HEAD_BYTES]
    if b".version" not in probe:  # (what the expression needs; a scan asks this of every file)
        return False
    m = _VERSION.search(probe)
    return m is not None and b"\0" not in probe[: m.start()] and b".target" in probe


def parse_header(text: bytes | mmap.mmap) -> PtxHeader:
    head = text[:HEAD_BYTES]
    m = _VERSION.search(head)
    if not m:
        raise CorruptError("PTX without a .version directive", 0)
    t = _TARGET.search(head)
    return PtxHeader(
        version=(int(m.group(1)), int(m.group(2))), target=t.group(1).decode("ascii") if t else None
    )


def kernels(text: bytes | mmap.mmap) -> tuple[Kernel, ...]:
    nul = text.find(b"\0")
    if nul >= 0:
        text = text[:nul]
    return tuple(Kernel(name=m.group(1).decode("ascii", "replace")) for m in _ENTRY.finditer(text))


_FUNCTION = re.compile(rb"\.(entry|func)\s")


def shape(text: bytes) -> PtxShape:
    """The counts of ``PtxShape`` over ``text`` (up to a NUL): substring counts, not a grammar
    (fatbinary strips comments), a few passes over the text at C speed. Register declarations,
    branches and calls were measured too (``scripts/measure_jit.py``) and predicted nothing the
    instructions and the largest function do not."""
    nul = text.find(b"\0")
    if nul >= 0:
        text = text[:nul]
    heads = [(m.start(), m.group(1)) for m in _FUNCTION.finditer(text)]
    starts = [start for start, _ in heads]
    entries = sum(1 for _, kind in heads if kind == b"entry")
    bounds = zip([0, *starts], [*starts, len(text)])  # (the text before the first head included)
    return PtxShape(
        bytes=len(text),
        instructions=max(text.count(b";") - text.count(b".reg"), 0),
        entries=entries,
        funcs=len(heads) - entries,
        largest=max(text.count(b";", a, b) for a, b in bounds),
    )


def target_arch(target: str) -> tuple[int, str]:
    """``sm_90a`` -> (90, "a")."""
    m = re.fullmatch(r"(?:sm|compute)_(\d{1,6})([af]?)", target)
    if not m:
        raise CorruptError(f"unrecognised PTX target {target!r}")
    return int(m.group(1)), m.group(2)
