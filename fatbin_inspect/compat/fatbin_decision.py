"""One fatbin's decision on one target: which image R-SEL picks (or which error), what each image
alone would give, and, for a failing fatbin, whether every image is made for other GPUs (kinds
(i), (ii), (iii); docs/compatibility.md §4). ``compat.engine`` judges files from these.

Pure, and memoised: a library's thousands of fatbins hold a few dozen distinct entry sets, so a
decision is kept per (entries' signature, target), and the target-free part of each fatbin of
the last report judged (``statics``) per report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fatbin_inspect.compat import data, rules
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.compat.verdict import KINDS, Chosen, EntryVerdict, ErrorRef, FatbinVerdict, error_ref
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, KIND_TILE, Entry, Fatbin, FileReport

DEVICE_LINK_MAX = 64 << 10  # nvcc's device-link cubins are ~1.5 KB; larger ones always count


def _kernel_names(e: Entry) -> tuple[str, ...]:
    return tuple(k.name for k in e.kernels or ())


def _images(fb: Fatbin) -> list[Entry]:
    return [e for e in fb.entries if e.kind in (KIND_SASS, KIND_PTX)]


def ignored_reason(fb: Fatbin, linked_has_fatbin: bool) -> str | None:
    """Why a fatbin does not count toward a file's verdict (None: it counts): relocatable copies
    beside a device-linked ``.nv_fatbin``, nvcc's small kernel-less device-link output. Decided
    from what a listing with verdicts decodes (cubins up to ``DEVICE_LINK_MAX``), so every
    command counts the same fatbins whether or not it decoded kernels."""
    if linked_has_fatbin and fb.section == "__nv_relfatbin":
        return "relocatable device code kept for linking; the device-linked .nv_fatbin is what loads"
    images = _images(fb)
    if images and all(
        e.kind == KIND_SASS and e.size <= DEVICE_LINK_MAX and e.cubin is not None and e.cubin.device_link
        for e in images
    ):
        return "device-link output with no kernels"
    return None


def _sass_alone(e: Entry, t: Target) -> tuple[str, rules.Outcome]:
    o = rules.sass(e, t)
    if o.ok and t.force_ptx_jit:
        return "fail", rules.Outcome(
            False, "R-JIT-ENV", "CUDA_FORCE_PTX_JIT=1 ignores cubins", rules.NO_IMAGE
        )
    return ("native" if o.ok else "fail"), o


def _ptx_alone(e: Entry, t: Target) -> tuple[str, rules.Outcome]:
    o = rules.ptx_target(e, t)
    if o.ok:
        o = rules.ptx_isa(e, t)
    if o.ok and t.disable_ptx_jit:
        o = rules.Outcome(False, "R-JIT-ENV", "CUDA_DISABLE_PTX_JIT=1 forbids JIT", rules.JIT_DISABLED)
    return ("jit" if o.ok else "fail"), o


def _tile_alone(e: Entry, t: Target) -> tuple[str, rules.Outcome]:
    o = rules.tile_ir(e, t)
    return ("jit" if o.ok else "fail"), o


# what one image of each kind alone would give: (native | jit | fail, the deciding outcome)
_ALONE = {KIND_SASS: _sass_alone, KIND_PTX: _ptx_alone, KIND_TILE: _tile_alone}


def _entry_verdict(e: Entry, t: Target) -> EntryVerdict | None:
    alone = _ALONE.get(e.kind)
    if alone is None:
        return None
    v, o = alone(e, t)
    return EntryVerdict(e.offset, e.arch, v, o.rule, o.reason, error_ref(o.error))


# ------------------------------------------------------------------ step: classify a failure
def image_kind(e: Entry, t: Target) -> str | None:
    """Why one image cannot serve ``t`` if it was made for other GPUs: ``i`` (a higher CC), ``ii``
    (`a`/`f` code, or a Tegra cubin, whose exact CC or family excludes ``t``), ``iii`` (baseline
    code for a lower CC of another major: valid only when the unit runs general code on ``t``).
    None: the image targets ``t``'s generation and still fails (PTX too new, env switches, a
    desktop cubin on Tegra): a gap. A Tegra cubin counts as exact-CC code like ``a``."""
    usable = rules.sass(e, t).ok if e.kind == KIND_SASS else rules.ptx_target(e, t).ok
    if usable:
        return None
    cc = rules.cc_of(e)
    tegra_code = e.kind == KIND_SASS and cc in data.tegra_ccs()
    if rules.arch_specific(e) or e.variant in ("a", "f") or tegra_code:
        return "ii"
    if cc > t.cc:
        return "i"
    if cc[0] < t.cc[0]:
        return "iii"
    return None


def _elsewhere(images: Sequence[Entry], t: Target) -> tuple[str, ...]:
    """The kinds of a failing fatbin's images when every one is made for other GPUs, else ()."""
    kinds = [image_kind(e, t) for e in images]
    if not kinds or None in kinds:
        return ()
    return tuple(k for k in KINDS if k in kinds)


# ------------------------------------------------------------------ step: one fatbin (R-SEL)
def evaluate_fatbin(
    fatbin: Fatbin, target: Target, ignored: str | None = None, static: _Static | None = None
) -> FatbinVerdict:
    """Which image of one fatbin the driver would load on ``target`` (R-SEL and the rules it calls);
    a failing one is classified (``elsewhere``) without the file's context. ``static``: the
    fatbin's target-free part, when the caller judges it on several targets."""
    st = static or _static(fatbin)
    d = _decide(st.signature, target, fatbin.entries)
    picked = fatbin.entries[d.index] if d.index is not None else None
    chosen = None
    if picked is not None and d.verdict in ("native", "jit"):
        chosen = Chosen(picked.arch, picked.kind, picked.ptx_isa, picked.offset, picked.size)
    have = set(_kernel_names(picked)) if chosen and picked is not None else set()
    return FatbinVerdict(
        offset=fatbin.offset,
        section=fatbin.section,
        verdict=d.verdict,
        error=d.error,
        chosen=chosen,
        rule=d.rule,
        rules=d.rules,
        reason=d.reason,
        confidence=d.confidence,
        ignored=ignored,
        missing_kernels=tuple(sorted(st.every - have)) if st.every else (),
        entries=tuple(EntryVerdict(fatbin.entries[i].offset, *rest) for i, *rest in d.entries),
        elsewhere=d.elsewhere,
        general_native=d.general_native,
        archs=st.archs,
        kernels=st.kernels,
        narrow=st.narrow,
        generation=d.generation,
    )


@dataclass(frozen=True)
class _Static:
    """What a fatbin's verdict takes from its entries whatever the target."""

    signature: tuple
    archs: tuple[str, ...]  # of its SASS and PTX images
    every: frozenset[str]  # every kernel of its images
    kernels: tuple[str, ...] | None  # sorted ``every``; None: payloads not decoded
    narrow: bool  # its images are for one architecture number


def _static(fb: Fatbin) -> _Static:
    images = _images(fb)
    every = frozenset(k for e in images for k in _kernel_names(e))
    decoded = bool(images) and all(e.kernels is not None for e in images)
    return _Static(
        tuple(map(_signature, fb.entries)),
        tuple(dict.fromkeys(e.arch for e in images)),
        every,
        tuple(sorted(every)) if decoded else None,
        len({e.sm for e in images}) == 1,
    )


# the last report judged and its fatbins' target-free parts: ``check`` judges one file on every
# target in turn; only one report is held, so memory stays flat over a scan
_LAST: list = [None, ()]


def statics(report: FileReport) -> tuple[_Static, ...]:
    if _LAST[0] is not report:
        _LAST[:] = [report, tuple(_static(fb) for fb in report.fatbins)]
    return _LAST[1]


def _signature(e: Entry) -> tuple:
    """Everything the rules read from an entry: entries alike are decided alike."""
    return (
        e.kind,
        e.sm,
        e.variant,
        e.code_version,
        e.cubin is not None and e.cubin.arch_specific,
        getattr(e, "tile_ir_version", None),
    )


@dataclass(frozen=True)
class _Decided:
    """A fatbin's decision without its offsets (entries by index), shared by alike fatbins."""

    verdict: str
    index: int | None  # the entry R-SEL picks
    error: ErrorRef | None
    rule: str
    rules: tuple[str, ...]
    reason: str
    confidence: str
    entries: tuple[tuple, ...]  # (index, arch, verdict, rule, reason, error) per image
    elsewhere: tuple[str, ...]
    general_native: bool
    generation: bool


_DECIDED: dict[tuple, _Decided] = {}


def _decide(signature: tuple, target: Target, entries: Sequence[Entry]) -> _Decided:
    """R-SEL, the per-entry verdicts and the classification of one fatbin, memoised by the
    entries' signature: a library's thousands of fatbins hold a few dozen distinct entry sets."""
    key = (signature, target)
    hit = _DECIDED.get(key)
    if hit is not None:
        return hit
    sel = rules.select(entries, target)
    index = next((i for i, e in enumerate(entries) if e is sel.entry), None)
    images = [e for e in entries if e.kind in (KIND_SASS, KIND_PTX)]
    hit = _Decided(
        verdict=sel.verdict,
        index=index,
        error=error_ref(sel.outcome.error),
        rule=sel.outcome.rule,
        rules=sel.rules,
        reason=sel.outcome.reason,
        confidence=sel.outcome.confidence,
        entries=_per_entry(entries, target),
        elsewhere=_elsewhere(images, target) if sel.verdict == "fail" else (),
        general_native=_general_native(sel),
        generation=_of_generation(images, target),
    )
    if len(_DECIDED) > 100_000:
        _DECIDED.clear()
    _DECIDED[key] = hit
    return hit


def _per_entry(entries: Sequence[Entry], target: Target) -> tuple[tuple, ...]:
    """(index, arch, verdict, rule, reason, error) of each image alone."""
    verdicts = ((i, _entry_verdict(e, target)) for i, e in enumerate(entries))
    return tuple((i, v.arch, v.verdict, v.rule, v.reason, v.error) for i, v in verdicts if v is not None)


def _general_native(sel: rules.Selection) -> bool:
    """R-SEL loads a cubin natively that is not architecture-specific."""
    return sel.verdict == "native" and sel.entry is not None and not rules.arch_specific(sel.entry)


def _of_generation(images: Sequence[Entry], target: Target) -> bool:
    """Some image is for the target's major, minor at most the target's (guard of (i))."""
    return any(rules.cc_of(e)[0] == target.cc[0] and rules.cc_of(e) <= target.cc for e in images)
