"""The gate's requirements: each required arch or named GPU as a target, and the states a
fatbin can be in on one with the rule each failing state raises. Pure."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache

from fatbin_inspect.compat import data, fatbin_decision, rules, verdict
from fatbin_inspect.compat.targets import NOT_PROBED, LocalDevices, Target, resolve_driver, resolve_targets
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, Fatbin, FileReport

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
