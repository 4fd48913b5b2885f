"""Decisions per file (R-FILE), over each fatbin's (``compat.fatbin_decision``: which image R-SEL
picks, or which error).

Pure: records in, records out (``compat.verdict``), only packaged data read; the sentences the
records carry are made by ``compat.describe``. Fatbins that cannot make a launch fail are kept but
``ignored`` (not counted): nvcc's small kernel-less device-link output (nvcc 13 puts one in every
executable), fatbins without images, and the ``__nv_relfatbin`` copies a linked file keeps next to
its device-linked ``.nv_fatbin``.

A file's verdict is not its worst fatbin (docs/compatibility.md §4, R-FILE): a fatbin that fails on
the GPU only because it holds code made for other GPUs ("specialised elsewhere": (i) a higher
CC, while the file targets the GPU's generation somewhere or the fatbin is narrow (one
architecture number): a build that dropped the generation has gaps, not specialisations; (ii)
`a`/`f`/Tegra code whose exact CC or family excludes the GPU; (iii) baseline code for an older
major while another fatbin of the file loads a general cubin natively) is set aside; any other
failing fatbin is a *gap* and fails the file. ``evaluate`` runs in steps: runtime and
GPU checks, one decision per fatbin (``evaluate_fatbin``: R-SEL picks a cubin, else PTX),
classifying the failing ones, aggregating. Verdicts need only the entry headers (and the small
device-link cubins' identity); kernel names, when decoded, only add which kernels live where.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import TypedDict

from fatbin_inspect.compat import describe, rules
from fatbin_inspect.compat.fatbin_decision import evaluate_fatbin, ignored_reason, statics
from fatbin_inspect.compat.runtime import RuntimeNeed, from_needs
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.compat.verdict import (
    KINDS,
    SEVERITY,
    Chosen,
    Decision,
    ErrorRef,
    FatbinGroup,
    FatbinVerdict,
    FileVerdict,
    arch_counts,
    arch_key,
    counts_toward,
    error_ref,
    generation_reach,
    oldest,
    specialised_in,
)
from fatbin_inspect.formats.model import FileReport

Counted = Sequence[FatbinVerdict]  # the fatbins that count toward the file's verdict
Notes = tuple[str, ...]


class _Base(TypedDict):
    """The FileVerdict fields every decision of one ``evaluate`` shares."""

    path: str
    target: Target
    fatbins: tuple[FatbinVerdict, ...]
    runtime: RuntimeNeed | None
    kernels_analysed: bool


# --------------------------------------------------------------------------- step: the file
def evaluate(
    report: FileReport, target: Target, runtime: RuntimeNeed | None = None, *, stack: bool = True
) -> FileVerdict:
    """The file's verdict on ``target``: R-DRV, then R-GPU, then R-FILE over its fatbins.

    ``runtime`` defaults to the one ``report.needs`` names (``runtime.for_file`` adds wheel and
    static-cudart evidence); ``stack=False`` judges the device code only (a gate checks the
    runtime against its minimum driver once per file)."""
    rt = _runtime_of(report, runtime) if stack else None
    fbs = judge_fatbins(report, target)
    counted = [v for v in fbs if counts_toward(v)]
    base: _Base = {
        "path": report.path,
        "target": target,
        "fatbins": fbs,
        "runtime": rt,
        "kernels_analysed": _kernels_analysed(counted),
    }
    notes = ((target.driver.note,) if target.driver.note else ()) + describe.platform_notes(report, target)
    unknown = stack and rt is None and report.format in HOST_FORMATS
    if counted and not host_fits(report, target):  # R-HOST, with what the device code would give
        device = _file_verdict(report, target, rt, counted, (), base)  # the target's notes stay outside
        return _wrong_host(report, target, _runtime_unknown(device) if unknown else device, notes, base)
    verdict = _file_verdict(report, target, rt, counted, notes, base)
    return _runtime_unknown(verdict) if unknown else verdict


def _kernels_analysed(counted: Sequence[FatbinVerdict]) -> bool:
    return bool(counted) and all(v.kernels is not None for v in counted)


def _runtime_of(report: FileReport, runtime: RuntimeNeed | None) -> RuntimeNeed | None:
    return runtime if runtime is not None else from_needs(report.needs)


def _file_verdict(
    report: FileReport, target: Target, rt: RuntimeNeed | None, counted: Counted, notes: Notes, base: _Base
) -> FileVerdict:
    """R-LINK, then the stack (R-FWD, R-DRV, R-GPU), then R-FILE over the images: what the file
    gives on a host that can load it (R-HOST is ``evaluate``'s)."""
    if is_link_time(report):
        return _link_time(counted, notes, base)
    if not counted and rt is None:
        reason = describe.no_code_reason(base["fatbins"], report.static_cudart)
        return _no_device_code(reason, "R-SEL", notes, base)
    blocked = _stack_check(rt, target, counted, notes, base)
    return blocked if blocked is not None else _loaded(rt, target, counted, notes, base)


def _loaded(
    rt: RuntimeNeed | None, target: Target, counted: Counted, notes: Notes, base: _Base
) -> FileVerdict:
    """Past the stack checks: R-MVC's note, then R-FILE (or no kernels to load)."""
    m = rules.mvc(rt, target)
    notes += (f"{m.reason} (R-MVC)",) if m else ()
    if not counted:
        reason = describe.no_kernels_reason(rules.driver_for_runtime(rt, target).reason)
        return _no_device_code(reason, "R-DRV", notes, base)
    return _aggregate(counted, target, rt, m is not None, notes, base)


HOST_FORMATS = ("elf", "pe")  # programs and libraries, which link (or embed) a CUDA runtime


def _runtime_unknown(v: FileVerdict) -> FileVerdict:
    """A file whose CUDA runtime no evidence names (R-RT 1-5): its device code is judged, but
    whether the driver is new enough for its runtime (R-DRV, 35) is not known, and it says so:
    a note, and confidence no higher than medium. Never "fine" where the tool does not know."""
    if v.verdict not in ("native", "jit"):
        return v
    return dataclasses.replace(
        v, notes=(*v.notes, describe.RUNTIME_UNKNOWN), confidence="low" if v.confidence == "low" else "medium"
    )


def judge_fatbins(report: FileReport, target: Target) -> tuple[FatbinVerdict, ...]:
    """Every fatbin decided (R-SEL), then the failing ones classified in the file's context."""
    has_nv = any(fb.section == ".nv_fatbin" for fb in report.fatbins)
    fbs = tuple(
        evaluate_fatbin(fb, target, ignored_reason(fb, has_nv), st)
        for fb, st in zip(report.fatbins, statics(report), strict=True)
    )
    general = any(v.general_native for v in fbs if counts_toward(v))
    reach = generation_reach(fbs)
    return tuple(
        dataclasses.replace(v, specialised=True)
        if counts_toward(v) and specialised_in(v, general, reach)
        else v
        for v in fbs
    )


def is_link_time(report: FileReport) -> bool:
    """R-LINK: static-archive members and relocatable objects are linked, never loaded."""
    return getattr(report, "relocatable", False) or ".a!" in report.path or ".lib!" in report.path.lower()


def _no_device_code(reason: str, rule: str, notes: Notes, base: _Base) -> FileVerdict:
    return FileVerdict(
        verdict="no-device-code",
        error=None,
        chosen=None,
        rule=rule,
        rules=(rule,),
        reason=reason,
        counts=_counts(()),
        missing_kernels=(),
        notes=notes,
        confidence="high",
        **base,
    )


def host_fits(report: FileReport, target: Target) -> bool:
    """R-HOST: a host binary built for another CPU than the target's host never loads there (an
    x86_64 wheel is not installed on an aarch64 DGX Spark or Jetson; the dynamic loader refuses
    the file). True when either side is not known (device-only files, PCIe GPUs in any host)."""
    host = target.host_arch
    return report.machine is None or host is None or report.machine == host


def _wrong_host(
    report: FileReport, target: Target, device: FileVerdict, notes: Notes, base: _Base
) -> FileVerdict:
    """R-HOST fails the file; ``device`` is what its device code gives on a host that can load
    it, and its fatbin counts are the file's (they describe the device code, not the host)."""
    reason = describe.wrong_host_reason(report, target)
    advice = describe.wrong_host_advice(target)
    v = _nothing_loads("R-HOST", None, reason, "high" if target.host else "medium", (), notes, advice, base)
    return dataclasses.replace(v, counts=dict(device.counts), device=device)


def _nothing_loads(
    rule: str,
    error: ErrorRef | None,
    reason: str,
    confidence: str,
    counted: Counted,
    notes: Notes,
    advice: tuple[str, ...],
    base: _Base,
) -> FileVerdict:
    """The file fails before any of its images is chosen (R-HOST, R-FWD, R-DRV, R-GPU): every
    counted fatbin fails with it, coverage none."""
    return FileVerdict(
        verdict="fail",
        error=error,
        chosen=None,
        rule=rule,
        rules=(rule,),
        reason=reason,
        counts={"native": 0, "jit": 0, "fail": len(counted)},
        missing_kernels=(),
        notes=notes,
        advice=advice,
        confidence=confidence,
        coverage="none",
        **base,
    )


def _stack_check(
    rt: RuntimeNeed | None, target: Target, counted: Counted, notes: Notes, base: _Base
) -> FileVerdict | None:
    """R-FWD (803/804: cuInit refuses a compat package) before R-DRV (35) before R-GPU (100), as the
    runtime initialises before it enumerates devices."""
    for check in (
        rules.forward_compat(target),
        rules.driver_for_runtime(rt, target),
        rules.gpu_supported(target),
    ):
        if check.ok:
            continue
        c = _counts(counted)
        if counted:
            notes += (describe.past_check_note(c),)
        if check.rule == "R-DRV" and not rules.gpu_supported(target).ok:
            notes += (f"{rules.gpu_supported(target).reason} (R-GPU)",)
        advice = describe.advice(check.rule, target, rt)
        return _nothing_loads(
            check.rule, error_ref(check.error), check.reason, check.confidence, counted, notes, advice, base
        )
    return None


def _link_time(counted: Counted, notes: Notes, base: _Base) -> FileVerdict:
    """R-LINK: no run-time verdict; the coverage says whether it can link code for the target."""
    loads = [v for v in counted if v.verdict != "fail"]
    coverage = "none" if not loads else "full" if len(loads) == len(counted) else "partial"
    archs = tuple(sorted({a for v in counted for a in v.archs}, key=arch_key))
    reason = describe.link_time_reason(archs, len(loads), len(counted), base["target"])
    return FileVerdict(
        verdict="link-time",
        error=None,
        chosen=None,
        rule="R-LINK",
        rules=("R-LINK",),
        reason=reason,
        counts=_counts(counted),
        missing_kernels=(),
        notes=notes,
        confidence="high",
        coverage=coverage if counted else "full",
        link_archs=archs,
        **base,
    )


# ------------------------------------------------------------------------ step: aggregate
def group(vs: Sequence[FatbinVerdict], loading: Sequence[FatbinVerdict], kinds: bool) -> FatbinGroup | None:
    """Counts, archs and (when decoded) the kernels that exist only in ``vs``."""
    if not vs:
        return None
    return FatbinGroup(
        count=len(vs),
        archs=arch_counts(vs),
        kinds=_kinds(vs) if kinds else (),
        kernels=_only_kernels(vs, loading),
        error=worst_error(vs),
    )


def _kinds(vs: Sequence[FatbinVerdict]) -> tuple[tuple[str, int], ...]:
    counts = Counter(k for v in vs for k in v.elsewhere)
    return tuple((k, counts[k]) for k in KINDS if counts[k])


def _only_kernels(vs: Sequence[FatbinVerdict], loading: Sequence[FatbinVerdict]) -> tuple[str, ...] | None:
    """Kernels of ``vs`` that no loading fatbin has; None when some payload was not decoded."""
    if any(v.kernels is None for v in list(vs) + list(loading)):
        return None
    present = {k for v in loading for k in v.kernels or ()}
    return tuple(sorted({k for v in vs for k in v.kernels or ()} - present))


def worst_error(vs: Sequence[Decision]) -> ErrorRef | None:
    """The error a set of failures reports: 209 wins when they differ (R-FILE 2)."""
    codes = {v.error.code for v in vs if v.error is not None}
    return error_ref(rules.NO_IMAGE if rules.NO_IMAGE in codes or not codes else min(codes))


def _aggregate(
    counted: Counted, target: Target, rt: RuntimeNeed | None, mvc: bool, notes: Notes, base: _Base
) -> FileVerdict:
    """R-FILE: loading fatbins give the verdict unless a gap fails the file; coverage says how much loads."""
    loading, spec, gaps = _partition(counted)
    lead, bad = _lead(loading, spec, gaps)
    verdict, coverage = rollup([v.verdict for v in loading], len(spec), len(gaps))
    partial = coverage != "full"
    notes += _dropped_note(gaps, counted, target)
    fails = verdict == "fail"
    return FileVerdict(
        verdict=verdict,
        error=worst_error(gaps if loading else spec + gaps) if fails else None,
        chosen=None if fails else _chosen(bad),
        rule=lead.rule,
        rules=_rules(bad, mvc, partial),
        reason=describe.file_reason(lead, bad, counted, loading, spec, gaps, target),
        counts=_counts(counted),
        missing_kernels=_missing_kernels(loading),
        notes=notes,
        advice=describe.advice(lead.rule, target, rt) if fails else (),
        confidence=_confidence(bad, partial),
        coverage=coverage,
        specialised=group(spec, loading, True),
        gaps=group(gaps, loading, False),
        **base,
    )


def _partition(counted: Counted) -> tuple[list[FatbinVerdict], list[FatbinVerdict], list[FatbinVerdict]]:
    """(loading, failing and specialised elsewhere, failing gaps)."""
    loading: list[FatbinVerdict] = []
    spec: list[FatbinVerdict] = []
    gaps: list[FatbinVerdict] = []
    for v in counted:
        (loading if v.verdict != "fail" else spec if v.specialised else gaps).append(v)
    return loading, spec, gaps


def _missing_kernels(loading: Sequence[FatbinVerdict]) -> tuple[str, ...]:
    return tuple(sorted({k for v in loading for k in v.missing_kernels}))


def rollup(loading: Sequence[str], specialised: int, gaps: int) -> tuple[str, str]:
    """R-FILE's verdict and coverage from the verdicts of the fatbins that load (native | jit) and
    the numbers of failing ones set aside (specialised elsewhere) and failing the file (gaps).
    ``verify`` applies the same rule to what the driver did."""
    verdict = "fail" if not loading or gaps else max(loading, key=SEVERITY.__getitem__)
    coverage = "full" if not (specialised or gaps) else "partial" if loading else "none"
    return verdict, coverage


def _lead(
    loading: list[FatbinVerdict], spec: list[FatbinVerdict], gaps: list[FatbinVerdict]
) -> tuple[FatbinVerdict, list[FatbinVerdict]]:
    """The fatbin whose decision the file reports, and the fatbins sharing it."""
    if not loading:
        bad = gaps or spec
        return next((v for v in bad if v.error and v.error.code == rules.NO_IMAGE), bad[0]), bad
    if gaps:
        return gaps[0], gaps
    bad = _worst(loading)
    return _most_chosen(bad) or bad[0], bad


def _worst(loading: Sequence[FatbinVerdict]) -> list[FatbinVerdict]:
    """The loading fatbins of the worst verdict (jit over native)."""
    worst = max(SEVERITY[v.verdict] for v in loading)
    return [v for v in loading if SEVERITY[v.verdict] == worst]


def _dropped_note(gaps: Sequence[FatbinVerdict], counted: Counted, t: Target) -> tuple[str, ...]:
    """Why broad fatbins for newer GPUs are gaps here: the file targets the GPU's generation
    nowhere, or only with code that stops below theirs (a statically linked component's)."""
    dropped = [v for v in gaps if "i" in v.elsewhere and not v.narrow]
    reach = generation_reach(counted)
    if reach is None:
        return (describe.dropped_note(len(dropped), t),) if dropped else ()
    beyond = [v for v in dropped if oldest(v) > reach]
    if not beyond:
        return ()
    return (describe.component_note(len(beyond), reach, min(map(oldest, beyond)), t),)


def _rules(bad: Sequence[FatbinVerdict], mvc: bool, partial: bool) -> tuple[str, ...]:
    out = [r for v in bad for r in v.rules] + (["R-MVC"] if mvc else []) + (["R-FILE"] if partial else [])
    return tuple(dict.fromkeys(out))


_CONFIDENCE = ["low", "medium", "high"]


def _confidence(bad: Sequence[FatbinVerdict], partial: bool) -> str:
    """The weakest of the deciding fatbins; R-FILE itself is medium."""
    conf = min((v.confidence for v in bad), key=_CONFIDENCE.index)
    return min(conf, "medium", key=_CONFIDENCE.index) if partial else conf


def _most_chosen(bad: Sequence[FatbinVerdict]) -> FatbinVerdict | None:
    """The first of ``bad`` that loads the arch chosen most often among them (None: none loads)."""
    with_choice = [(v, v.chosen) for v in bad if v.chosen is not None]
    if not with_choice:
        return None
    arch = Counter(c.arch for _, c in with_choice).most_common(1)[0][0]
    return next(v for v, c in with_choice if c.arch == arch)


def _chosen(bad: Sequence[FatbinVerdict]) -> Chosen | None:
    v = _most_chosen(bad)
    c = v.chosen if v is not None else None
    return Chosen(c.arch, c.kind, c.ptx_isa) if c is not None else None


def _counts(counted: Sequence[FatbinVerdict]) -> dict[str, int]:
    c = Counter(v.verdict for v in counted)
    return {"native": c["native"], "jit": c["jit"], "fail": c["fail"]}
