"""Which kernels a file's gaps hold (docs/compatibility.md R-FILE): when some fatbins of a file
load and others have no code for the GPU, the failing ones are often a library linked into it
(TensorFlow's framework library carries NCCL's device kernels, without PTX). The verdict stays
fail/partial; the sentence names those kernels by their common prefix and count ("the 342
kernels named ncclDevKernel_*"), so a reader can judge whether their program launches them.

Names are compared demangled and without their parameters, template arguments and return type
(``ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)`` is
``ncclDevKernel_AllGather_RING_LL``); a mangled name the C++ runtime cannot demangle is kept."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fatbin_inspect.compat.verdict import FatbinVerdict, FileVerdict

SEPARATORS = "_:"
MIN_PREFIX = 3  # a shorter common prefix says nothing ("c", "nc")
SHOWN = 3  # names given when they share no prefix or suffix


def base_name(name: str) -> str:
    """A kernel's name without parameters, template arguments or return type, demangled."""
    from fatbin_inspect.formats.demangle import demangle

    text = (demangle(name) or name) if name.startswith("_Z") else name
    out, depth = [], 0
    for ch in text:
        if ch in "<(":
            if ch == "(" and depth == 0:
                break
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    base = "".join(out).strip()
    return base.rsplit(" ", 1)[-1] if " " in base else base or text


def common_prefix(bases: Sequence[str]) -> str:
    """The prefix every name shares, cut back to a separator unless it is a whole name
    (``ncclDevKernel_``); "" when under ``MIN_PREFIX`` characters."""
    lo, hi = min(bases, default=""), max(bases, default="")  # (what they share, the extremes share)
    n = next((i for i, (a, b) in enumerate(zip(lo, hi)) if a != b), min(len(lo), len(hi)))
    p = lo[:n]
    if p and p not in bases and p[-1] not in SEPARATORS:
        cut = max(p.rfind(s) for s in SEPARATORS)
        p = p[: cut + 1] if cut + 1 >= MIN_PREFIX else p
    return p if len(p) >= MIN_PREFIX else ""


def clause(names: Iterable[str]) -> str:
    """``; they hold the 342 kernels named ncclDevKernel_*`` ("" without names): how many
    kernels (distinct names), and what their names share: a common prefix, else a common suffix
    (``*_kernel``), else the most frequent names (``cutlass::Kernel ×60``)."""
    kernels = sorted(set(names))
    if not kernels:
        return ""
    bases = [base_name(k) for k in kernels]
    distinct = sorted(set(bases))
    n = len(kernels)
    if len(distinct) == 1:
        return (
            f"; they hold 1 kernel, {distinct[0]}"
            if n == 1
            else f"; they hold the {n} kernels named {distinct[0]}"
        )
    if n <= SHOWN:
        return f"; they hold {n} kernels: {', '.join(distinct)}"
    p = common_prefix(distinct)
    if p:
        return f"; they hold the {n} kernels named {p}*"
    s = common_prefix([b[::-1] for b in distinct])[::-1]
    if s:
        return f"; they hold the {n} kernels named *{s}"
    top = Counter(bases).most_common(SHOWN)
    shown = ", ".join(f"{b} ×{c}" if c > 1 else b for b, c in top)
    return f"; they hold {n} kernels, most often named {shown}, …"


def gap_fatbins(v: FileVerdict) -> list[FatbinVerdict]:
    """The fatbins that fail a file while others of it load (its gaps, R-FILE); [] otherwise."""
    if v.verdict != "fail" or v.gaps is None or not (v.counts["native"] or v.counts["jit"]):
        return []
    return [f for f in v.fatbins if f.ignored is None and f.verdict == "fail" and not f.specialised]


def decoded_names(gaps: Sequence[FatbinVerdict]) -> tuple[str, ...] | None:
    """Every kernel of ``gaps``; None when a payload was not decoded."""
    if any(f.kernels is None for f in gaps):
        return None
    return tuple(k for f in gaps for k in f.kernels or ())


def named(v: FileVerdict, kernels_at: Mapping[int, Sequence[str]]) -> FileVerdict:
    """``v`` whose reason names the kernels of its gaps, given each fatbin's kernels by offset
    (decoded after the verdict: the engine judges from the entry headers alone)."""
    import dataclasses

    gaps = gap_fatbins(v)
    if not gaps or decoded_names(gaps) is not None or any(f.offset not in kernels_at for f in gaps):
        return v  # (named already, by the engine, or not known)
    text = clause(k for f in gaps for k in kernels_at[f.offset])
    return dataclasses.replace(v, reason=v.reason + text) if text else v
