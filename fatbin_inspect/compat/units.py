"""Verdicts one level up: a distribution or a directory is a unit of files (R-UNIT, R-VARIANT).

A file that loads nothing on the GPU and whose every fatbin is made for other GPUs ((i) while
some file of the unit targets the GPU's generation or the fatbin is narrow, (ii), or (iii) while
another file of the unit loads a general cubin natively) is *set aside*: the package
is expected not to load it there (a Hopper-only extension on an A100). Files whose names differ
only by a CUDA-version token (``libbitsandbytes_cuda118.so`` … ``_cuda132.so``, ``_cu12``/``_cu13``,
``cuda12x``) in one directory are alternative builds: the package loads one, picked by the CUDA
runtime it finds, so the unit uses the variant matching the environment's runtime when that is
known, else the best one, and names it. The unit's verdict is the worst of the rest (fail > jit >
native). Pure: file verdicts in, unit verdicts out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from fatbin_inspect.compat.engine import worst_error
from fatbin_inspect.compat.verdict import ANY_REACH, SEVERITY, ErrorRef, FileVerdict, generation_reach

# a CUDA token: cuda118, cuda12x, cu12, cu130 (after a separator, before a separator or the suffix)
_TOKEN = re.compile(r"(?i)(?<=[_\-.])(cuda|cu)(\d{2,3})x?(?=[_\-.]|$)")


@dataclass(frozen=True)
class Variant:
    group: str  # the directory and the name with the token replaced: the alternatives' identity
    cuda: tuple[int, ...]  # (11, 8), (12,), (13, 0)
    token: str  # "cuda118"


@dataclass(frozen=True)
class UnitVerdict:
    verdict: str  # native | jit | fail | no-device-code | link-time
    coverage: str  # full | partial | none
    error: ErrorRef | None
    rule: str | None
    reason: str
    path: str | None  # the file that decided
    set_aside: tuple[str, ...] = ()  # files specialised elsewhere (R-UNIT)
    variants: tuple[str, ...] = ()  # the variant picked from each set of alternative builds (R-VARIANT)
    variants_unused: tuple[str, ...] = ()  # the alternatives not picked
    device: FileVerdict | None = None  # R-HOST decided: what the deciding file's device code gives


def variant_of(path: str) -> Variant | None:
    """The CUDA-version token of a file name, if it has exactly one."""
    head, sep, member = path.rpartition("!")
    folder, name = os.path.split(member if sep else path)
    hits = list(_TOKEN.finditer(name))
    if len(hits) != 1:
        return None
    m = hits[0]
    digits = m.group(2)
    cuda = (int(digits[:2]),) if len(digits) == 2 else (int(digits[:2]), int(digits[2:]))
    group = f"{head}{sep}{folder}/{name[: m.start()]}<cuda>{name[m.end() :]}"
    return Variant(group, cuda, m.group(0))


def variant_sets(paths: Sequence[str]) -> list[list[str]]:
    """Paths grouped: alternative builds together (two or more files), every other file alone."""
    groups: dict[str, list[str]] = {}
    for p in paths:
        v = variant_of(p)
        groups.setdefault(v.group if v else p, []).append(p)
    out = []
    for key, members in groups.items():
        if len(members) > 1 and "<cuda>" in key:
            out.append(members)
        else:
            out += [[p] for p in members]
    return out


def parse_runtime(text: str) -> tuple[int, ...]:
    """``12.8`` / ``12`` / ``cu128`` -> (12, 8) / (12,) / (12, 8)."""
    t = text.strip().lower().removeprefix("cuda").removeprefix("cu").strip()
    if re.fullmatch(r"\d{3}", t):
        return int(t[:2]), int(t[2:])
    if re.fullmatch(r"\d+(\.\d+)?", t):
        return tuple(int(x) for x in t.split("."))
    raise ValueError(f"not a CUDA version: {text!r} (expected e.g. 12.8)")


def pick_variant(
    members: Sequence[tuple[str, FileVerdict]], runtime: tuple[int, ...] | None
) -> tuple[str, FileVerdict]:
    """The variant the package would load: the runtime's (same major, the closest minor at or
    below it, else the closest above), else the one with the best verdict (newest CUDA on a tie)."""
    tagged = [(variant_of(p), p, v) for p, v in members]
    if runtime is not None:
        same = [(v, p, verdict) for v, p, verdict in tagged if v is not None and v.cuda[0] == runtime[0]]
        if same:
            want = runtime[1] if len(runtime) > 1 else 99

            def closeness(t: tuple[Variant, str, FileVerdict]) -> tuple[bool, int]:
                minor = t[0].cuda[1] if len(t[0].cuda) > 1 else want
                return (minor <= want, -abs(want - minor))

            _, p, v = max(same, key=closeness)
            return p, v
    _, p, v = min(tagged, key=lambda t: (SEVERITY[t[2].verdict], [-x for x in (t[0].cuda if t[0] else ())]))
    return p, v


def _loads(v: FileVerdict) -> bool:
    return v.verdict in ("native", "jit") or (v.verdict == "fail" and v.coverage == "partial")


def unit_verdict(
    files: Sequence[tuple[str, FileVerdict]], runtime: tuple[int, ...] | None = None
) -> UnitVerdict:
    """R-VARIANT, then R-UNIT, over the files of one distribution or directory on one target."""
    chosen: list[tuple[str, FileVerdict]] = []
    decided: dict[str, tuple[str, ...]] = {}
    by_path = dict(files)
    for members in variant_sets([p for p, _ in files]):
        p, v = (
            pick_variant([(m, by_path[m]) for m in members], runtime)
            if len(members) > 1
            else (
                members[0],
                by_path[members[0]],
            )
        )
        chosen.append((p, v))
        if len(members) > 1:
            decided[p] = tuple(m for m in members if m != p)
    return _roll_up(chosen, decided)


def set_aside(chosen: Sequence[tuple[str, FileVerdict]]) -> set[str]:
    """Files made only for other GPUs (``FileVerdict.set_aside_in``): (iii) counts when another
    file runs a general cubin natively, broad (i) code when some file of the unit targets the
    GPU's generation (the guard of (i): a distribution that dropped it has no specialised files)."""
    generation = any(generation_reach(w.fatbins) is not None for _, w in chosen if w.verdict != "link-time")
    reach = ANY_REACH if generation else None
    out = set()
    for p, v in chosen:
        others_general = any(
            q != p and any(f.general_native for f in w.fatbins if f.ignored is None) for q, w in chosen
        )
        if v.set_aside_in(others_general, reach):
            out.add(p)
    return out


def _roll_up(chosen: Sequence[tuple[str, FileVerdict]], decided: dict[str, tuple[str, ...]]) -> UnitVerdict:
    aside = set_aside(chosen)
    judged = _judged(chosen)
    kept = [(p, v) for p, v in judged if p not in aside]
    extra = (tuple(sorted(aside)), tuple(decided), _flat(decided))
    if not judged:
        return _without_runtime_verdicts(chosen)
    if not kept or not any(_loads(v) for _, v in judged):
        return _nothing_loads(judged, extra)
    p, v = max(kept, key=lambda pv: SEVERITY[pv[1].verdict])
    partial = bool(aside) or _any_partial(kept)
    reason = v.reason + _aside_note(aside)
    return UnitVerdict(
        v.verdict, "partial" if partial else "full", v.error, v.rule, reason, p, *extra, device=v.device
    )


def _judged(chosen: Sequence[tuple[str, FileVerdict]]) -> list[tuple[str, FileVerdict]]:
    """The files with a run-time verdict (not without device code, not link-time inputs)."""
    return [(p, v) for p, v in chosen if v.verdict not in ("no-device-code", "link-time")]


def _flat(decided: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(q for qs in decided.values() for q in qs)


def _any_partial(kept: Sequence[tuple[str, FileVerdict]]) -> bool:
    return any(w.coverage != "full" for _, w in kept)


def _nothing_loads(
    judged: Sequence[tuple[str, FileVerdict]], extra: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
) -> UnitVerdict:
    """No file of the unit loads: the first failing file's rule and reason, the worst error."""
    fails = [v for _, v in judged if v.verdict == "fail"]
    p, v = next(((q, w) for q, w in judged if w.verdict == "fail"), judged[0])
    reason = f"no file of the unit loads anything on this GPU: {v.reason}"
    error = worst_error(fails) if any(f.error for f in fails) else None  # R-HOST: never loaded, no error
    return UnitVerdict("fail", "none", error, v.rule, reason, p, *extra, device=v.device)


def _aside_note(aside: set[str]) -> str:
    if not aside:
        return ""
    names = ", ".join(os.path.basename(q.rsplit("!", 1)[-1]) for q in sorted(aside)[:3])
    return f"; {len(aside)} file(s) made for other GPUs set aside ({names})"


def _without_runtime_verdicts(chosen: Sequence[tuple[str, FileVerdict]]) -> UnitVerdict:
    """Only files without device code, or link-time inputs: the first one's verdict."""
    if not chosen:
        return UnitVerdict("no-device-code", "full", None, None, "no files", None)
    p, v = chosen[0]
    return UnitVerdict(v.verdict, v.coverage, None, v.rule, v.reason, p)
