"""Verdicts: per fatbin (which image R-SEL picks, or which error) and per file (worst fatbin wins).

Pure: records in, records out, only packaged data read. ``verify`` compares these predictions
with real driver loads, so each ``FatbinVerdict`` keeps the fatbin offset and the chosen entry
(with its offset), and each ``EntryVerdict`` says whether that one image alone would load.
Fatbins that cannot make a launch fail are kept but ``ignored`` (not counted): device-link
output (nvcc 13 puts a zero-kernel one in every executable), fatbins with no kernels, and the
``__nv_relfatbin`` copies a linked file keeps next to its device-linked ``.nv_fatbin``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from fatbin_inspect.compat import data, rules
from fatbin_inspect.compat.runtime import RuntimeNeed, from_needs
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, Entry, Fatbin, FileReport

VERDICTS = ("native", "jit", "fail", "no-device-code")
_SEVERITY = {"no-device-code": 0, "native": 1, "jit": 2, "fail": 3}


@dataclass(frozen=True)
class ErrorRef:
    code: int
    name: str  # runtime API name, e.g. cudaErrorNoKernelImageForDevice


@dataclass(frozen=True)
class Chosen:
    arch: str  # sm_86, compute_90
    kind: str  # sass | ptx
    ptx_isa: str | None
    offset: int | None = None  # entry header offset (per-fatbin choice)


@dataclass(frozen=True)
class EntryVerdict:
    offset: int
    arch: str
    verdict: str  # native | jit | fail: what this image alone would give
    rule: str
    reason: str
    error: ErrorRef | None


@dataclass(frozen=True)
class Decision:
    """What a fatbin or a whole file gives on one target."""

    verdict: str  # native | jit | fail | no-device-code
    error: ErrorRef | None
    chosen: Chosen | None
    rule: str  # the deciding rule
    rules: tuple[str, ...]  # every rule that took part, deciding rule first
    reason: str
    confidence: str
    missing_kernels: tuple[str, ...]  # kernels other images have that the loaded one lacks


@dataclass(frozen=True)
class FatbinVerdict(Decision):
    offset: int
    section: str | None
    ignored: str | None  # why this fatbin does not count, or None
    entries: tuple[EntryVerdict, ...]


@dataclass(frozen=True)
class FileVerdict(Decision):
    path: str
    target: Target
    counts: dict[str, int]  # native / jit / fail fatbins (ignored ones not counted)
    fatbins: tuple[FatbinVerdict, ...]
    runtime: RuntimeNeed | None
    notes: tuple[str, ...] = ()
    advice: tuple[str, ...] = ()


def error_ref(code: int | None) -> ErrorRef | None:
    if code is None:
        return None
    row = data.error_by_number(code)
    return ErrorRef(code, row["runtime_api_name"] if row else f"error {code}")


def _kernel_names(e: Entry) -> tuple[str, ...]:
    return tuple(k.name for k in e.kernels or ())


def ignored_reason(fb: Fatbin, linked_has_fatbin: bool) -> str | None:
    """Why a fatbin does not count toward a file's verdict (None: it counts): relocatable copies
    beside a device-linked ``.nv_fatbin``, nvcc's kernel-less device-link output."""
    if linked_has_fatbin and fb.section == "__nv_relfatbin":
        return "relocatable device code kept for linking; the device-linked .nv_fatbin is what loads"
    images = [e for e in fb.entries if e.kind in (KIND_SASS, KIND_PTX)]
    if images and all(e.kind == KIND_SASS and e.cubin is not None and e.cubin.device_link for e in images):
        return "device-link output with no kernels"
    if images and all(e.kernels is not None and not e.kernels for e in images):
        return "no kernels in this fatbin"
    return None


def _entry_verdict(e: Entry, t: Target) -> EntryVerdict | None:
    if e.kind == KIND_SASS:
        o = rules.sass(e, t)
        v = "native" if o.ok and not t.force_ptx_jit else "fail"
        if o.ok and t.force_ptx_jit:
            o = rules.Outcome(False, "R-JIT-ENV", "CUDA_FORCE_PTX_JIT=1 ignores cubins", rules.NO_IMAGE)
    elif e.kind == KIND_PTX:
        o = rules.ptx_target(e, t)
        if o.ok:
            o = rules.ptx_isa(e, t)
        if o.ok and t.disable_ptx_jit:
            o = rules.Outcome(False, "R-JIT-ENV", "CUDA_DISABLE_PTX_JIT=1 forbids JIT", rules.JIT_DISABLED)
        v = "jit" if o.ok else "fail"
    else:
        return None
    return EntryVerdict(e.offset, e.arch, v, o.rule, o.reason, error_ref(o.error))


def evaluate_fatbin(fatbin: Fatbin, target: Target, ignored: str | None = None) -> FatbinVerdict:
    """Which image of one fatbin the driver would load on ``target`` (R-SEL and the rules it calls)."""
    sel = rules.select(fatbin.entries, target)
    chosen = None
    if sel.entry is not None and sel.verdict in ("native", "jit"):
        chosen = Chosen(sel.entry.arch, sel.entry.kind, sel.entry.ptx_isa, sel.entry.offset)
    have = set(_kernel_names(sel.entry)) if chosen else set()
    every = {k for e in fatbin.entries if e.kind in (KIND_SASS, KIND_PTX) for k in _kernel_names(e)}
    return FatbinVerdict(
        offset=fatbin.offset,
        section=fatbin.section,
        verdict=sel.verdict,
        error=error_ref(sel.outcome.error),
        chosen=chosen,
        rule=sel.outcome.rule,
        rules=sel.rules,
        reason=sel.outcome.reason,
        confidence=sel.outcome.confidence,
        ignored=ignored,
        missing_kernels=tuple(sorted(every - have)),
        entries=tuple(v for v in (_entry_verdict(e, target) for e in fatbin.entries) if v is not None),
    )


def evaluate(report: FileReport, target: Target, runtime: RuntimeNeed | None = None) -> FileVerdict:
    """The file's verdict on ``target``: R-GPU, then R-DRV, then every fatbin; the worst fatbin wins.

    ``runtime`` defaults to the one ``report.needs`` names (``runtime.for_file`` adds wheel and
    static-cudart evidence, which needs I/O)."""
    rt = runtime if runtime is not None else from_needs(report.needs)
    has_nv = any(fb.section == ".nv_fatbin" for fb in report.fatbins)
    fbs = tuple(evaluate_fatbin(fb, target, ignored_reason(fb, has_nv)) for fb in report.fatbins)
    counted = [v for v in fbs if v.ignored is None and v.verdict != "no-device-code"]
    notes = tuple(n for n in (target.driver.note,) if n)
    base = dict(path=report.path, target=target, fatbins=fbs, runtime=rt)
    if not counted and rt is None:
        return FileVerdict(
            verdict="no-device-code",
            error=None,
            chosen=None,
            rule="R-SEL",
            rules=("R-SEL",),
            reason=_no_code_reason(report, fbs),
            counts=_counts(()),
            missing_kernels=(),
            notes=notes,
            confidence="high",
            **base,
        )
    for check in (rules.gpu_supported(target), rules.driver_for_runtime(rt, target)):
        if not check.ok:
            c = _counts(counted)
            notes += (
                (
                    f"past this check the images would give: {c['native']} native, {c['jit']} jit, "
                    f"{c['fail']} fail",
                )
                if counted
                else ()
            )
            return FileVerdict(
                verdict="fail",
                error=error_ref(check.error),
                chosen=None,
                rule=check.rule,
                rules=(check.rule,),
                reason=check.reason,
                counts={"native": 0, "jit": 0, "fail": len(counted)},
                missing_kernels=(),
                notes=notes,
                advice=_advice(check.rule, target, rt),
                confidence=check.confidence,
                **base,
            )
    m = rules.mvc(rt, target)
    notes += (f"{m.reason} (R-MVC)",) if m else ()
    if not counted:
        return FileVerdict(
            verdict="no-device-code",
            error=None,
            chosen=None,
            rule="R-DRV",
            rules=("R-DRV",),
            reason=f"no kernels to load; {rules.driver_for_runtime(rt, target).reason}",
            counts=_counts(()),
            missing_kernels=(),
            notes=notes,
            confidence="high",
            **base,
        )
    worst = max(_SEVERITY[v.verdict] for v in counted)
    bad = [v for v in counted if _SEVERITY[v.verdict] == worst]
    lead = bad[0]
    chosen = None
    if lead.chosen is not None and lead.verdict != "fail":
        arch = Counter(v.chosen.arch for v in bad).most_common(1)[0][0]
        c = next(v.chosen for v in bad if v.chosen.arch == arch)
        chosen = Chosen(c.arch, c.kind, c.ptx_isa)
    reason = lead.reason
    if len(counted) > 1:
        reason = f"{'all' if len(bad) == len(counted) else f'{len(bad)} of'} {len(counted)} fatbins: {reason}"
    all_rules = tuple(dict.fromkeys(r for v in bad for r in v.rules)) + (("R-MVC",) if m else ())
    missing = tuple(sorted({k for v in counted for k in v.missing_kernels}))
    conf = min((v.confidence for v in bad), key=["low", "medium", "high"].index)
    return FileVerdict(
        verdict=lead.verdict,
        error=lead.error,
        chosen=chosen,
        rule=lead.rule,
        rules=tuple(dict.fromkeys(all_rules)),
        reason=reason,
        counts=_counts(counted),
        missing_kernels=missing,
        notes=notes,
        advice=_advice(lead.rule, target, rt) if lead.verdict == "fail" else (),
        confidence=conf,
        **base,
    )


def _counts(counted) -> dict[str, int]:
    c = Counter(v.verdict for v in counted)
    return {"native": c["native"], "jit": c["jit"], "fail": c["fail"]}


def _no_code_reason(report: FileReport, fbs) -> str:
    if fbs:
        return f"only {len(fbs)} fatbin(s) that cannot make a launch fail ({fbs[0].ignored or 'no images'})"
    return "no CUDA device code and no CUDA runtime linked"


def _advice(rule: str, t: Target, rt: RuntimeNeed | None) -> tuple[str, ...]:
    if rule == "R-DRV" and rt is not None:
        floor = data.mvc_floor(rt.major)
        want = f">= {'.'.join(map(str, floor))}" if floor else f"of CUDA {rt.version} or newer"
        return (
            f"install a driver {want}, or (datacenter/Jetson only) a cuda-compat-{rt.major}-x package (R-FWD)",
        )
    if rule == "R-GPU":
        return ("install a driver branch that supports this GPU",)
    if rule == "R-PTX-ISA":
        return (
            "upgrade the driver, or ship a cubin for this GPU so no JIT is needed (R-MVC caveat 2)",
            rules.toolkit_targets(t),
        )
    if rule == "R-JIT-ENV":
        return ("unset the CUDA_*_PTX_JIT variable, or ship both a cubin and PTX for this GPU",)
    return (f"rebuild with code for this GPU: {rules.toolkit_targets(t)}",)
