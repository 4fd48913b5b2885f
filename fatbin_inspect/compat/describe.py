"""The engine's words: every sentence a verdict carries (reasons, notes, advice) and the ones
renderers say about it (``coverage_line``), made from numbers, names and verdict records.

Pure numbers -> words, as pyelftools' ``descriptions.py``: nothing here decides a verdict, and
nothing imports ``compat.engine``. It lives in ``compat/``, not ``render/``, because the engine
writes its sentences into the records it returns (``reason``, ``notes`` and ``advice`` are fields
of check.schema.json), and compat may not import render; renderers import it for the sentences
they add (``coverage_line``), so none calls the engine for words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fatbin_inspect.compat import data, rules
from fatbin_inspect.compat.data import CC
from fatbin_inspect.compat.gap_kernels import clause, decoded_names
from fatbin_inspect.compat.runtime import RuntimeNeed
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.compat.verdict import FatbinGroup, FatbinVerdict, FileVerdict, arch_counts
from fatbin_inspect.formats.model import FileReport

RUNTIME_UNKNOWN = "runtime not known: the driver check was not made (R-RT: no cudart linked, none declared)"


def of_fatbins(n: int, total: int) -> str:
    """'all 40 fatbins', 'its only fatbin', '3 of 40 fatbins'."""
    if n == total:
        return f"all {total} fatbins" if total > 1 else "its only fatbin"
    return f"{n} of {total} fatbins"


def no_code_reason(fbs: Sequence[FatbinVerdict], static_cudart: bool = False) -> str:
    """Why a file without counted fatbins has no device code to judge (and no runtime known)."""
    if fbs:
        return f"only {len(fbs)} fatbin(s) that cannot make a launch fail ({fbs[0].ignored or 'no images'})"
    if static_cudart:
        return "no CUDA device code; a static CUDA runtime is linked, but its version is not known: the driver check was not made"
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


def wrong_host_reason(report: FileReport, target: Target) -> str:
    """R-HOST: why a host binary built for another CPU never loads on ``target``'s host."""
    return (
        f"{report.machine} code cannot load on {target.gpu.name}'s {target.host_arch} host: pip does not "
        f"install a wheel built for {report.machine} there and the dynamic loader refuses the file (R-HOST)"
    )


def device_line(d: FileVerdict) -> str:
    """R-HOST's device answer in a line: ``native sm_120 — on a host that can load the file``
    (``fail 209 (R-SASS-1), coverage partial — …`` when it fails there too)."""
    if d.verdict in ("native", "jit") and d.chosen is not None:
        head = f"{d.verdict} {d.chosen.arch}"
    elif d.verdict == "fail":
        head = f"fail {d.error.code} ({d.rule})" if d.error else f"fail ({d.rule})"
    else:
        head = d.verdict
    cov = f", coverage {d.coverage}" if d.coverage != "full" else ""
    return f"{head}{cov} — on a host that can load the file"


def host_why(v: FileVerdict) -> str:
    """R-HOST's reason, with what the device code gives on a host that can load the file."""
    return f"{v.reason}; device code: {device_line(v.device)}" if v.device else v.reason


def wrong_host_advice(target: Target) -> tuple[str, ...]:
    return (f"install the {target.host_arch} build of this package on that host",)


def past_check_note(counts: dict[str, int]) -> str:
    """What the images would give once past a failed stack check (R-FWD, R-DRV, R-GPU)."""
    return f"past this check the images would give: {counts['native']} native, {counts['jit']} jit, {counts['fail']} fail"


def no_kernels_reason(driver_reason: str) -> str:
    return f"no kernels to load; {driver_reason}"


def link_time_reason(archs: Sequence[str], loads: int, counted: int, target: Target) -> str:
    """R-LINK: what a link-time input can link code for, and how many of its fatbins fit ``target``."""
    reason = (
        f"link-time input (static archive member or relocatable object): it is linked into a program, "
        f"never loaded itself; code for {', '.join(archs) or 'nothing'}"
    )
    if counted:
        reason += f"; {loads} of {counted} fatbins have code for CC {target.cc[0]}.{target.cc[1]}"
    return reason


def dropped_note(dropped: int, t: Target) -> str:
    """Why ``dropped`` broad fatbins for newer GPUs are gaps: the file targets the GPU's generation nowhere."""
    x, y = t.cc
    code = f"sm_{x}0 or compute_{x}0" if y == 0 else f"sm_{x}0…sm_{x}{y} or compute_{x}0…compute_{x}{y}"
    n = "1 fatbin" if dropped == 1 else f"{dropped} fatbins"
    return (
        f"no fatbin holds {code} code: the build targets the generation of CC {x}.{y} nowhere, so "
        f"{n} of code for newer GPUs {'is a gap' if dropped == 1 else 'are gaps'}, not "
        "specialised for other GPUs (R-FILE, guard of (i))"
    )


def component_note(beyond: int, reach: CC, low: CC, t: Target) -> str:
    """Why ``beyond`` broad fatbins for newer GPUs (their code from ``low`` up) are gaps although
    some fatbin targets the GPU's generation: that code stops at ``reach``, below all of theirs,
    as an older build's (a statically linked component's) does, so it does not stand for them."""
    x, y = t.cc
    n = "1 fatbin" if beyond == 1 else f"{beyond} fatbins"
    return (
        f"the only code for the generation of CC {x}.{y} is in fatbins whose newest code is for CC "
        f"{reach[0]}.{reach[1]} (an older build, such as a statically linked component), so {n} of "
        f"code for CC {low[0]}.{low[1]} and newer {'is a gap' if beyond == 1 else 'are gaps'}, not "
        "specialised for other GPUs: this library's own kernels fail here (R-FILE, guard of (i))"
    )


def file_reason(
    lead: FatbinVerdict,
    bad: Sequence[FatbinVerdict],
    counted: Sequence[FatbinVerdict],
    loading: Sequence[FatbinVerdict],
    spec: Sequence[FatbinVerdict],
    gaps: Sequence[FatbinVerdict],
    t: Target,
) -> str:
    """R-FILE's reason: the deciding fatbin's, with how many share it, what is set aside or which
    kernels the gaps hold (when decoded)."""
    dev = f"CC {t.cc[0]}.{t.cc[1]}"
    reason = lead.reason
    if len(counted) > 1:
        reason = f"{of_fatbins(len(bad), len(counted))}: {reason}"
    if not loading and spec and not gaps:
        archs = ", ".join(a for a, _ in arch_counts(spec)[:4])
        return f"{reason}; only code for {archs}: this file is for other GPUs than {dev}"
    if gaps and loading:
        named = clause(decoded_names(gaps) or ())  # the kernels they hold, when decoded
        return f"{of_fatbins(len(gaps), len(counted))} have no code for {dev} and fail at first use: {lead.reason}{named}"
    return reason


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


def advice(rule: str, t: Target, rt: RuntimeNeed | None) -> tuple[str, ...]:
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


_ADVICE: dict[str, Callable[[Target, RuntimeNeed | None], tuple[str, ...]]] = {
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
