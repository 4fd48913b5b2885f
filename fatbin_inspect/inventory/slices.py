"""One ELF file's hidden fatbins read in slices by several of the scan's workers
(``scanning.elf_split``), giving the record one process would: the plan (``hidden_split``), a
slice's magic scan (``scan_slice``), which of its fatbins the whole scan would find
(``chained``), the static cudart marker in a slice (``slice_has_marker``) and the record of the
rest of the file (``inspect_split_main``).
"""

from __future__ import annotations

from dataclasses import dataclass

from fatbin_inspect.containers import STATIC_CUDART_MARKER, has_static_cudart
from fatbin_inspect.errors import InputError
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.formats.decompress import Budget
from fatbin_inspect.formats.model import Fatbin, FileReport
from fatbin_inspect.inventory import member_path
from fatbin_inspect.inventory.binary import inspect_binary
from fatbin_inspect.inventory.decoding import probed
from fatbin_inspect.inventory.hidden import (
    code_ranges,
    fatbin_ranges,
    hidden_pieces,
    plain_layout,
    scan_chunks,
)
from fatbin_inspect.inventory.options import Options

SPLIT_HIDDEN = 64 << 20  # bytes of hidden pieces that make a split worth its parts
# the smallest piece cut into slices: cuFFT's .ldata (265 MB); not libcublasLt's .rodata, which
# holds the static cudart marker (its parts would be read again whole)
PIECE_MIN = 64 << 20
SLICE_MIN = 8 << 20  # the smallest slice


@dataclass(frozen=True)
class HiddenSplit:
    """How several processes can find one binary's hidden fatbins (cuFFT: 24,000 in a 265 MB
    ``.ldata``) and give the record one process would: ``slices`` ``(lo, hi, end, section)``
    cut the ``pieces`` (the hidden pieces of at least ``PIECE_MIN`` bytes, each ending at its
    ``end``); the rest of the file is read as ever, with ``delegated=pieces``. A slice finds the
    fatbins starting in ``[lo, hi)`` as a magic scan from ``lo`` would (``scan_slice``); its first
    ones may be false hits inside a fatbin of the slice before, which the scan from the piece's
    start jumps over: ``chained`` keeps those the whole scan finds. The static cudart marker was
    looked for outside the pieces (not found); each slice looks in its own bytes
    (``slice_has_marker``)."""

    size: int
    pieces: frozenset[tuple[int, int]]
    slices: tuple[tuple[int, int, int, str | None], ...]


def hidden_split(fmt: str, blob: Blob, opts: Options, parts: int) -> HiddenSplit | None:
    """The plan to read an ELF file's hidden fatbins in about ``parts`` slices; None when it has
    fewer than ``SPLIT_HIDDEN`` bytes of them, or a compressed section, or ``opts`` decode payloads
    (kernels, details) or hash the file, or the static cudart marker is outside those pieces (its
    first cubins are then probed for the toolkit: ``decoding.probed``)."""
    if fmt != "elf" or opts.kernels or opts.details or opts.digests or parts < 2:
        return None
    layout = plain_layout(fmt, blob)
    if layout is None:
        return None
    walked = [(a, b) for a, b, _ in fatbin_ranges(layout)]
    if walked and not opts.scan_hidden:
        return None
    big = [p for p in hidden_pieces(blob, layout, walked) if p[1] - p[0] >= PIECE_MIN]
    total = sum(b - a for a, b, _ in big)
    if total < SPLIT_HIDDEN:
        return None
    pieces = frozenset((a, b) for a, b, _ in big)
    if has_static_cudart(blob, layout.needs, code_ranges(layout) + sorted(pieces)):
        return None
    each = max(SLICE_MIN, total // parts)
    slices = []
    for a, b, name in big:
        n = max(1, (b - a) // each)
        slices += [(a + j * (b - a) // n, a + (j + 1) * (b - a) // n, b, name) for j in range(n)]
    return HiddenSplit(blob.size, pieces, tuple(slices))


def scan_slice(blob: Blob, split: HiddenSplit, i: int, opts: Options, budget: Budget) -> list[Fatbin] | None:
    """The fatbins a magic scan from slice ``i``'s start finds starting before its end, decoded as
    the whole file's are (``opts``, its ``budget``); None when a limit was reached (the whole
    scan may have reached it elsewhere) or the file is no longer the one planned."""
    lo, hi, end, name = split.slices[i]
    if blob.size != split.size:
        return None
    errors: list[InputError] = []
    fatbins = [fb for found in scan_chunks(blob, lo, end, name, errors, until=hi) for fb in found]
    if errors:
        return None
    return probed(blob, fatbins, False, budget) if opts.probe_small else fatbins


def chained(split: HiddenSplit, found: list[list[tuple[int, int]]]) -> list[int] | None:
    """Per slice, the index of its first fatbin the whole magic scan finds (``found``: each
    slice's fatbins as ``(start, end)``), the slice's fatbins from there on being the scan's; None
    when that cannot be told (a fatbin a slice found runs across the point where the scan from
    the piece's start resumes). The scan resumes after the last fatbin before; a slice's walk
    whose fatbin starts there, or that had ended a fatbin before it and found none between, took
    the same steps from there on (a walk's next step depends on its position alone)."""
    keep: list[int] = []
    resume = -1
    for (lo, hi, end, _name), fbs in zip(split.slices, found):
        if (lo, end) in split.pieces:  # the first slice of its piece: the scan starts there
            resume = lo
        j = next((k for k, (start, _e) in enumerate(fbs) if start >= resume), len(fbs))
        if j and fbs[j - 1][1] > resume:
            return None
        keep.append(j)
        resume = max(resume, hi, fbs[-1][1] if j < len(fbs) else resume)
    return keep


def slice_has_marker(blob: Blob, split: HiddenSplit, i: int, fatbins: list[Fatbin]) -> bool:
    """The static cudart marker (``containers.has_static_cudart``) in slice ``i``'s bytes outside
    its fatbins, or across either of its ends (a superset of what the whole file's search reads
    there: found, the file is read whole)."""
    lo, hi, _end, _name = split.slices[i]
    reach = len(STATIC_CUDART_MARKER) - 1
    skip = [(0, max(0, lo - reach)), (min(blob.size, hi + reach), blob.size)]
    return has_static_cudart(blob, (), skip + [(fb.offset, fb.end) for fb in fatbins])


def inspect_split_main(
    path: str, blob: Blob, opts: Options, split: HiddenSplit
) -> tuple[FileReport, int] | None:
    """The record of a split file less its slices' fatbins, and the inflation budget it spent;
    None when the file is no longer the size planned or reading it failed (read whole, the file
    gives its error record). The plan's other facts (its pieces, no static cudart marker outside
    them) are the file's as long as its stat is (``elf_split.inspect_part`` checks)."""
    if blob.size != split.size:
        return None
    budget = Budget(blob.size)
    try:
        rec, _read = inspect_binary(member_path.escape(path), "elf", blob, opts, budget, split.pieces)
    except Exception:  # (an InputError or a parser bug: the whole file's record tells)
        return None
    return rec, budget.limit - budget.left
