"""Verdicts: per fatbin (which image R-SEL picks, or which error) and per file (R-FILE).

Pure: records in, records out, only packaged data read. ``verify`` compares these predictions
with real driver loads, so each ``FatbinVerdict`` keeps the fatbin offset and the chosen entry
(with its offset), and each ``EntryVerdict`` says whether that one image alone would load.
Fatbins that cannot make a launch fail are kept but ``ignored`` (not counted): nvcc's small
kernel-less device-link output (nvcc 13 puts one in every executable), fatbins without images,
and the ``__nv_relfatbin`` copies a linked file keeps next to its device-linked ``.nv_fatbin``.

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
from dataclasses import dataclass
from typing import NamedTuple

from fatbin_inspect.compat import data, rules
from fatbin_inspect.compat.runtime import RuntimeNeed, from_needs
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, KIND_TILE, Entry, Fatbin, FileReport
from fatbin_inspect.formats.ptx import PtxShape

VERDICTS = ("native", "jit", "fail", "no-device-code", "link-time")
COVERAGES = ("full", "partial", "none")
SEVERITY = {"no-device-code": 0, "link-time": 0, "native": 1, "jit": 2, "fail": 3}
DEVICE_LINK_MAX = 64 << 10  # nvcc's device-link cubins are ~1.5 KB; larger ones always count
KINDS = {
    "i": "code for a higher compute capability",
    "ii": "architecture-, family- or Tegra-specific code for other GPUs",
    "iii": "code for an older generation that a general cubin of the unit replaces here",
}


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
    size: int | None = None  # the image's bytes after decompression (per-fatbin choice; compat.jit)
    shape: PtxShape | None = None  # what its PTX holds, when check read it (judging.ptx_shapes)


class EntryVerdict(NamedTuple):
    """What one image alone would give (a named tuple, not a dataclass: ``check`` makes one per
    entry per target, 17,000 for libtorch_cuda.so on 5 GPUs, at a third of the cost)."""

    offset: int
    arch: str
    verdict: str  # native | jit | fail: what this image alone would give
    rule: str
    reason: str
    error: ErrorRef | None


@dataclass(frozen=True)
class Decision:
    """What a fatbin or a whole file gives on one target."""

    verdict: str  # native | jit | fail | no-device-code | link-time
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
    # a failing fatbin made for other GPUs: the kinds (i/ii/iii) of its images; () = loads, or a gap
    elsewhere: tuple[str, ...] = ()
    general_native: bool = False  # loads a cubin natively that is not architecture-specific
    archs: tuple[str, ...] = ()  # the archs of its SASS and PTX images
    kernels: tuple[str, ...] | None = None  # every kernel of its images (None: not decoded)
    specialised: bool = False  # set by the file: failing, and specialised elsewhere (else a gap)
    narrow: bool = False  # every image is for one architecture number (sm_100 + compute_100)
    generation: bool = False  # holds code for the target's major, minor at most the target's


@dataclass(frozen=True)
class FatbinGroup:
    """Failing fatbins of one file on one target that share a fate: specialised elsewhere, or gaps."""

    count: int
    archs: tuple[tuple[str, int], ...]  # (arch, fatbins holding it), most frequent first
    kinds: tuple[tuple[str, int], ...] = ()  # (i | ii | iii, fatbins) for specialised ones
    kernels: tuple[str, ...] | None = None  # kernels only there (None: payloads not decoded)
    error: ErrorRef | None = None  # what a launch of one of them gives (209 wins)


@dataclass(frozen=True)
class FileVerdict(Decision):
    path: str
    target: Target
    counts: dict[str, int]  # native / jit / fail fatbins (ignored ones not counted)
    fatbins: tuple[FatbinVerdict, ...]
    runtime: RuntimeNeed | None
    notes: tuple[str, ...] = ()
    advice: tuple[str, ...] = ()
    coverage: str = "full"  # full | partial | none (R-FILE)
    specialised: FatbinGroup | None = None  # failing fatbins set aside: made for other GPUs
    gaps: FatbinGroup | None = None  # failing fatbins that fail the file
    kernels_analysed: bool = False  # kernel names were decoded (--kernels)
    link_archs: tuple[str, ...] = ()  # link-time inputs: the archs they can link code for

    @property
    def elsewhere(self) -> bool:
        """Nothing loads and every counted fatbin is made for other GPUs, before the unit's guards."""
        counted = [f for f in self.fatbins if _counts_toward(f)]
        return (
            self.verdict == "fail"
            and self.rule not in ("R-DRV", "R-GPU")
            and bool(counted)
            and all(f.verdict == "fail" and f.elsewhere for f in counted)
        )

    def set_aside_in(self, unit_general: bool, unit_generation: bool) -> bool:
        """R-UNIT: nothing loads and every counted fatbin is specialised elsewhere in a unit (a
        distribution) where another file loads a general cubin natively (``unit_general``) and
        some file targets the GPU's generation (``unit_generation``): ``specialised_in``."""
        return self.elsewhere and all(
            specialised_in(f, unit_general, unit_generation) for f in self.fatbins if _counts_toward(f)
        )


def error_ref(code: int | None) -> ErrorRef | None:
    if code is None:
        return None
    row = data.error_by_number(code)
    return ErrorRef(code, row["runtime_api_name"] if row else f"error {code}")


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


def _statics(report: FileReport) -> tuple[_Static, ...]:
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


def specialised_in(v: FatbinVerdict, unit_general: bool, unit_generation: bool) -> bool:
    """A failing fatbin is specialised elsewhere when each image is (i), (ii) or (iii), with two
    guards from the unit (file, or distribution): (iii) only while the unit loads a general cubin
    natively on the target (``unit_general``); (i) only while the unit targets the target's
    generation (``unit_generation``: ``targets_generation``) or the fatbin is narrow, one
    architecture number (docs/compatibility.md §4: broad code for newer GPUs in a build that
    dropped the generation is a gap)."""
    return (
        bool(v.elsewhere)
        and ("iii" not in v.elsewhere or unit_general)
        and ("i" not in v.elsewhere or v.narrow or unit_generation)
    )


def targets_generation(fatbins: Sequence[FatbinVerdict]) -> bool:
    """Some counted fatbin holds code built for the target's major (``sm_X*`` or ``compute_X*``,
    minor at most the target's): the unit targets the target's generation (guard of (i))."""
    return any(v.generation for v in fatbins if _counts_toward(v))


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
    counted = [v for v in fbs if _counts_toward(v)]
    base = {
        "path": report.path,
        "target": target,
        "fatbins": fbs,
        "runtime": rt,
        "kernels_analysed": _kernels_analysed(counted),
    }
    notes = ((target.driver.note,) if target.driver.note else ()) + platform_notes(report, target)
    verdict = _file_verdict(report, target, rt, counted, notes, base)
    unknown = stack and rt is None and report.format in HOST_FORMATS
    return _runtime_unknown(verdict) if unknown else verdict


def _kernels_analysed(counted: Sequence[FatbinVerdict]) -> bool:
    return bool(counted) and all(v.kernels is not None for v in counted)


def _runtime_of(report: FileReport, runtime: RuntimeNeed | None) -> RuntimeNeed | None:
    return runtime if runtime is not None else from_needs(report.needs)


def _file_verdict(report: FileReport, target: Target, rt, counted, notes, base) -> FileVerdict:
    """R-HOST, R-LINK, then the stack (R-FWD, R-DRV, R-GPU), then R-FILE over the images."""
    if counted and not host_fits(report, target):
        return _wrong_host(report, target, counted, notes, base)
    if is_link_time(report):
        return _link_time(counted, notes, base)
    if not counted and rt is None:
        return _no_device_code(_no_code_reason(base["fatbins"]), "R-SEL", notes, base)
    blocked = _stack_check(rt, target, counted, notes, base)
    return blocked if blocked is not None else _loaded(rt, target, counted, notes, base)


def _loaded(rt, target: Target, counted, notes, base) -> FileVerdict:
    """Past the stack checks: R-MVC's note, then R-FILE (or no kernels to load)."""
    m = rules.mvc(rt, target)
    notes += (f"{m.reason} (R-MVC)",) if m else ()
    if not counted:
        reason = f"no kernels to load; {rules.driver_for_runtime(rt, target).reason}"
        return _no_device_code(reason, "R-DRV", notes, base)
    return _aggregate(counted, target, rt, m is not None, notes, base)


HOST_FORMATS = ("elf", "pe")  # programs and libraries, which link (or embed) a CUDA runtime
RUNTIME_UNKNOWN = "runtime not known: the driver check was not made (R-RT: no cudart linked, none declared)"


def _runtime_unknown(v: FileVerdict) -> FileVerdict:
    """A file whose CUDA runtime no evidence names (R-RT 1-5): its device code is judged, but
    whether the driver is new enough for its runtime (R-DRV, 35) is not known, and it says so:
    a note, and confidence no higher than medium. Never "fine" where the tool does not know."""
    if v.verdict not in ("native", "jit"):
        return v
    return dataclasses.replace(
        v, notes=(*v.notes, RUNTIME_UNKNOWN), confidence="low" if v.confidence == "low" else "medium"
    )


def judge_fatbins(report: FileReport, target: Target) -> tuple[FatbinVerdict, ...]:
    """Every fatbin decided (R-SEL), then the failing ones classified in the file's context."""
    has_nv = any(fb.section == ".nv_fatbin" for fb in report.fatbins)
    fbs = tuple(
        evaluate_fatbin(fb, target, ignored_reason(fb, has_nv), st)
        for fb, st in zip(report.fatbins, _statics(report), strict=True)
    )
    general = any(v.general_native for v in fbs if _counts_toward(v))
    generation = targets_generation(fbs)
    return tuple(
        dataclasses.replace(v, specialised=True)
        if _counts_toward(v) and specialised_in(v, general, generation)
        else v
        for v in fbs
    )


def platform_notes(report: FileReport, target: Target) -> tuple[str, ...]:
    """Warnings that the driver number does not fit where the code runs: a Jetson given a
    desktop driver number, a Windows binary judged against a Linux driver number."""
    drv, out = target.driver, []
    platform = getattr(drv, "platform", None)
    if target.gpu.tegra and not drv.assumed and platform != "jetson":
        out.append(
            f"{target.gpu.name} is a Jetson: its driver comes with JetPack/L4T (--driver jetpack-6.2), "
            f"but {drv.version} is a desktop driver number; judged as CUDA {drv.cuda}"
        )
    if report.format == "pe" and platform == "linux":
        out.append(
            f"a Windows binary judged against Linux driver {drv.version}: Windows drivers are numbered "
            "differently (e.g. 581.xx for R580); give the Windows number"
        )
    return tuple(out)


def _counts_toward(v: FatbinVerdict) -> bool:
    return v.ignored is None and v.verdict != "no-device-code"


def is_link_time(report: FileReport) -> bool:
    """R-LINK: static-archive members and relocatable objects are linked, never loaded."""
    return getattr(report, "relocatable", False) or ".a!" in report.path or ".lib!" in report.path.lower()


def _no_device_code(reason: str, rule: str, notes, base) -> FileVerdict:
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


def _wrong_host(report: FileReport, target: Target, counted, notes, base) -> FileVerdict:
    reason = (
        f"{report.machine} code cannot load on {target.gpu.name}'s {target.host_arch} host: pip does not "
        f"install a wheel built for {report.machine} there and the dynamic loader refuses the file (R-HOST)"
    )
    advice = (f"install the {target.host_arch} build of this package on that host",)
    return _nothing_loads(
        "R-HOST", None, reason, "high" if target.host else "medium", counted, notes, advice, base
    )


def _nothing_loads(
    rule: str, error, reason: str, confidence: str, counted, notes, advice, base
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


def _stack_check(rt, target: Target, counted, notes, base) -> FileVerdict | None:
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
            notes += (
                f"past this check the images would give: {c['native']} native, {c['jit']} jit, {c['fail']} fail",
            )
        if check.rule == "R-DRV" and not rules.gpu_supported(target).ok:
            notes += (f"{rules.gpu_supported(target).reason} (R-GPU)",)
        advice = _advice(check.rule, target, rt)
        return _nothing_loads(
            check.rule, error_ref(check.error), check.reason, check.confidence, counted, notes, advice, base
        )
    return None


def _link_time(counted, notes, base) -> FileVerdict:
    """R-LINK: no run-time verdict; the coverage says whether it can link code for the target."""
    loads = [v for v in counted if v.verdict != "fail"]
    coverage = "none" if not loads else "full" if len(loads) == len(counted) else "partial"
    archs = tuple(sorted({a for v in counted for a in v.archs}, key=_arch_key))
    t = base["target"]
    reason = (
        f"link-time input (static archive member or relocatable object): it is linked into a program, "
        f"never loaded itself; code for {', '.join(archs) or 'nothing'}"
    )
    if counted:
        reason += f"; {len(loads)} of {len(counted)} fatbins have code for CC {t.cc[0]}.{t.cc[1]}"
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
        archs=_arch_counts(vs),
        kinds=_kinds(vs) if kinds else (),
        kernels=_only_kernels(vs, loading),
        error=worst_error(vs),
    )


def _arch_counts(vs: Sequence[FatbinVerdict]) -> tuple[tuple[str, int], ...]:
    """(arch, fatbins holding it), most frequent first."""
    archs = Counter(a for v in vs for a in v.archs)
    return tuple(sorted(archs.items(), key=lambda kv: (-kv[1], _arch_key(kv[0]))))


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


def _aggregate(counted, target: Target, rt, mvc: bool, notes, base) -> FileVerdict:
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
        reason=_reason(lead, bad, counted, loading, spec, gaps, target),
        counts=_counts(counted),
        missing_kernels=_missing_kernels(loading),
        notes=notes,
        advice=_advice(lead.rule, target, rt) if fails else (),
        confidence=_confidence(bad, partial),
        coverage=coverage,
        specialised=group(spec, loading, True),
        gaps=group(gaps, loading, False),
        **base,
    )


def _partition(counted) -> tuple[list[FatbinVerdict], list[FatbinVerdict], list[FatbinVerdict]]:
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


def _lead(loading, spec, gaps) -> tuple[FatbinVerdict, list[FatbinVerdict]]:
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


def _dropped_note(gaps, counted, t: Target) -> tuple[str, ...]:
    """Why broad fatbins for newer GPUs are gaps here: the file targets the GPU's generation nowhere."""
    dropped = [v for v in gaps if "i" in v.elsewhere and not v.narrow]
    if not dropped or targets_generation(counted):
        return ()
    x, y = t.cc
    code = f"sm_{x}0 or compute_{x}0" if y == 0 else f"sm_{x}0…sm_{x}{y} or compute_{x}0…compute_{x}{y}"
    n = "1 fatbin" if len(dropped) == 1 else f"{len(dropped)} fatbins"
    return (
        f"no fatbin holds {code} code: the build targets the generation of CC {x}.{y} nowhere, so "
        f"{n} of code for newer GPUs {'is a gap' if len(dropped) == 1 else 'are gaps'}, not "
        "specialised for other GPUs (R-FILE, guard of (i))",
    )


def _rules(bad, mvc: bool, partial: bool) -> tuple[str, ...]:
    out = [r for v in bad for r in v.rules] + (["R-MVC"] if mvc else []) + (["R-FILE"] if partial else [])
    return tuple(dict.fromkeys(out))


_CONFIDENCE = ["low", "medium", "high"]


def _confidence(bad, partial: bool) -> str:
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


def _reason(lead, bad, counted, loading, spec, gaps, t: Target) -> str:
    dev = f"CC {t.cc[0]}.{t.cc[1]}"
    reason = lead.reason
    if len(counted) > 1:
        reason = f"{of_fatbins(len(bad), len(counted))}: {reason}"
    if not loading and spec and not gaps:
        archs = ", ".join(a for a, _ in _arch_counts(spec)[:4])
        return f"{reason}; only code for {archs}: this file is for other GPUs than {dev}"
    if gaps and loading:
        from fatbin_inspect.compat.gap_kernels import clause, decoded_names

        named = clause(decoded_names(gaps) or ())  # the kernels they hold, when decoded
        return f"{of_fatbins(len(gaps), len(counted))} have no code for {dev} and fail at first use: {lead.reason}{named}"
    return reason


def of_fatbins(n: int, total: int) -> str:
    """'all 40 fatbins', 'its only fatbin', '3 of 40 fatbins'."""
    if n == total:
        return f"all {total} fatbins" if total > 1 else "its only fatbin"
    return f"{n} of {total} fatbins"


def _arch_key(arch: str) -> tuple:
    head, _, tail = arch.partition("_")
    digits = "".join(ch for ch in tail if ch.isdigit())
    return (head != "sm", int(digits or 0), tail)


def _counts(counted) -> dict[str, int]:
    c = Counter(v.verdict for v in counted)
    return {"native": c["native"], "jit": c["jit"], "fail": c["fail"]}


def _no_code_reason(fbs) -> str:
    if fbs:
        return f"only {len(fbs)} fatbin(s) that cannot make a launch fail ({fbs[0].ignored or 'no images'})"
    return "no CUDA device code and no CUDA runtime linked"


def coverage_line(v: FileVerdict, archs_shown: int = 3) -> str | None:
    """One sentence for a partial or failing file: what is set aside and what fails."""
    parts = []
    if v.specialised is not None:
        parts.append(_specialised_line(v.specialised, archs_shown))
    if v.gaps is not None:
        parts.append(_gaps_line(v.gaps, v.target))
    return "; ".join(parts) or None


def _specialised_line(s: FatbinGroup, archs_shown: int) -> str:
    archs = " ".join(f"{a} ×{n}" for a, n in s.archs[:archs_shown]) + (
        " …" if len(s.archs) > archs_shown else ""
    )
    n = "1 fatbin is" if s.count == 1 else f"{s.count} fatbins are"
    return f"{n} specialised for other GPUs ({archs}) and {'is' if s.count == 1 else 'are'} not used here"


def _gaps_line(g: FatbinGroup, t: Target) -> str:
    ks = f" ({len(g.kernels)} kernels)" if g.kernels is not None else ""
    err = f" with {g.error.code}" if g.error else ""
    n, s = ("1 fatbin", "s") if g.count == 1 else (f"{g.count} fatbins", "")
    dev = f"CC {t.cc[0]}.{t.cc[1]}"
    return f"{n}{ks} ha{'s' if s else 've'} no code for {dev} and fail{s}{err} at first use"


def _advice(rule: str, t: Target, rt: RuntimeNeed | None) -> tuple[str, ...]:
    """What to do about a failure decided by ``rule`` (a rebuild, unless the rule says otherwise)."""
    advise = _ADVICE.get(rule)
    if advise is None or (rule == "R-DRV" and rt is None):
        return (f"rebuild with code for this GPU: {rules.toolkit_targets(t)}",)
    return advise(t, rt)


def _driver_advice(t: Target, rt: RuntimeNeed | None) -> tuple[str, ...]:
    assert rt is not None, "R-DRV advice needs the runtime"
    floor = data.mvc_floor(rt.major)
    want = f">= {'.'.join(map(str, floor))}" if floor else f"of CUDA {rt.version} or newer"
    return (
        f"install a driver {want}, or (datacenter/Jetson only) a cuda-compat-{rt.major}-x package (R-FWD)",
    )


def _fwd_advice(t: Target, rt: RuntimeNeed | None) -> tuple[str, ...]:
    row = data.error_by_number(rules.forward_compat(t).error or 0)
    return (row["fix"],) if row and row.get("fix") else ()


_ADVICE = {
    "R-DRV": _driver_advice,
    "R-GPU": lambda t, rt: ("install a driver branch that supports this GPU",),
    "R-FWD": _fwd_advice,
    "R-PTX-ISA": lambda t, rt: (
        "upgrade the driver, or ship a cubin for this GPU so no JIT is needed (R-MVC caveat 2)",
        rules.toolkit_targets(t),
    ),
    "R-JIT-ENV": lambda t, rt: (
        "unset the CUDA_*_PTX_JIT variable, or ship both a cubin and PTX for this GPU",
    ),
}
