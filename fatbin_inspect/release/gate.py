"""The release gate: inventory records + a policy -> findings, through the compatibility engine. Pure.

Each required arch becomes a target (a GPU of that compute capability, on the policy's minimum
driver or the newest one) and every fatbin of a file is judged by ``compat.engine``: a library is
one fatbin per translation unit, and one TU built without ``sm_120`` breaks its kernels on an RTX
5090 although the file as a whole "has sm_120". Fatbins the engine ignores (device-link output,
``__nv_relfatbin`` copies next to a linked ``.nv_fatbin``) do not count. ``--gpu`` targets are
judged the same way; FBI005 (arch-specific only) applies to required archs, not to named GPUs.
``check_findings`` turns ``check``'s file verdicts into the same findings, one per file and target.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from fatbin_inspect.compat import data, describe, engine, fatbin_decision, jit, rules, units, verdict
from fatbin_inspect.compat import runtime as runtime_mod
from fatbin_inspect.compat.runtime import RuntimeNeed
from fatbin_inspect.compat.targets import NOT_PROBED, LocalDevices, Target, resolve_driver, resolve_targets
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, Fatbin, FileReport
from fatbin_inspect.inventory import member_path
from fatbin_inspect.release.findings import Check, Finding, FindingsReport, sort_key
from fatbin_inspect.release.policy import Policy, distribution_of, split_arch

OK, JIT, PTX_TOO_NEW, NONE = "ok", "jit", "ptx-too-new", "none"
RUNTIME_TOO_NEW, NO_DEVICE = "runtime-too-new", "no-device"  # file-wide failures (R-DRV, R-GPU)
FAILURE_STATE = {
    rules.UNSUPPORTED_PTX: PTX_TOO_NEW,
    rules.INSUFFICIENT_DRIVER: RUNTIME_TOO_NEW,
    rules.NO_DEVICE: NO_DEVICE,
}
STATE_RULE = {
    NONE: "FBI001",
    JIT: "FBI002",
    PTX_TOO_NEW: "FBI003",
    RUNTIME_TOO_NEW: "FBI004",
    NO_DEVICE: "FBI013",
}
FILE_WIDE = None  # Check.target of the per-file rules (unreadable, forward PTX, surplus/forbidden)


@dataclass(frozen=True)
class Requirement:
    label: str  # "sm_90" for a required arch, Target.label for a named GPU
    target: Target
    arch: str | None  # the required arch; None for a named GPU (no FBI005)
    none_rule: str = "FBI001"  # FBI009 for archs that come from --match torch


@cache
def requirements(
    require: tuple[str, ...],
    gpus: tuple[str, ...],
    driver: str | None,
    reference: tuple[str, ...] = (),
    local: LocalDevices = NOT_PROBED,
) -> tuple[Requirement, ...]:
    out = [Requirement(a, _enumerating(resolve_targets([a], driver, local=local)[0]), a) for a in require]
    out += [
        Requirement(a, _enumerating(resolve_targets([a], driver, local=local)[0]), a, "FBI009")
        for a in reference
        if a not in require
    ]
    out += [
        Requirement(t.label, t, None)
        for t in (tuple(map(_enumerating, resolve_targets(list(gpus), driver, local=local))) if gpus else ())
    ]
    return tuple(out)


def _enumerating(t: Target) -> Target:
    """The minimum driver applies where the GPU exists at all: a CC newer than the driver (sm_120
    with R535) is judged on the first branch that supports it, an old one on its last branch."""
    if rules.gpu_supported(t).ok or t.driver.assumed:
        return t
    first = data.first_branch_for_cc(t.cc)
    last = data.last_branch_for_architecture(t.gpu.architecture) if t.gpu.architecture else None
    branch = first if first is not None and t.driver.branch < first else last
    if branch is None:
        return t
    return dataclasses.replace(t, driver=resolve_driver(str(branch)))


def counted_fatbins(report: FileReport) -> list[Fatbin]:
    """Fatbins that can make a launch fail: with SASS or PTX, and not ignored by the engine."""
    has_nv = any(fb.section == ".nv_fatbin" for fb in report.fatbins)
    return [
        fb
        for fb in report.fatbins
        if any(e.kind in (KIND_SASS, KIND_PTX) for e in fb.entries)
        and fatbin_decision.ignored_reason(fb, has_nv) is None
    ]


def state(d: verdict.Decision) -> str:
    """What a fatbin's or a file's verdict means: ok | jit | ptx-too-new | runtime-too-new | no-device | none."""
    if d.verdict in ("native", "no-device-code"):
        return OK
    if d.verdict == "jit":
        return JIT
    return FAILURE_STATE.get(d.error.code, NONE) if d.error is not None else NONE


# ------------------------------------------------------------------------------------- rules
class _Emitter:
    def __init__(self, report: FileReport, policy: Policy):
        self.path = report.path
        self.dist = distribution_of(report)
        self.policy = policy
        self.out: list[Finding] = []

    def __call__(
        self,
        rule_id: str,
        severity: str,
        message: str,
        target: str | None = FILE_WIDE,
        arch: str | None = None,
        offset: int | None = None,
    ) -> None:
        sev = self.policy.grade(rule_id, severity)
        if sev is not None:
            self.out.append(Finding(rule_id, sev, message, self.path, target, arch, self.dist, offset))


_of = describe.of_fatbins


def check_requirement(
    emit: _Emitter,
    v: verdict.FileVerdict,
    req: Requirement,
    set_aside: bool = False,
    fatbins: Sequence[Fatbin] = (),
) -> None:
    """FBI001/2/3/5/9/14/16/20 for one requirement from the file's R-FILE verdict on its target:
    fatbins (or, R-UNIT, whole files) made for other GPUs are a note, gaps fail."""
    arch = req.arch or f"sm_{req.target.gpu.sm}"
    label = req.label
    total = sum(v.counts.values())
    if total == 0:
        return
    if v.rule == "R-HOST":
        emit("FBI020", "error", f"{label}: {_host_why(v)}", label, arch)
        return
    if set_aside:
        _set_aside_note(emit, v, label, arch)
        return
    _failures(emit, v, req, arch, total, fatbins)
    _jit_findings(emit, v, label, arch, total)
    if v.specialised is not None and v.coverage == "partial":
        emit("FBI014", "note", f"{label}: {describe.coverage_line(v)}", label, arch)
    _arch_specific_only(emit, v, req, arch, total)
    if emit.policy.require_exact and req.arch is not None:
        _exact(emit, v, req, total)


def _set_aside_note(emit: _Emitter, v: verdict.FileVerdict, label: str, arch: str) -> None:
    """FBI014 for a file only for other GPUs while another of its distribution runs (R-UNIT)."""
    counted = [f for f in v.fatbins if f.ignored is None and f.verdict != "no-device-code"]
    archs = ", ".join(dict.fromkeys(a for f in counted for a in f.archs))
    emit(
        "FBI014",
        "note",
        f"{label}: only code for other GPUs ({archs}); set aside, as another file of the "
        "distribution runs there (R-UNIT)",
        label,
        arch,
    )


def _jit_findings(emit: _Emitter, v: verdict.FileVerdict, label: str, arch: str, total: int) -> None:
    """FBI002 (fatbins that load only by JIT) and FBI021 (a JIT estimated over max-jit-seconds)."""
    if v.counts["jit"]:
        sev = "note" if emit.policy.ptx_counts else "error"
        emit("FBI002", sev, f"{label}: only PTX (JIT) in {_of(v.counts['jit'], total)}", label, arch)
    limit = emit.policy.max_jit_seconds
    cost = jit.cost(v) if limit is not None else None
    if cost is not None and limit is not None and cost.estimate_s > limit:
        emit(
            "FBI021",
            "error",
            f"{label}: the JIT is estimated at {jit.seconds_text(cost.estimate_s)} of compilation "
            f"(max-jit-seconds = {limit:g}) for {cost.images} PTX image(s), {jit.size_text(cost.ptx_bytes)} of PTX",
            label,
            arch,
        )


def _failures(
    emit: _Emitter, v: verdict.FileVerdict, req: Requirement, arch: str, total: int, fatbins: Sequence[Fatbin]
) -> None:
    """FBI001/FBI009 (209), FBI003 (222) for the gaps (or for everything when nothing loads)."""
    label = req.label
    if v.verdict == "link-time" and v.counts["fail"]:  # R-LINK: coverage requirements still apply
        what = _of(v.counts["fail"], total)
        emit(
            "FBI001",
            "error",
            f"{label}: no code to link for {arch} in {what} (link-time input, R-LINK)",
            label,
            arch,
        )
        return
    if v.verdict != "fail":
        return
    what = _failing(v, total)
    if state(v) == PTX_TOO_NEW:
        _ptx_too_new(emit, req, arch, what, fatbins)
    elif req.none_rule == "FBI009":
        emit("FBI009", "warning", f"{label}: no code in {what}, torch has {arch}", label, arch)
    else:
        elsewhere = (
            "; everything else is made for other GPUs" if v.specialised and v.coverage == "none" else ""
        )
        emit("FBI001", "error", f"{label}: no loadable SASS or PTX in {what}{elsewhere}", label, arch)


def _failing(v: verdict.FileVerdict, total: int) -> str:
    """'3 of 40 fatbins' that fail (the gaps, or all), with their kernels when decoded."""
    failing = v.gaps.count if v.gaps is not None and v.coverage == "partial" else total
    what = f"{_of(failing, total)}"
    if v.gaps is not None and v.gaps.kernels:
        what += f" ({len(v.gaps.kernels)} kernels: {', '.join(v.gaps.kernels[:3])})"
    return what


def _ptx_too_new(emit: _Emitter, req: Requirement, arch: str, what: str, fatbins: Sequence[Fatbin]) -> None:
    """FBI003 (222): only PTX newer than the driver's JIT, with the newest ISA present."""
    drv = req.target.driver
    isas = sorted(
        {e.ptx_isa for fb in fatbins for e in fb.entries if e.kind == KIND_PTX and e.ptx_isa},
        key=lambda x: tuple(map(int, x.split("."))),
    )
    newest = f"PTX ISA {isas[-1]}; " if isas else ""
    emit(
        "FBI003",
        "error",
        f"{req.label}: only PTX newer than the driver's JIT in {what} "
        f"({newest}R{drv.branch} compiles up to {drv.max_ptx_isa})",
        req.label,
        arch,
    )


def _arch_specific_only(
    emit: _Emitter, v: verdict.FileVerdict, req: Requirement, arch: str, total: int
) -> None:
    """FBI005: a file that loads only through arch-specific (sm_XYa) code where sm_XY is required."""
    if req.arch is None or split_arch(req.arch)[2] == "a":
        return
    only_a = _only_arch_specific(v)
    if only_a:
        cc = req.target.cc
        emit(
            "FBI005",
            "warning",
            f"{req.label}: only {arch}a code (runs on CC {cc[0]}.{cc[1]} only) in {_of(len(only_a), total)}",
            req.label,
            arch,
        )


def _only_arch_specific(v: verdict.FileVerdict) -> list:
    """The fatbins that load natively only by arch-specific code, when none loads general code
    (beside general code for the target they are specialised kernels, cuBLASLt's sm_90a ones)."""
    if any(f.general_native for f in v.fatbins if f.ignored is None):
        return []
    return [f for f in v.fatbins if f.ignored is None and f.verdict == "native" and not f.general_native]


def _exact(emit: _Emitter, v: verdict.FileVerdict, req: Requirement, total: int) -> None:
    """FBI016 (require-exact): loading fatbins whose cubin is not built for exactly the required arch."""
    if req.arch is None:  # (a --gpu requirement: no arch to be exact about)
        return
    _, sm, variant = split_arch(req.arch)
    want = {f"sm_{sm}{variant}"} | ({f"sm_{sm}"} if variant == "f" else set())
    loose = [
        f
        for f in v.fatbins
        if f.ignored is None and f.verdict in ("native", "jit") and not want & set(f.archs)
    ]
    if loose:
        via = sorted({f.chosen.arch for f in loose if f.chosen is not None})
        emit(
            "FBI016",
            "error",
            f"{req.label}: no {req.arch} cubin in {_of(len(loose), total)} (they load through {', '.join(via)})",
            req.label,
            req.arch,
        )


def check_runtime(emit: _Emitter, rt: RuntimeNeed | None, target: Target) -> None:
    """FBI004: the CUDA runtime the file needs (R-RT, as ``check`` finds it) needs a newer driver
    than the minimum (R-DRV)."""
    o = rules.driver_for_runtime(rt, target)
    if not o.ok:
        err = verdict.error_ref(o.error)
        emit("FBI004", "error", f"{err.name} ({err.code}): {o.reason}" if err else o.reason, FILE_WIDE)


def check_file_wide(emit: _Emitter, fatbins: list[Fatbin], policy: Policy) -> None:
    """FBI006 (forward PTX) and FBI007 (forbidden or surplus archs) of one file."""
    if policy.require_ptx and policy.require:
        _forward_ptx(emit, fatbins, policy)
    _arch_policy(emit, fatbins, policy)


def _forward_ptx(emit: _Emitter, fatbins: list[Fatbin], policy: Policy) -> None:
    """FBI006: fatbins without PTX for the newest required arch."""
    newest = max(split_arch(a)[1] for a in policy.require)
    lacking = sum(
        1
        for fb in fatbins
        if not any(e.kind == KIND_PTX and e.sm == newest and not e.variant for e in fb.entries)
    )
    if lacking:
        emit(
            "FBI006",
            "warning",
            f"no compute_{newest} PTX for forward compatibility in {_of(lacking, len(fatbins))}",
            FILE_WIDE,
            f"compute_{newest}",
        )


def _arch_policy(emit: _Emitter, fatbins: list[Fatbin], policy: Policy) -> None:
    """FBI007: archs the policy forbids (error), and surplus SASS when it allows none (warning)."""
    present = sorted(
        {e.arch for fb in fatbins for e in fb.entries if e.kind in (KIND_SASS, KIND_PTX)},
        key=lambda a: (a.startswith("compute"), split_arch(a)[1], a),
    )
    for arch in present:
        prefix, sm, variant = split_arch(arch)
        if any(_forbids(f, prefix, sm, variant) for f in policy.forbid):
            emit("FBI007", "error", f"forbidden architecture {arch} present", FILE_WIDE, arch)
        elif not policy.allow_surplus and prefix == "sm" and not _required(policy.require, sm, variant):
            emit(
                "FBI007",
                "warning",
                f"surplus architecture {arch} (not required by the policy)",
                FILE_WIDE,
                arch,
            )


def _forbids(forbidden: str, prefix: str, sm: int, variant: str) -> bool:
    fp, fsm, fv = split_arch(forbidden)
    return fp == prefix and fsm == sm and (not fv or fv == variant)


def _required(required: Iterable[str], sm: int, variant: str) -> bool:
    # an sm_XYf cubin is emitted as a plain sm_XY one, so a required sm_XYf admits sm_XY
    return any(
        rsm == sm and (rv == variant or (rv == "f" and not variant))
        for _, rsm, rv in map(split_arch, required)
    )


# --------------------------------------------------------------------------------- the gate
@dataclass(frozen=True)
class Context:
    """What the library layer read besides the records: runtimes from wheel metadata (R-RT 4),
    each record's runtime as ``judging.verdicts.runtime_of`` found it (R-RT 1-5: the one judging
    path; a record not in it falls back to ``runtime.for_file``), inputs that name CUDA (wheel
    name or requirements), and torch's CUDA runtime for ``--match torch``."""

    wheel_runtimes: Mapping[str, RuntimeNeed] = dataclasses.field(default_factory=dict)
    cuda_named: frozenset[str] = frozenset()
    torch_runtime: RuntimeNeed | None = None
    runtimes: Mapping[str, RuntimeNeed | None] = dataclasses.field(default_factory=dict)


@dataclass
class _Artifact:
    report: FileReport
    policy: Policy
    emit: _Emitter
    fatbins: list[Fatbin]
    runtime: RuntimeNeed | None
    reqs: tuple[Requirement, ...] = ()
    verdicts: dict[str, verdict.FileVerdict] = dataclasses.field(default_factory=dict)


def gate(
    reports: Iterable[FileReport],
    policy: Policy,
    flags: Mapping[str, Any] | None = None,
    reference: FileReport | None = None,
    fleet: Sequence[Target] = (),
    local: LocalDevices = NOT_PROBED,
    context: Context = Context(),
) -> FindingsReport:
    """Findings for every artifact. ``flags`` are reapplied after per-distribution overrides;
    ``reference`` is torch's libtorch_cuda.so for ``--match torch`` (its archs become FBI009
    requirements, and torch's own files are not checked); ``fleet``: resolved ``--targets``, each
    judged on its own driver like a named GPU; ``local``: the probed GPUs and driver for ``auto``
    (``system.stack.local_devices``). Steps: collect the artifacts, judge each file on each
    requirement (R-FILE), set aside files made for other GPUs per distribution (R-UNIT), emit."""
    ref_archs = reference_archs(reference) if reference is not None else ()
    fleet_reqs = tuple(Requirement(t.label, t, None) for t in fleet)
    labels: list[str] = [
        r.label
        for r in requirements(policy.require, policy.gpus, policy.min_driver, ref_archs, local) + fleet_reqs
    ]
    reports = list(reports)
    arts, inputs, ignored = _collect(reports, policy, flags, reference, context)
    checks: list[Check] = []
    for art in arts:
        if art.fatbins:
            _judge_artifact(art, ref_archs, local, fleet_reqs)
    aside = _unit_set_aside(arts)
    alternates = _alternates(arts, context, local)
    findings: list[Finding] = []
    for art in arts:
        _emit_artifact(art, aside, local, context, reference)
        art.emit.out = [_as_alternate(f, alternates) for f in art.emit.out]
        checks.append(Check(art.report.path, FILE_WIDE, art.emit.dist))
        for req in art.reqs:
            checks.append(Check(art.report.path, req.label, art.emit.dist))
            labels.append(req.label)
        findings += art.emit.out
    findings += _nothing_to_check(reports, arts, ignored, policy, context)
    return FindingsReport(
        "gate",
        tuple(sorted(findings, key=sort_key)),
        tuple(checks),
        tuple(dict.fromkeys(labels)),
        tuple(inputs),
        judged=tuple((label, v) for art in arts for label, v in art.verdicts.items()),
    )


def _judge_artifact(
    art: _Artifact, ref_archs: tuple[str, ...], local: LocalDevices, fleet_reqs: tuple[Requirement, ...]
) -> None:
    """The artifact's requirements (its policy's, then the fleet's) and its verdict on each."""
    art.reqs = requirements(art.policy.require, art.policy.gpus, art.policy.min_driver, ref_archs, local)
    art.reqs += fleet_reqs
    art.verdicts = {r.label: engine.evaluate(art.report, r.target, stack=False) for r in art.reqs}


def _collect(
    reports: Iterable[FileReport],
    policy: Policy,
    flags: Mapping[str, Any] | None,
    reference: FileReport | None,
    context: Context,
) -> tuple[list[_Artifact], list[str], int]:
    arts: list[_Artifact] = []
    inputs: list[str] = []
    ignored = 0
    for report in reports:
        if not member_path.is_member(report.path):
            inputs.append(report.path)
        pol = policy.for_artifact(report.path, distribution_of(report), flags)
        if pol.ignored(report.path) or (reference is not None and _is_torch(report, reference)):
            ignored += 1
            continue
        fatbins = counted_fatbins(report)
        if not fatbins and report.error is None:
            continue
        emit = _Emitter(report, pol)
        if report.path in context.runtimes:
            rt = context.runtimes[report.path]
        else:
            rt = runtime_mod.for_file(report, context.wheel_runtimes.get(member_path.container(report.path)))
        arts.append(_Artifact(report, pol, emit, fatbins, rt))
    return arts, inputs, ignored


def _unit_set_aside(arts: Sequence[_Artifact]) -> set[tuple[str, str]]:
    """(path, requirement label) of files made only for other GPUs while another file of the same
    distribution runs there (R-UNIT). Loose files in a folder are release artifacts in their own
    right here (scan rows do treat a folder as a unit): a gate flags a Hopper-only executable."""
    out = set()
    for (_, label), members in _by_unit_and_label(arts).items():
        pairs = [(a.report.path, a.verdicts[label]) for a in _not_variants(members)]
        if len(pairs) >= 2 and any(v.verdict != "fail" or v.coverage == "partial" for _, v in pairs):
            out |= {(p, label) for p in units.set_aside(pairs)}
    return out


def _not_variants(members: Sequence[_Artifact]) -> list[_Artifact]:
    """The members that are no alternative build of another (those are R-VARIANT's: one of them
    is judged), not files set aside."""
    alone = {p for ps in units.variant_sets([a.report.path for a in members]) if len(ps) == 1 for p in ps}
    return [a for a in members if a.report.path in alone]


def _by_unit_and_label(arts: Sequence[_Artifact]) -> dict[tuple[str | None, str], list[_Artifact]]:
    """The artifacts of each distribution judged on each requirement label."""
    groups: dict[tuple[str | None, str], list[_Artifact]] = {}
    for art in arts:
        if art.emit.dist is None:
            continue
        for label in art.verdicts:
            groups.setdefault((art.emit.dist, label), []).append(art)
    return groups


def _alternates(
    arts: Sequence[_Artifact], context: Context, local: LocalDevices
) -> dict[tuple[str, str | None], str]:
    """R-VARIANT: within a distribution, alternative builds (``…_cuda126.so``/``…_cuda130.so``)
    count as one. For each requirement (and for the minimum driver's runtime check, label None)
    the variant the package would load — torch's CUDA with ``--match torch``, else the best — is
    judged; the others' findings there become notes. Maps (path, label) to the picked variant."""
    out: dict[tuple[str, str | None], str] = {}
    by_dist: dict[str, list[_Artifact]] = {}
    for a in arts:
        if a.emit.dist and a.verdicts:
            by_dist.setdefault(a.emit.dist, []).append(a)
    torch = units.parse_runtime(context.torch_runtime.version) if context.torch_runtime else None
    for members in by_dist.values():
        index = {a.report.path: a for a in members}
        for paths in units.variant_sets(list(index)):
            if len(paths) >= 2:
                out.update(_picked_variants(paths, index, torch))
                out.update(_runtime_alternates([index[p] for p in paths], local))
    return out


def _picked_variants(
    paths: Sequence[str], index: Mapping[str, _Artifact], torch: tuple[int, ...] | None
) -> dict[tuple[str, str | None], str]:
    """For each label all ``paths`` were judged on: the variant picked, for the others."""
    out: dict[tuple[str, str | None], str] = {}
    for label in index[paths[0]].verdicts:
        if all(label in index[p].verdicts for p in paths):
            picked, _ = units.pick_variant([(p, index[p].verdicts[label]) for p in paths], torch)
            out.update({(p, label): picked for p in paths if p != picked})
    return out


def _runtime_alternates(
    variants: Sequence[_Artifact], local: LocalDevices
) -> dict[tuple[str, str | None], str]:
    """Variants whose runtime the minimum driver cannot serve, when another variant's it can."""
    pol = variants[0].policy
    if not pol.min_driver or not variants[0].reqs:
        return {}
    target = dataclasses.replace(
        variants[0].reqs[0].target, driver=resolve_driver(pol.min_driver, local.driver)
    )
    ok = [a for a in variants if rules.driver_for_runtime(a.runtime, target).ok]
    if not ok:
        return {}
    ok_paths = {a.report.path for a in ok}
    return {(a.report.path, None): ok[-1].report.path for a in variants if a.report.path not in ok_paths}


def _as_alternate(f: Finding, alternates: dict[tuple[str, str | None], str]) -> Finding:
    picked = alternates.get((f.path, f.target))
    if (
        picked is None
        or f.severity == "note"
        or f.rule_id not in ("FBI001", "FBI002", "FBI003", "FBI004", "FBI016")
    ):
        return f
    name = picked.rsplit("!", 1)[-1].rsplit("/", 1)[-1]
    return dataclasses.replace(
        f,
        severity="note",
        message=f"{f.message} (an alternative build: {name} is the one loaded there, R-VARIANT)",
    )


def _emit_artifact(
    art: _Artifact,
    aside: set[tuple[str, str]],
    local: LocalDevices,
    context: Context,
    reference: FileReport | None,
) -> None:
    emit, report, pol = art.emit, art.report, art.policy
    if report.error is not None:
        emit("FBI008", "error", report.error.message, FILE_WIDE, None, report.error.offset)
    if not art.fatbins:
        return
    check_file_wide(emit, art.fatbins, pol)
    if art.reqs and pol.min_driver:
        target = dataclasses.replace(art.reqs[0].target, driver=resolve_driver(pol.min_driver, local.driver))
        check_runtime(emit, art.runtime, target)
        if art.runtime is None and report.format in engine.HOST_FORMATS:
            emit("FBI019", "warning", describe.RUNTIME_UNKNOWN, FILE_WIDE)
    if reference is not None:
        check_torch_runtime(emit, art.runtime, context.torch_runtime)
    for req in art.reqs:
        check_requirement(emit, art.verdicts[req.label], req, (report.path, req.label) in aside, art.fatbins)
        check_driver_numbering(emit, report, req)


def _nothing_to_check(
    reports: Sequence[FileReport], arts: Sequence[_Artifact], ignored: int, policy: Policy, context: Context
) -> list[Finding]:
    """FBI015: no artifact with device code, everything ignored, or a CUDA-named wheel without device code."""
    out = []
    with_code = {member_path.outermost(a.report.path) for a in arts if a.fatbins}
    for path in sorted(context.cuda_named - with_code):
        out.append(
            Finding(
                "FBI015", "error", "names CUDA in its name or requirements but holds no device code", path
            )
        )
    if not arts:
        why = (
            f"every artifact with device code was ignored ({ignored})"
            if ignored
            else "no artifact with device code was found in the inputs"
        )
        out.append(
            Finding("FBI015", "error", why, member_path.outermost(reports[0].path) if reports else ".")
        )
    return [
        dataclasses.replace(f, severity=sev)
        for f in out
        if (sev := policy.grade(f.rule_id, f.severity)) is not None
    ]


def check_torch_runtime(emit: _Emitter, rt: RuntimeNeed | None, torch: RuntimeNeed | None) -> None:
    """FBI017: an extension whose CUDA runtime major differs from torch's."""
    if rt is None or torch is None or rt.major == torch.major:
        return
    emit(
        "FBI017",
        "error",
        f"needs CUDA {rt.major} ({rt.source}) but torch uses CUDA {torch.major} ({torch.source})",
        FILE_WIDE,
    )


def check_driver_numbering(emit: _Emitter, report: FileReport, req: Requirement) -> None:
    """FBI018: a Jetson target given a desktop driver number; a Windows binary on a Linux number."""
    for note in describe.platform_notes(report, req.target):
        emit("FBI018", "warning", f"{req.label}: {note}", req.label)


# ------------------------------------------------------------------------------- check
def _host_why(v: verdict.FileVerdict) -> str:
    """R-HOST's reason, with what the device code gives on a host that can load the file."""
    return f"{v.reason}; device code: {describe.device_line(v.device)}" if v.device else v.reason


def verdict_finding(v: verdict.FileVerdict) -> Finding | None:
    """``check``'s verdict for one file and target as a finding; None when it loads natively.
    JIT-only is a warning (it fails under ``--fail-on warning``), every failure an error."""
    s = state(v)
    if s == OK:
        return None
    label = v.target.label
    if v.error is not None:
        why = f"{v.error.name} ({v.error.code}): {v.reason}"
    else:  # a failure without a CUDA error is R-HOST's (the file is never loaded)
        why = _host_why(v) if v.verdict == "fail" else f"only PTX (JIT): {v.reason}"
    return Finding(
        "FBI020" if v.rule == "R-HOST" else STATE_RULE[s],
        "warning" if s == JIT else "error",
        f"{label}: {why}",
        v.path,
        label,
        f"sm_{v.target.gpu.sm}",
    )


def check_findings(
    inputs: Sequence[str],
    targets: Sequence[Target],
    verdicts: Sequence[verdict.FileVerdict],
    unreadable: Sequence[FileReport],
) -> FindingsReport:
    """``check`` as findings: one check per file with device code and target, FBI008 per unreadable input."""
    findings = [f for f in map(verdict_finding, verdicts) if f is not None]
    findings += [
        Finding("FBI019", "warning", f"{v.target.label}: {describe.RUNTIME_UNKNOWN}", v.path, v.target.label)
        for v in verdicts
        if describe.RUNTIME_UNKNOWN in v.notes
    ]
    findings += [
        Finding("FBI008", "error", r.error.message, r.path, offset=r.error.offset)
        for r in unreadable
        if r.error is not None
    ]
    checks = [Check(r.path) for r in unreadable]
    checks += [Check(v.path, v.target.label) for v in verdicts if v.verdict != "no-device-code"]
    return FindingsReport(
        "check",
        tuple(sorted(findings, key=sort_key)),
        tuple(checks),
        tuple(t.label for t in targets),
        tuple(inputs),
    )


# ------------------------------------------------------------------------ --match torch
def reference_archs(report: FileReport) -> tuple[str, ...]:
    """The baseline SASS archs a reference library (libtorch_cuda.so) was built for."""
    return tuple(f"sm_{sm}" for sm in sorted({e.sm for e in report.entries if e.kind == KIND_SASS}))


def _is_torch(report: FileReport, reference: FileReport) -> bool:
    """torch's own files: the reference and everything in the package folder around its lib/."""
    top = reference.path.replace("\\", "/").rsplit("/lib/", 1)[0]
    return report.path == reference.path or report.path.replace("\\", "/").startswith(top + "/")
