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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from fatbin_inspect.checks.findings import Check, Finding, FindingsReport, sort_key
from fatbin_inspect.checks.policy import Policy, distribution_of, split_arch
from fatbin_inspect.compat import data, engine, rules
from fatbin_inspect.compat.runtime import from_needs
from fatbin_inspect.compat.targets import NOT_PROBED, LocalDevices, Target, resolve_driver, resolve_targets
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, Fatbin, FileReport

OK, ARCH_SPECIFIC, JIT, PTX_TOO_NEW, NONE = "ok", "arch-specific", "jit", "ptx-too-new", "none"
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
        and engine.ignored_reason(fb, has_nv) is None
    ]


def state(d: engine.Decision) -> str:
    """What a fatbin's or a file's verdict means: ok | jit | ptx-too-new | runtime-too-new | no-device | none."""
    if d.verdict in ("native", "no-device-code"):
        return OK
    if d.verdict == "jit":
        return JIT
    return FAILURE_STATE.get(d.error.code if d.error is not None else None, NONE)


def coverage(fbv, fatbin: Fatbin, req: Requirement) -> str:
    """How one judged fatbin serves a requirement: ``state`` or arch-specific (only sm_XYa code)."""
    s = state(fbv)
    if s != OK or req.arch is None or split_arch(req.arch)[2] == "a":
        return s
    native = {ev.offset for ev in fbv.entries if ev.verdict == "native"}
    specific = [rules.arch_specific(e) for e in fatbin.entries if e.offset in native]
    return ARCH_SPECIFIC if specific and all(specific) else OK


# ------------------------------------------------------------------------------------- rules
class _Emitter:
    def __init__(self, report: FileReport, policy: Policy):
        self.path = report.path
        self.dist = distribution_of(report)
        self.policy = policy
        self.out: list[Finding] = []

    def __call__(self, rule_id: str, severity: str, message: str, target=FILE_WIDE, arch=None, offset=None):
        sev = self.policy.grade(rule_id, severity)
        if sev is not None:
            self.out.append(Finding(rule_id, sev, message, self.path, target, arch, self.dist, offset))


_of = engine.of_fatbins


def check_requirement(emit: _Emitter, fatbins: list[Fatbin], req: Requirement) -> None:
    """FBI001/2/3/5/9 for one requirement, fatbin by fatbin (R-SEL and the rules it calls)."""
    arch = req.arch or f"sm_{req.target.gpu.sm}"
    states: dict[str, list] = {}
    for fb in fatbins:
        fbv = engine.evaluate_fatbin(fb, req.target)
        if fbv.verdict != "no-device-code":
            states.setdefault(coverage(fbv, fb, req), []).append(fbv)
    total = sum(len(x) for x in states.values())
    label = req.label

    def n(state: str) -> str:
        return _of(len(states[state]), total)

    if states.get(NONE):
        if req.none_rule == "FBI009":
            emit("FBI009", "warning", f"{label}: no code in {n(NONE)}, torch has {arch}", label, arch)
        else:
            emit("FBI001", "error", f"{label}: no loadable SASS or PTX in {n(NONE)}", label, arch)
    if states.get(PTX_TOO_NEW):
        drv = req.target.driver
        isas = sorted(
            {e.ptx_isa for fb in fatbins for e in fb.entries if e.kind == KIND_PTX},
            key=lambda v: tuple(map(int, v.split("."))),
        )
        emit(
            "FBI003",
            "error",
            f"{label}: only PTX newer than the driver's JIT in {n(PTX_TOO_NEW)} "
            f"(PTX ISA {isas[-1]}; R{drv.branch} compiles up to {drv.max_ptx_isa})",
            label,
            arch,
        )
    if states.get(JIT):
        sev = "note" if emit.policy.ptx_counts else "error"
        emit("FBI002", sev, f"{label}: only PTX (JIT) in {n(JIT)}", label, arch)
    if states.get(ARCH_SPECIFIC):
        cc = req.target.cc
        emit(
            "FBI005",
            "warning",
            f"{label}: only {arch}a code (runs on CC {cc[0]}.{cc[1]} only) in {n(ARCH_SPECIFIC)}",
            label,
            arch,
        )


def check_runtime(emit: _Emitter, report: FileReport, target: Target) -> None:
    """FBI004: the CUDA runtime the file links needs a newer driver than the minimum (R-DRV)."""
    o = rules.driver_for_runtime(from_needs(report.needs), target)
    if not o.ok:
        err = engine.error_ref(o.error)
        emit("FBI004", "error", f"{err.name} ({err.code}): {o.reason}", FILE_WIDE)


def check_file_wide(emit: _Emitter, fatbins: list[Fatbin], policy: Policy) -> None:
    if policy.require_ptx and policy.require:
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


def _required(required, sm: int, variant: str) -> bool:
    # an sm_XYf cubin is emitted as a plain sm_XY one, so a required sm_XYf admits sm_XY
    return any(
        rsm == sm and (rv == variant or (rv == "f" and not variant))
        for _, rsm, rv in map(split_arch, required)
    )


# --------------------------------------------------------------------------------- the gate
def gate(
    reports: Iterable[FileReport],
    policy: Policy,
    flags=None,
    reference: FileReport | None = None,
    fleet: Sequence[Target] = (),
    local: LocalDevices = NOT_PROBED,
) -> FindingsReport:
    """Findings for every artifact. ``flags`` are reapplied after per-distribution overrides;
    ``reference`` is torch's libtorch_cuda.so for ``--match torch`` (its archs become FBI009
    requirements, and torch's own files are not checked); ``fleet``: resolved ``--targets``, each
    judged on its own driver like a named GPU; ``local``: the probed GPUs and driver for ``auto``
    (``system.stack.local_devices``)."""
    ref_archs = reference_archs(reference) if reference is not None else ()
    fleet_reqs = tuple(Requirement(t.label, t, None) for t in fleet)
    labels: list[str] = [
        r.label
        for r in requirements(policy.require, policy.gpus, policy.min_driver, ref_archs, local) + fleet_reqs
    ]
    findings: list[Finding] = []
    checks: list[Check] = []
    inputs: list[str] = []
    for report in reports:
        if "!" not in report.path:
            inputs.append(report.path)
        pol = policy.for_artifact(report.path, distribution_of(report), flags)
        if pol.ignored(report.path) or (reference is not None and _is_torch(report, reference)):
            continue
        fatbins = counted_fatbins(report)
        if not fatbins and report.error is None:
            continue
        emit = _Emitter(report, pol)
        checks.append(Check(report.path, FILE_WIDE, emit.dist))
        if report.error is not None:
            emit("FBI008", "error", report.error.message, FILE_WIDE, None, report.error.offset)
        if fatbins:
            check_file_wide(emit, fatbins, pol)
            reqs = requirements(pol.require, pol.gpus, pol.min_driver, ref_archs, local) + fleet_reqs
            if reqs and pol.min_driver:
                check_runtime(
                    emit,
                    report,
                    dataclasses.replace(reqs[0].target, driver=resolve_driver(pol.min_driver, local.driver)),
                )
            for req in reqs:
                checks.append(Check(report.path, req.label, emit.dist))
                labels.append(req.label)
                check_requirement(emit, fatbins, req)
        findings += emit.out
    return FindingsReport(
        "gate",
        tuple(sorted(findings, key=sort_key)),
        tuple(checks),
        tuple(dict.fromkeys(labels)),
        tuple(inputs),
    )


# ------------------------------------------------------------------------------- check
def verdict_finding(v: engine.FileVerdict) -> Finding | None:
    """``check``'s verdict for one file and target as a finding; None when it loads natively.
    JIT-only is a warning (it fails under ``--fail-on warning``), every failure an error."""
    s = state(v)
    if s == OK:
        return None
    label = v.target.label
    why = (
        f"{v.error.name} ({v.error.code}): {v.reason}"
        if v.error is not None
        else f"only PTX (JIT): {v.reason}"
    )
    return Finding(
        STATE_RULE[s],
        "warning" if s == JIT else "error",
        f"{label}: {why}",
        v.path,
        label,
        f"sm_{v.target.gpu.sm}",
    )


def check_findings(
    inputs: Sequence[str],
    targets: Sequence[Target],
    verdicts: Sequence[engine.FileVerdict],
    unreadable: Sequence[FileReport],
) -> FindingsReport:
    """``check`` as findings: one check per file with device code and target, FBI008 per unreadable input."""
    findings = [f for f in map(verdict_finding, verdicts) if f is not None]
    findings += [
        Finding("FBI008", "error", r.error.message, r.path, offset=r.error.offset) for r in unreadable
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
