"""The rules of COMPATIBILITY.md, each implemented once and named by its id.

Every rule returns an ``Outcome``: whether the condition holds, the rule id, one sentence a user
understands, and the CUDA error number the failure surfaces as. ``select`` (R-SEL) combines the
per-entry rules into the image a driver would load for one fatbin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fatbin_inspect.compat import data
from fatbin_inspect.compat.data import CC
from fatbin_inspect.compat.runtime import RuntimeNeed
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, Entry

NO_IMAGE, UNSUPPORTED_PTX, JIT_DISABLED, INSUFFICIENT_DRIVER, NO_DEVICE = 209, 222, 223, 35, 100


@dataclass(frozen=True)
class Outcome:
    ok: bool
    rule: str
    reason: str
    error: int | None = None  # the CUDA error a failure surfaces as
    confidence: str = "high"
    also: tuple[str, ...] = ()  # other rules that independently give the same answer


def cc_of(entry: Entry) -> CC:
    return entry.sm // 10, entry.sm % 10


def fmt_cc(cc: CC) -> str:
    return f"{cc[0]}.{cc[1]}"


def arch_specific(entry: Entry) -> bool:
    """``a`` from the fatbin header, or from the cubin itself (CUDA 13 keeps it in ``.nv.compat``)
    — but only from sm_90 on: ``a`` targets start there, and some CUDA 12.4 sm_50/60/61 cubins
    carry a stray EF_CUDA_ACCELERATORS bit under a plain sm_XY header (they load as plain code)."""
    return entry.variant == "a" or (entry.cubin is not None and entry.cubin.arch_specific and entry.sm >= 90)


def _family_ok(entry: Entry, cc: CC) -> bool:
    members = data.family_members(entry.sm)
    if members is None:  # no data row: same family = same major, minor at least the entry's
        e = cc_of(entry)
        return e[0] == cc[0] and e[1] <= cc[1]
    return cc in members


# ------------------------------------------------------------------------------------- SASS
def sass(entry: Entry, t: Target) -> Outcome:
    """R-SASS-A, R-SASS-THOR, R-SASS-F, R-SASS-1, R-SASS-TEGRA for one cubin."""
    e, g, arch, dev = cc_of(entry), t.cc, entry.arch, f"CC {fmt_cc(t.cc)}"
    if arch_specific(entry):
        return r_sass_a(entry, t)
    if entry.sm == 101 and g == (11, 0):
        return r_sass_thor(entry, t)
    if entry.variant == "f":
        ok = _family_ok(entry, g)
        baseline = e[0] == g[0] and e[1] <= g[1]  # an sm_XYf cubin is stored as a plain sm_XY one
        return Outcome(
            ok,
            "R-SASS-F",
            f"{arch} (family-specific) cubin {'runs' if ok else 'does not run'} on {dev}: "
            f"it serves its family's GPUs of minor {e[1]} or higher",
            None if ok else NO_IMAGE,
            also=("R-SASS-1",) if baseline == ok else (),
        )
    if e == g:
        return Outcome(True, "R-SASS-1", f"{arch} cubin was built for exactly {dev}")
    if e[0] != g[0] or e[1] > g[1]:
        why = "another major" if e[0] != g[0] else f"a higher minor than {dev}"
        tegra = t.gpu.tegra or e in data.tegra_ccs()
        return Outcome(
            False,
            "R-SASS-1",
            f"{arch} cubin cannot run on {dev}: cubins run only within one major, "
            f"on the same or a higher minor, and {fmt_cc(e)} is {why}",
            NO_IMAGE,
            also=("R-SASS-TEGRA",) if tegra and e[0] == g[0] else (),
        )
    if t.gpu.tegra or e in data.tegra_ccs():
        return r_sass_tegra(entry, t)
    return Outcome(True, "R-SASS-1", f"{arch} cubin runs on {dev}: same major, lower minor")


def r_sass_a(entry: Entry, t: Target) -> Outcome:
    ok = cc_of(entry) == t.cc
    return Outcome(
        ok,
        "R-SASS-A",
        f"{entry.arch} is architecture-specific code: it runs only on CC "
        f"{fmt_cc(cc_of(entry))}{'' if ok else f', not on CC {fmt_cc(t.cc)}'}",
        None if ok else NO_IMAGE,
    )


def r_sass_thor(entry: Entry, t: Target) -> Outcome:
    return Outcome(
        True,
        "R-SASS-THOR",
        "sm_101 is the CUDA 12.8/12.9 name of Thor's sm_110; a CUDA 13 driver "
        "reports Thor as CC 11.0 and is expected to load it (unverified on hardware)",
        confidence="low",
    )


def r_sass_tegra(entry: Entry, t: Target) -> Outcome:
    return Outcome(
        False,
        "R-SASS-TEGRA",
        f"{entry.arch} cubin cannot run on CC {fmt_cc(t.cc)}: Tegra/Jetson GPUs "
        "take only cubins built for exactly their own SM (no minor-version compatibility with "
        "desktop GPUs)",
        NO_IMAGE,
        confidence="medium",
    )


# -------------------------------------------------------------------------------------- PTX
def ptx_target(entry: Entry, t: Target) -> Outcome:
    """R-PTX-TARGET-A / -F / -1: may the driver JIT this PTX for the GPU at all?"""
    e, g, arch, dev = cc_of(entry), t.cc, entry.arch, f"CC {fmt_cc(t.cc)}"
    if entry.variant == "a":
        ok = e == g
        return Outcome(
            ok,
            "R-PTX-TARGET-A",
            f"{arch} PTX is architecture-specific: it compiles only for CC "
            f"{fmt_cc(e)}{'' if ok else f', not {dev}'}",
            None if ok else NO_IMAGE,
        )
    if entry.variant == "f":
        ok = _family_ok(entry, g)
        return Outcome(
            ok,
            "R-PTX-TARGET-F",
            f"{arch} PTX is family-specific: it {'compiles' if ok else 'does not compile'} for {dev}",
            None if ok else NO_IMAGE,
        )
    ok = e <= g
    return Outcome(
        ok,
        "R-PTX-TARGET-1",
        f"{arch} PTX {'can be JIT-compiled' if ok else 'cannot be compiled'} for {dev}"
        f"{'' if ok else f': PTX only compiles for its own CC {fmt_cc(e)} or higher'}",
        None if ok else NO_IMAGE,
    )


def ptx_isa(entry: Entry, t: Target) -> Outcome:
    """R-PTX-ISA: the driver's JIT must know the PTX ``.version``."""
    have, limit = entry.code_version, tuple(int(x) for x in t.driver.max_ptx_isa.split("."))
    ok = tuple(have) <= limit
    drv = f"driver R{t.driver.branch} (CUDA {t.driver.cuda})"
    return Outcome(
        ok,
        "R-PTX-ISA",
        f"PTX ISA {entry.ptx_isa} {'is within' if ok else 'is newer than'} what the JIT of "
        f"{drv} compiles (up to {t.driver.max_ptx_isa})",
        None if ok else UNSUPPORTED_PTX,
    )


def jit_env(t: Target) -> Outcome | None:
    """R-JIT-ENV: CUDA_FORCE_PTX_JIT ignores cubins; CUDA_DISABLE_PTX_JIT forbids JIT (223)."""
    if t.disable_ptx_jit:
        return Outcome(
            False,
            "R-JIT-ENV",
            "CUDA_DISABLE_PTX_JIT=1 forbids compiling PTX and no cubin fits",
            JIT_DISABLED,
            confidence="medium",
        )
    if t.force_ptx_jit:
        return Outcome(
            False,
            "R-JIT-ENV",
            "CUDA_FORCE_PTX_JIT=1 makes the driver ignore cubins and there is no usable PTX",
            NO_IMAGE,
        )
    return None


# ------------------------------------------------------------------------ runtime and driver
def driver_for_runtime(rt: RuntimeNeed | None, t: Target) -> Outcome:
    """R-DRV: the runtime's family needs a driver of that family at or above its floor."""
    if rt is None:
        return Outcome(True, "R-DRV", "no CUDA runtime is linked; only the driver API is used")
    drv_cuda = tuple(int(x) for x in t.driver.cuda.split("."))
    have = t.driver.version_tuple
    if rt.major < 11:
        need = data.toolkit_min_driver((rt.major, rt.minor or 0))
        ok = (rt.major, rt.minor or 0) <= drv_cuda and (need is None or _at_least(have, need))
        floor = ".".join(map(str, need)) if need else "?"
    else:
        need = data.mvc_floor(rt.major)
        ok = rt.major <= drv_cuda[0] and (need is None or _at_least(have, need))
        floor = ".".join(map(str, need)) if need else "?"
    return Outcome(
        ok,
        "R-DRV",
        f"CUDA runtime {rt.version} ({rt.source}) needs a driver >= {floor}; "
        f"R{t.driver.branch} is CUDA {t.driver.cuda}{'' if ok else ', too old'}",
        None if ok else INSUFFICIENT_DRIVER,
        confidence=rt.confidence,
    )


def _at_least(have: tuple[int, ...], need: tuple[int, ...]) -> bool:
    """A bare branch ("525") is taken as its newest build, so only the branch is compared."""
    if len(have) == 1:
        return have[0] >= need[0]
    return have >= need


def mvc(rt: RuntimeNeed | None, t: Target) -> Outcome | None:
    """R-MVC: a runtime newer than the driver within one major runs with a reduced feature set."""
    if rt is None or rt.major < 11 or rt.minor is None:
        return None
    drv = tuple(int(x) for x in t.driver.cuda.split("."))
    if (rt.major, rt.minor) <= drv or rt.major != drv[0]:
        return None
    return Outcome(
        True,
        "R-MVC",
        f"runtime {rt.version} on a CUDA {t.driver.cuda} driver runs under minor-version "
        "compatibility: APIs newer than the driver return 36 (cudaErrorCallRequiresNewerDriver) and "
        f"PTX newer than ISA {t.driver.max_ptx_isa} fails with 222",
    )


def gpu_supported(t: Target) -> Outcome:
    """R-GPU: the driver branch must enumerate the GPU (first branch for its CC, last for its architecture)."""
    first = data.first_branch_for_cc(t.cc)
    last = data.last_branch_for_architecture(t.gpu.architecture) if t.gpu.architecture else None
    b, name = t.driver.branch, t.gpu.name
    if first is not None and b < first:
        return Outcome(
            False,
            "R-GPU",
            f"driver R{b} predates {name}: CC {fmt_cc(t.cc)} needs R{first} or newer",
            NO_DEVICE,
            confidence="medium",
        )
    if last is not None and b > last:
        return Outcome(
            False,
            "R-GPU",
            f"driver R{b} no longer supports {name} ({t.gpu.architecture}): its last branch is R{last}",
            NO_DEVICE,
            confidence="medium",
        )
    return Outcome(True, "R-GPU", f"driver R{b} supports {name}")


def toolkit_targets(t: Target) -> str:
    """R-TOOLKIT-TARGETS: which toolkits can build a cubin for this GPU (advice for a failure)."""
    arch = f"sm_{t.gpu.sm}"
    vs = data.toolkits_targeting(arch)
    if not vs:
        return f"no known CUDA toolkit builds {arch} cubins; only PTX JIT can reach CC {fmt_cc(t.cc)}"
    return (
        f"{arch} cubins can be built by CUDA {vs[0]} to {vs[-1]} (e.g. nvcc -gencode arch=compute_{t.gpu.sm},"
        f"code=sm_{t.gpu.sm}); newer PTX needs a driver whose JIT knows its ISA"
    )


# ------------------------------------------------------------------------------------ R-SEL
@dataclass(frozen=True)
class Selection:
    verdict: str  # native | jit | fail | no-device-code
    entry: Entry | None  # the image the driver would load
    outcome: Outcome  # the deciding rule
    rules: tuple[str, ...]  # every rule that took part, deciding rule first


def select(entries: Sequence[Entry], t: Target) -> Selection:
    """R-SEL: a compatible cubin (exact CC first, else the closest lower minor) beats any PTX; else
    the usable PTX of the highest CC is JIT-compiled, and only that one is checked against R-PTX-ISA."""
    cubins = [e for e in entries if e.kind == KIND_SASS]
    ptxs = [e for e in entries if e.kind == KIND_PTX]
    if not cubins and not ptxs:
        return Selection(
            "no-device-code", None, Outcome(True, "R-SEL", "no cubin or PTX in this fatbin"), ("R-SEL",)
        )
    judged = [(e, sass(e, t)) for e in cubins]
    usable = [(e, o) for e, o in judged if o.ok]
    if usable and not t.force_ptx_jit:
        e, o = max(usable, key=lambda eo: (cc_of(eo[0]) == t.cc, cc_of(eo[0]), eo[0].variant == ""))
        rules = (o.rule,) + o.also + (("R-SEL",) if len(usable) > 1 or ptxs else ())
        reason = f"loads the {e.arch} cubin natively: {o.reason}"
        return Selection("native", e, Outcome(True, o.rule, reason, confidence=o.confidence), rules)
    cubin_rules = tuple(dict.fromkeys(r for _, o in judged for r in (o.rule,) + o.also))
    env = jit_env(t)
    if t.disable_ptx_jit and ptxs:
        return Selection("fail", None, env, ("R-JIT-ENV",) + cubin_rules)
    tjudged = [(e, ptx_target(e, t)) for e in ptxs]
    tusable = [(e, o) for e, o in tjudged if o.ok]
    ptx_rules = tuple(dict.fromkeys(o.rule for _, o in tjudged))
    if not tusable:
        if t.force_ptx_jit and usable:
            return Selection("fail", None, env, ("R-JIT-ENV",) + ptx_rules)
        why = _closest_failure(judged, t) or (tjudged[0][1] if tjudged else None)
        parts = [
            o.reason for o in (why, tjudged[0][1] if tjudged and why is not tjudged[0][1] else None) if o
        ]
        if not ptxs:
            parts.append("and there is no PTX to JIT-compile")
        rule = why.rule if why else "R-SEL"
        return Selection(
            "fail",
            None,
            Outcome(False, rule, "; ".join(parts), NO_IMAGE, why.confidence if why else "high"),
            tuple(dict.fromkeys((rule,) + cubin_rules + ptx_rules)),
        )
    e, o = max(tusable, key=lambda eo: (cc_of(eo[0]), eo[0].variant != ""))
    isa = ptx_isa(e, t)
    rules = tuple(
        dict.fromkeys(
            (isa.rule if not isa.ok else o.rule, o.rule, "R-PTX-ISA")
            + (("R-SEL",) if len(tusable) > 1 or cubins else ())
            + cubin_rules
        )
    )
    if not isa.ok:
        return Selection(
            "fail",
            e,
            Outcome(
                False,
                "R-PTX-ISA",
                f"would JIT-compile the {e.arch} PTX, but its {isa.reason}",
                UNSUPPORTED_PTX,
            ),
            rules,
        )
    lead = "no cubin fits, so " if cubins else ""
    return Selection(
        "jit",
        e,
        Outcome(True, o.rule, f"{lead}the driver JIT-compiles the {e.arch} PTX: {o.reason}; {isa.reason}"),
        rules,
    )


def _closest_failure(judged, t: Target) -> Outcome | None:
    """The most telling cubin failure: same major first, then the CC nearest below the GPU."""
    if not judged:
        return None

    def key(eo):
        e = cc_of(eo[0])
        return e[0] == t.cc[0], e <= t.cc, -abs(eo[0].sm - t.gpu.sm)

    _e, o = max(judged, key=key)
    return o
