"""The rules of docs/compatibility.md, each implemented once and named by its id.

Every rule returns an ``Outcome``: whether the condition holds, the rule id, one sentence a user
understands, and the CUDA error number the failure surfaces as. ``select`` (R-SEL) combines the
per-entry rules into the image a driver would load for one fatbin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fatbin_inspect.compat import data
from fatbin_inspect.compat.data import CC
from fatbin_inspect.compat.runtime import RuntimeNeed
from fatbin_inspect.compat.targets import Compat, Driver, Target, fwd_warning
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, KIND_TILE, Entry

NO_IMAGE, UNSUPPORTED_PTX, JIT_DISABLED, INSUFFICIENT_DRIVER, NO_DEVICE = 209, 222, 223, 35, 100
DRIVER_MISMATCH, COMPAT_NOT_ON_DEVICE = 803, 804


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
        return r_sass_f(entry, t)
    if e == g:
        return Outcome(True, "R-SASS-1", f"{arch} cubin was built for exactly {dev}")
    if e[0] != g[0] or e[1] > g[1]:
        return _sass_out_of_reach(entry, t)
    if t.gpu.tegra or e in data.tegra_ccs():
        return r_sass_tegra(entry, t)
    return Outcome(True, "R-SASS-1", f"{arch} cubin runs on {dev}: same major, lower minor")


def r_sass_f(entry: Entry, t: Target) -> Outcome:
    e, g = cc_of(entry), t.cc
    ok = _family_ok(entry, g)
    baseline = e[0] == g[0] and e[1] <= g[1]  # an sm_XYf cubin is stored as a plain sm_XY one
    return Outcome(
        ok,
        "R-SASS-F",
        f"{entry.arch} (family-specific) cubin {'runs' if ok else 'does not run'} on CC {fmt_cc(g)}: "
        f"it serves its family's GPUs of minor {e[1]} or higher",
        None if ok else NO_IMAGE,
        also=("R-SASS-1",) if baseline == ok else (),
    )


def _sass_out_of_reach(entry: Entry, t: Target) -> Outcome:
    """R-SASS-1: a cubin of another major, or of a higher minor than the GPU's."""
    e, g, dev = cc_of(entry), t.cc, f"CC {fmt_cc(t.cc)}"
    why = "another major" if e[0] != g[0] else f"a higher minor than {dev}"
    tegra = t.gpu.tegra or e in data.tegra_ccs()
    return Outcome(
        False,
        "R-SASS-1",
        f"{entry.arch} cubin cannot run on {dev}: cubins run only within one major, "
        f"on the same or a higher minor, and {fmt_cc(e)} is {why}",
        NO_IMAGE,
        also=("R-SASS-TEGRA",) if tegra and e[0] == g[0] else (),
    )


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
    d = t.umd
    have, limit = entry.code_version, tuple(int(x) for x in d.max_ptx_isa.split("."))
    ok = tuple(have) <= limit
    drv = f"{t.compat.package} (R{d.branch})" if t.compat else f"driver R{d.branch} (CUDA {d.cuda})"
    return Outcome(
        ok,
        "R-PTX-ISA",
        f"PTX ISA {entry.ptx_isa} {'is within' if ok else 'is newer than'} what the JIT of "
        f"{drv} compiles (up to {d.max_ptx_isa})",
        None if ok else UNSUPPORTED_PTX,
    )


def tile_ir(entry: Entry, t: Target) -> Outcome:
    """R-TILE: the driver compiles cuda_tile IR for the GPU at load time, as it does PTX. NVIDIA
    states two requirements: a driver of branch R580 or newer, and a GPU Tile IR supports (CC 8.x,
    10.x, 11.x, 12.x); like compute_XY PTX, IR made for arch XY is taken to need CC X.Y or higher.
    Medium confidence: the requirements are NVIDIA's, the loading behaviour is inferred."""
    spec, d, arch = data.tile_ir(), t.umd, entry.arch
    need = int(spec["min_driver_branch"])
    ver = f"Tile IR {entry.tile_ir_version}" if entry.tile_ir_version else "Tile IR"
    if d.branch < need:
        return Outcome(
            False,
            "R-TILE",
            f"{arch} ({ver}) needs a driver R{need} or newer to be compiled; R{d.branch} does not know it",
            NO_IMAGE,
            confidence="medium",
        )
    if fmt_cc(t.cc) not in spec["ccs"]:
        return Outcome(
            False,
            "R-TILE",
            f"{arch} ({ver}) cannot run on CC {fmt_cc(t.cc)}: NVIDIA names CC 8.x, 10.x, 11.x and 12.x "
            "for Tile IR",
            NO_IMAGE,
            confidence="medium",
        )
    if cc_of(entry) > t.cc:
        return Outcome(
            False,
            "R-TILE",
            f"{arch} ({ver}) was made for CC {fmt_cc(cc_of(entry))}, above CC {fmt_cc(t.cc)}",
            NO_IMAGE,
            confidence="medium",
        )
    return Outcome(
        True,
        "R-TILE",
        f"the driver compiles the {arch} {ver} for CC {fmt_cc(t.cc)} at load time (R{d.branch} >= R{need})",
        confidence="medium",
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
    d = t.umd
    platform, have, need, floor = _driver_floor(rt, d)
    ok = _family_fits(rt, d) and (need is None or _at_least(have, need, d.branch))
    where = " (Windows numbering)" if platform == "windows" else ""
    via = f" through {t.compat.package}" if t.compat else ""
    return Outcome(
        ok,
        "R-DRV",
        f"CUDA runtime {rt.version} ({rt.source}) needs a driver >= {floor}{where}; "
        f"R{d.branch}{via} is CUDA {d.cuda}{'' if ok else ', too old'}",
        None if ok else INSUFFICIENT_DRIVER,
        confidence=rt.confidence,
    )


def _family_fits(rt: RuntimeNeed, d: Driver) -> bool:
    """The driver's CUDA covers the runtime: its version before CUDA 11, its major after (MVC)."""
    drv_cuda = tuple(int(x) for x in d.cuda.split("."))
    return (rt.major, rt.minor or 0) <= drv_cuda if rt.major < 11 else rt.major <= drv_cuda[0]


def _driver_floor(rt: RuntimeNeed, d: Driver) -> tuple[str, tuple[int, ...], tuple[int, ...] | None, str]:
    """(platform, the driver's number, the runtime's floor in that numbering, the floor as written).

    Windows drivers have their own numbers and floors; a Windows binary given only a branch is
    judged against the Windows floors too (the branch is all that is compared then)."""
    platform = d.platform or ("windows" if rt.windows else "linux")
    have = _driver_number(d, platform)
    need = _runtime_floor(rt, platform)
    floor = ".".join(map(str, need)) if need else "?"
    if need and platform == "windows" and len(have) == 1:
        need = (data.windows_branch(need[0]) or need[0],)
    return platform, have, need, floor


def _driver_number(d: Driver, platform: str) -> tuple[int, ...]:
    """The driver's number as compared with floors: a Jetson's and a bare Windows branch's is the branch."""
    have = d.version_tuple if d.platform in ("linux", "windows", None) else (d.branch,)
    if platform == "windows" and len(have) == 1:
        have = (d.branch,)  # a bare branch against Windows floors: compare branches (527.41 is R525)
    return have


def _runtime_floor(rt: RuntimeNeed, platform: str) -> tuple[int, ...] | None:
    """The oldest driver a runtime runs on: its toolkit's before CUDA 11, its family's MVC floor after."""
    if rt.major < 11:
        return data.toolkit_min_driver((rt.major, rt.minor or 0), platform)
    return data.mvc_floor(rt.major, platform)


def _at_least(have: tuple[int, ...], need: tuple[int, ...], branch: int | None = None) -> bool:
    """A bare branch ("525") is taken as its newest build, so only the branch is compared; so is a
    floor given as a branch ("580"), against the driver's branch (Windows 581.29 is R580)."""
    if len(need) == 1:
        return (branch if branch is not None else have[0]) >= need[0]
    if len(have) == 1:
        return have[0] >= need[0]
    return have >= need


def mvc(rt: RuntimeNeed | None, t: Target) -> Outcome | None:
    """R-MVC: a runtime newer than the driver within one major runs with a reduced feature set."""
    if rt is None or rt.major < 11 or rt.minor is None:
        return None
    d = t.umd
    drv = tuple(int(x) for x in d.cuda.split("."))
    if (rt.major, rt.minor) <= drv or rt.major != drv[0]:
        return None
    return Outcome(
        True,
        "R-MVC",
        f"runtime {rt.version} on a CUDA {d.cuda} driver runs under minor-version "
        "compatibility: APIs newer than the driver return 36 (cudaErrorCallRequiresNewerDriver) and "
        f"PTX newer than ISA {d.max_ptx_isa} fails with 222",
    )


def forward_compat(t: Target) -> Outcome:
    """R-FWD: a cuda-compat package replaces the user-mode driver. It needs a GPU that accepts it
    (data center, select NGC Server Ready RTX SKUs, Jetson; else 804) and a kernel-driver branch
    NVIDIA's table marks compatible with the package (else 803); on Jetson the JetPack line's
    table decides. A package the table has no row for is judged by NVIDIA's prose (low)."""
    c = t.compat
    if c is None:
        return Outcome(True, "R-FWD", "no forward-compatibility package in use")
    fc, g, pkg = data.forward_compat(), t.gpu, c.package
    if g.tegra or t.driver.platform == "jetson":
        return _fwd_jetson(t)
    if (
        g.segment is not None
        and g.segment not in fc["supported_segments"]
        and g.name not in fc["supported_products"]
    ):
        return Outcome(
            False,
            "R-FWD",
            f"forward compatibility ({pkg}) is not supported on {g.name} ({g.segment}): only data "
            "center GPUs, select NGC Server Ready RTX SKUs and Jetson boards accept it",
            COMPAT_NOT_ON_DEVICE,
            confidence="medium",
        )
    return _fwd_by_table(t, c, fc)


def _fwd_by_table(t: Target, c: Compat, fc: dict) -> Outcome:
    """A GPU that accepts the package: NVIDIA's table cell for the package and the kernel driver."""
    base, umd, pkg = t.driver, c.driver, c.package
    if umd.branch == base.branch:
        return Outcome(True, "R-FWD", f"{pkg} matches the installed branch R{base.branch}: nothing changes")
    cell = data.fwd_cell(c.cuda, base.branch)
    if cell is None:
        return _fwd_by_prose(t, fc)
    if cell == "N/A":
        return Outcome(True, "R-FWD", f"{pkg} is R{base.branch}'s own CUDA: nothing changes")
    if cell != "C":
        return Outcome(False, "R-FWD", _fwd_refusal(cell, pkg, umd.branch, base.branch), DRIVER_MISMATCH)
    warning = fwd_warning(c, base)
    return _fwd_ok(t, f"on kernel driver R{base.branch} (C in NVIDIA's table)", warning)


def _fwd_refusal(cell: str, pkg: str, umd: int, base: int) -> str:
    """Why a package the table does not mark C with the kernel driver is refused (803)."""
    if umd < base:
        return f"{pkg} (R{umd}) is older than the installed driver R{base}: compat packages are not supported on newer drivers"
    if cell == "unlisted":
        return (
            f"NVIDIA's forward-compatibility table has no column for R{base} (branches it does not "
            f"list are end of life and not supported targets), so {pkg} is not supported on it"
        )
    return f"NVIDIA's forward-compatibility table marks {pkg} not compatible (X) with kernel driver R{base}"


def _fwd_by_prose(t: Target, fc: dict) -> Outcome:
    """A package NVIDIA's table has no row for (newer than the table read): its prose alone."""
    c, base = t.compat, t.driver
    assert c is not None
    if c.driver.branch < base.branch:
        return Outcome(
            False,
            "R-FWD",
            f"{c.package} (R{c.driver.branch}) is older than the installed driver R{base.branch}: compat packages "
            "are not supported on newer drivers",
            DRIVER_MISMATCH,
            confidence="medium",
        )
    why = _unsupported_base(data.branch_row(base.branch) or {}, base.branch, fc["base_types"])
    unknown = f"{c.package} is not in NVIDIA's forward-compatibility table as read ({fc['matrix']['as_of']})"
    if why:
        return Outcome(
            False,
            "R-FWD",
            f"{c.package} on kernel driver R{base.branch}: {why}, and NVIDIA's prose supports only long-term and "
            f"production branches that have not reached end of life ({unknown})",
            DRIVER_MISMATCH,
            confidence="low",
        )
    return _fwd_ok(t, f"on kernel driver R{base.branch}", f"{unknown}: judged by its prose", "low")


def _unsupported_base(row: dict[str, Any], branch: int, base_types: Sequence[str]) -> str | None:
    """Why a kernel-driver branch is not a forward-compatibility base by NVIDIA's prose (None: it is one)."""
    if data.branch_ended(row):
        eol = row.get("end_of_life")
        return f"R{branch} reached end of life" + (f" ({eol})" if eol and eol != "ended" else "")
    kind = row.get("type")
    if kind in base_types:
        return None
    return f"R{branch} is a {kind} branch" if kind else f"R{branch} is not in NVIDIA's support matrix"


def _fwd_jetson(t: Target) -> Outcome:
    """R-FWD on Jetson: NVIDIA's CUDA for Tegra table lists, per JetPack line, the CUDA of the BSP
    driver and the upgrade packages that install on it; any other package is 803."""
    c, base = t.compat, t.driver
    assert c is not None
    if base.platform != "jetson" or not base.jetpack:
        return _fwd_ok(
            t,
            f"on driver {base.version}",
            f"driver {base.version} names no JetPack release, so whether {c.package} fits it was not checked",
            "low",
        )
    line = data.jetson_line(base.jetpack)
    if line is None:
        return Outcome(
            False,
            "R-FWD",
            f"JetPack {base.jetpack} is not in NVIDIA's CUDA upgrade-package table, so {c.package} is not known to "
            "be supported on it",
            DRIVER_MISMATCH,
            confidence="low",
        )
    if c.cuda == line["default_cuda"]:
        return Outcome(True, "R-FWD", f"{c.package} is JetPack {base.jetpack}'s own CUDA: nothing changes")
    if c.cuda not in line["compatible"]:
        listed = (
            f"upgrade packages {', '.join(line['compatible'])}"
            if line["compatible"]
            else "no upgrade package"
        )
        return Outcome(
            False,
            "R-FWD",
            f"{c.package} does not fit JetPack {line['jetpack']}.x: NVIDIA's CUDA for Tegra table lists {listed} "
            f"for it (default CUDA {line['default_cuda']})",
            DRIVER_MISMATCH,
        )
    orin = (
        f"; on Orin it is packaged as cuda-compat-orin-{c.cuda.replace('.', '-')}"
        if t.cc == (8, 7) and line["jetpack"] == "7.2"
        else ""
    )
    return _fwd_ok(t, f"on JetPack {base.jetpack}{orin}")


def _fwd_ok(t: Target, base: str, warning: str | None = None, confidence: str | None = None) -> Outcome:
    c = t.compat
    assert c is not None
    unknown = " (the GPU was given by compute capability: assumed to be a part that accepts it)"
    known = t.gpu.segment or t.gpu.tegra
    return Outcome(
        True,
        "R-FWD",
        f"{c.package} replaces the user-mode driver {base}: the runtime check and the PTX JIT use "
        f"CUDA {c.cuda} (R{c.driver.branch}){'' if known else unknown}{f'; warning: {warning}' if warning else ''}",
        confidence=confidence or ("low" if not known else "medium" if warning else "high"),
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
    cubins, ptxs, tiles = _by_kind(entries)
    if not (cubins or ptxs or tiles):
        return Selection(
            "no-device-code", None, Outcome(True, "R-SEL", "no cubin or PTX in this fatbin"), ("R-SEL",)
        )
    judged = [(e, sass(e, t)) for e in cubins]
    usable = _fitting(judged)
    if usable and not t.force_ptx_jit:
        return _native(usable, bool(ptxs), t)
    cubin_rules = _rules_of(judged)
    if tiles and not ptxs:  # nvcc -enable-tile's second fatbin: Tile IR beside or instead of tile cubins
        return _select_tile(tiles, cubin_rules, t)
    return _select_ptx(judged, bool(usable), ptxs, cubin_rules, t)


Judged = list[tuple[Entry, Outcome]]


def _by_kind(entries: Sequence[Entry]) -> tuple[list[Entry], list[Entry], list[Entry]]:
    """(cubins, PTX, Tile IR) in the fatbin's order."""
    kinds: dict[str, list[Entry]] = {KIND_SASS: [], KIND_PTX: [], KIND_TILE: []}
    for e in entries:
        kinds.get(e.kind, []).append(e)
    return kinds[KIND_SASS], kinds[KIND_PTX], kinds[KIND_TILE]


def _fitting(judged: Judged) -> Judged:
    return [(e, o) for e, o in judged if o.ok]


def _rules_of(judged: Judged) -> tuple[str, ...]:
    """Every rule the cubins' outcomes name, once, in order."""
    return tuple(dict.fromkeys(r for _, o in judged for r in (o.rule, *o.also)))


def _native(usable: Judged, has_ptx: bool, t: Target) -> Selection:
    """The cubin the driver loads: exact CC, else the highest lower one; a plain cubin over an
    arch/family-specific one of the same CC."""
    e, o = max(usable, key=lambda eo: (cc_of(eo[0]) == t.cc, cc_of(eo[0]), eo[0].variant == ""))
    rules = (o.rule, *o.also, *(("R-SEL",) if len(usable) > 1 or has_ptx else ()))
    reason = f"loads the {e.arch} cubin natively: {o.reason}"
    return Selection("native", e, Outcome(True, o.rule, reason, confidence=o.confidence), rules)


def _select_ptx(
    judged: Judged, cubin_fits: bool, ptxs: list[Entry], cubin_rules: tuple[str, ...], t: Target
) -> Selection:
    """No cubin is taken: the PTX the driver JIT-compiles, if JIT is allowed and any PTX fits."""
    if t.disable_ptx_jit and ptxs:
        return Selection("fail", None, _env_switch(t), ("R-JIT-ENV", *cubin_rules))
    tjudged = [(e, ptx_target(e, t)) for e in ptxs]
    tusable = [(e, o) for e, o in tjudged if o.ok]
    if not tusable:
        return _no_loadable_image(judged, cubin_fits, tjudged, cubin_rules, t)
    return _jit(tusable, bool(judged), cubin_rules, t)


def _env_switch(t: Target) -> Outcome:
    """R-JIT-ENV's outcome for a target whose JIT switches are set."""
    o = jit_env(t)
    assert o is not None, "called only with CUDA_FORCE_PTX_JIT or CUDA_DISABLE_PTX_JIT set"
    return o


def _no_loadable_image(
    judged: Judged, cubin_fits: bool, tjudged: Judged, cubin_rules: tuple[str, ...], t: Target
) -> Selection:
    """No cubin loads (or JIT is forced) and no PTX targets the GPU: the failure that tells most."""
    ptx_rules = tuple(dict.fromkeys(o.rule for _, o in tjudged))
    if t.force_ptx_jit and cubin_fits:
        return Selection("fail", None, _env_switch(t), ("R-JIT-ENV", *ptx_rules))
    first_ptx = tjudged[0][1] if tjudged else None
    why = _closest_failure(judged, t) or first_ptx
    parts = _failure_parts(why, first_ptx)
    rule = why.rule if why else "R-SEL"
    return Selection(
        "fail",
        None,
        Outcome(False, rule, "; ".join(parts), NO_IMAGE, why.confidence if why else "high"),
        tuple(dict.fromkeys((rule, *cubin_rules, *ptx_rules))),
    )


def _failure_parts(why: Outcome | None, first_ptx: Outcome | None) -> list[str]:
    """The reasons a fatbin without a loadable image gives: the most telling one, the first PTX's."""
    parts = [o.reason for o in (why, first_ptx if why is not first_ptx else None) if o]
    if first_ptx is None:
        parts.append("and there is no PTX to JIT-compile")
    return parts


def _jit(tusable: Judged, has_cubins: bool, cubin_rules: tuple[str, ...], t: Target) -> Selection:
    """The PTX of the highest CC is JIT-compiled; it fails when its ISA is newer than the driver's."""
    e, o = max(tusable, key=lambda eo: (cc_of(eo[0]), eo[0].variant != ""))
    isa = ptx_isa(e, t)
    sel = ("R-SEL",) if len(tusable) > 1 or has_cubins else ()
    rules = tuple(
        dict.fromkeys((isa.rule if not isa.ok else o.rule, o.rule, "R-PTX-ISA", *sel, *cubin_rules))
    )
    if not isa.ok:
        reason = f"would JIT-compile the {e.arch} PTX, but its {isa.reason}"
        return Selection("fail", e, Outcome(False, "R-PTX-ISA", reason, UNSUPPORTED_PTX), rules)
    lead = ""
    if has_cubins:  # under CUDA_FORCE_PTX_JIT a fitting cubin is ignored, not missing
        lead = "CUDA_FORCE_PTX_JIT=1 ignores the cubins, so " if t.force_ptx_jit else "no cubin fits, so "
    reason = f"{lead}the driver JIT-compiles the {e.arch} PTX: {o.reason}; {isa.reason}"
    return Selection("jit", e, Outcome(True, o.rule, reason), rules)


def _select_tile(tiles: Sequence[Entry], cubin_rules: tuple[str, ...], t: Target) -> Selection:
    """No cubin fits: the Tile IR of the highest arch that R-TILE allows is compiled at load time."""
    judged = [(e, tile_ir(e, t)) for e in tiles]
    usable = [(e, o) for e, o in judged if o.ok]
    rules = ("R-TILE",) + cubin_rules + (("R-SEL",) if cubin_rules or len(tiles) > 1 else ())
    if usable:
        e, o = max(usable, key=lambda eo: eo[0].sm)
        lead = "no cubin fits, so " if cubin_rules else ""
        return Selection("jit", e, Outcome(True, "R-TILE", lead + o.reason, confidence="medium"), rules)
    o = judged[0][1]
    return Selection("fail", None, o, rules)


def _closest_failure(judged: Judged, t: Target) -> Outcome | None:
    """The most telling cubin failure: same major first, then the CC nearest below the GPU."""
    if not judged:
        return None

    def key(eo: tuple[Entry, Outcome]) -> tuple[bool, bool, int]:
        e = cc_of(eo[0])
        return e[0] == t.cc[0], e <= t.cc, -abs(eo[0].sm - t.gpu.sm)

    _e, o = max(judged, key=key)
    return o
