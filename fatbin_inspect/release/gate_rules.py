"""The gate's rules: the findings one file gets for one requirement (FBI001-FBI007), file-wide
(forward PTX, surplus and forbidden archs) and for its runtime (FBI004, FBI017, FBI018). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fatbin_inspect.compat import describe, jit, rules, verdict
from fatbin_inspect.compat.runtime import RuntimeNeed
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, Fatbin, FileReport
from fatbin_inspect.release.findings import Finding
from fatbin_inspect.release.policy import Policy, distribution_of, split_arch
from fatbin_inspect.release.requirements import FILE_WIDE, PTX_TOO_NEW, Requirement, state


class Emitter:
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
    emit: Emitter,
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
        emit("FBI020", "error", f"{label}: {describe.host_why(v)}", label, arch)
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


def _set_aside_note(emit: Emitter, v: verdict.FileVerdict, label: str, arch: str) -> None:
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


def _jit_findings(emit: Emitter, v: verdict.FileVerdict, label: str, arch: str, total: int) -> None:
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
    emit: Emitter, v: verdict.FileVerdict, req: Requirement, arch: str, total: int, fatbins: Sequence[Fatbin]
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


def _ptx_too_new(emit: Emitter, req: Requirement, arch: str, what: str, fatbins: Sequence[Fatbin]) -> None:
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
    emit: Emitter, v: verdict.FileVerdict, req: Requirement, arch: str, total: int
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


def _only_arch_specific(v: verdict.FileVerdict) -> list[verdict.FatbinVerdict]:
    """The fatbins that load natively only by arch-specific code, when none loads general code
    (beside general code for the target they are specialised kernels, cuBLASLt's sm_90a ones)."""
    if any(f.general_native for f in v.fatbins if f.ignored is None):
        return []
    return [f for f in v.fatbins if f.ignored is None and f.verdict == "native" and not f.general_native]


def _exact(emit: Emitter, v: verdict.FileVerdict, req: Requirement, total: int) -> None:
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


def check_runtime(emit: Emitter, rt: RuntimeNeed | None, target: Target) -> None:
    """FBI004: the CUDA runtime the file needs (R-RT, as ``check`` finds it) needs a newer driver
    than the minimum (R-DRV)."""
    o = rules.driver_for_runtime(rt, target)
    if not o.ok:
        err = verdict.error_ref(o.error)
        emit("FBI004", "error", f"{err.name} ({err.code}): {o.reason}" if err else o.reason, FILE_WIDE)


def check_file_wide(emit: Emitter, fatbins: list[Fatbin], policy: Policy) -> None:
    """FBI006 (forward PTX) and FBI007 (forbidden or surplus archs) of one file."""
    if policy.require_ptx and policy.require:
        _forward_ptx(emit, fatbins, policy)
    _arch_policy(emit, fatbins, policy)


def _forward_ptx(emit: Emitter, fatbins: list[Fatbin], policy: Policy) -> None:
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


def _arch_policy(emit: Emitter, fatbins: list[Fatbin], policy: Policy) -> None:
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


def check_torch_runtime(emit: Emitter, rt: RuntimeNeed | None, torch: RuntimeNeed | None) -> None:
    """FBI017: an extension whose CUDA runtime major differs from torch's."""
    if rt is None or torch is None or rt.major == torch.major:
        return
    emit(
        "FBI017",
        "error",
        f"needs CUDA {rt.major} ({rt.source}) but torch uses CUDA {torch.major} ({torch.source})",
        FILE_WIDE,
    )


def check_driver_numbering(emit: Emitter, report: FileReport, req: Requirement) -> None:
    """FBI018: a Jetson target given a desktop driver number; a Windows binary on a Linux number."""
    for note in describe.platform_notes(report, req.target):
        emit("FBI018", "warning", f"{req.label}: {note}", req.label)
