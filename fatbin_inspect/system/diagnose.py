"""The machine's stack judged against the compatibility data: the two conditions every CUDA program
needs here, in plain words, and warnings for the classic mismatches (``doctor``).

1. R-DRV / R-MVC: the driver serves the CUDA runtime in use (same or newer major family, at or above
   the family floor; a newer minor runs with reduced features and no JIT of its PTX).
2. R-GPU / R-SASS / R-PTX-TARGET: the driver sees a GPU, and code for it can be chosen: a cubin for its
   compute capability, or PTX whose ISA the driver's JIT knows (checked for torch when present).

The CUDA version the driver implements is taken from ``cuDriverGetVersion`` of the libcuda in use
(it includes a cuda-compat package), else from the kernel driver's branch in ``drivers.json``.

The JIT cache (R-JIT-ENV, R-JIT-COST): whether ``CUDA_CACHE_DISABLE`` is set, the folder the
driver writes (``CUDA_CACHE_PATH``, else ``~/.nv/ComputeCache``) and whether it can (the folder,
or the nearest folder above it the driver would create it in, is writable; a tmpfs keeps it only
until the machine or container restarts), and the size it may take (``CUDA_CACHE_MAXSIZE``, else
the driver's default: 1 GiB, 256 MiB on embedded platforms). Without a usable cache every start
compiles the PTX again (``check`` says how long that takes).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fatbin_inspect.compat import data
from fatbin_inspect.compat.targets import Driver, resolve_driver
from fatbin_inspect.errors import FatbinInspectError
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, Entry, bare_entry
from fatbin_inspect.system.stack import BundledPtxas, LocalGpu, Runtime, Stack, Torch

if TYPE_CHECKING:
    from fatbin_inspect.compat.rules import Outcome

OK, FAIL, UNKNOWN = "ok", "fail", "unknown"


@dataclass(frozen=True)
class Condition:
    rule: str  # "R-DRV", "R-GPU"
    status: str  # ok | fail | unknown
    text: str  # one or two sentences a user understands


@dataclass(frozen=True)
class Advice:
    code: str  # stable id: runtime-newer-than-driver, nvcc-differs-from-runtime, compat-package, ...
    text: str


@dataclass(frozen=True)
class JitCache:
    """This machine's JIT cache as the driver would use it."""

    disabled: bool  # CUDA_CACHE_DISABLE=1
    path: str  # the folder
    path_from: str  # "CUDA_CACHE_PATH" | "default"
    writable: bool  # the driver can create or write it
    why: str | None  # why not writable, or a caveat (tmpfs)
    tmpfs: bool  # on a tmpfs: gone at the next restart of the machine or container
    maxsize: int  # bytes
    maxsize_from: (
        str  # "CUDA_CACHE_MAXSIZE" | "driver default" | "CUDA_CACHE_MAXSIZE (not a number: default used)"
    )

    @property
    def usable(self) -> bool:
        return not self.disabled and self.writable


@dataclass(frozen=True)
class Diagnosis:
    driver_cuda: str | None  # "13.0": CUDA version the driver in use implements
    driver_cuda_from: str | None  # "cuDriverGetVersion" | "driver branch R580"
    max_ptx_isa: str | None  # newest PTX ISA the driver's JIT compiles
    runtime_in_use: Runtime | None
    conditions: tuple[Condition, ...]
    warnings: tuple[Advice, ...]
    jit_cache: JitCache | None = None

    @property
    def failed(self) -> bool:
        return any(c.status == FAIL for c in self.conditions)


def _mm(version: str | None) -> tuple[int, int] | None:
    if not version:
        return None
    parts = data.version_tuple(version)
    return (parts[0], parts[1] if len(parts) > 1 else 0) if parts else None


def _branch_driver(stack: Stack) -> Driver | None:
    if stack.kernel_driver is None:
        return None
    try:
        return resolve_driver(stack.kernel_driver.version)
    except FatbinInspectError:
        return None


def runtime_in_use(stack: Stack) -> Runtime | None:
    """The libcudart a program without an RPATH gets (loader order), else the first in a wheel."""
    found = [r for r in stack.runtimes if r.found_via != "site-packages"] or list(stack.runtimes)
    return found[0] if found else None


def diagnose(stack: Stack, env: Mapping[str, str] | None = None, mounts: str = "/proc/mounts") -> Diagnosis:
    """``env``: the variables the JIT cache reads (HOME, APPDATA, CUDA_CACHE_*); default: the
    CUDA_CACHE_* switches the stack found and this process's HOME/APPDATA."""
    branch = _branch_driver(stack)
    drv_cuda, source = _driver_cuda(stack, branch)
    max_isa = _max_ptx_isa(drv_cuda) or (branch.max_ptx_isa if branch else None)
    rt = runtime_in_use(stack)
    warnings: list[Advice] = []
    conds: tuple[Condition, ...] = (
        _driver_condition(stack, rt, drv_cuda, source, branch, warnings),
        _gpu_condition(stack, branch, max_isa),
    )
    fwd = _compat_condition(stack, branch, drv_cuda)
    conds += (fwd,) if fwd else ()
    _mismatch_warnings(stack, rt, drv_cuda, warnings)
    _ptxas_warnings(stack, warnings)
    cache = jit_cache(_cache_env(stack) if env is None else env, any(g.tegra for g in stack.gpus), mounts)
    warnings += _cache_warnings(cache)
    return Diagnosis(drv_cuda, source, max_isa, rt, conds, tuple(warnings), cache)


def _driver_cuda(stack: Stack, branch: Driver | None) -> tuple[str | None, str | None]:
    """The CUDA the driver implements and where that is from: libcuda's cuDriverGetVersion,
    else the kernel driver's branch."""
    api = stack.user_driver.api_version if stack.user_driver else None
    if api:
        return f"{api // 1000}.{api % 1000 // 10}", "cuDriverGetVersion"
    if branch:
        return branch.cuda, f"driver branch R{branch.branch}"
    return None, None


def _cache_env(stack: Stack) -> dict[str, str]:
    """The CUDA_CACHE_* switches the stack found and this process's HOME/APPDATA."""
    env = {k: v for k in ("HOME", "APPDATA") if (v := os.environ.get(k)) is not None}
    env.update({sw.name: sw.value for sw in stack.env if sw.name.startswith("CUDA_CACHE_")})
    return env


def jit_cache(env: Mapping[str, str], embedded: bool = False, mounts: str = "/proc/mounts") -> JitCache:
    """Probe the JIT cache folder the driver would use with ``env`` (nothing is written)."""
    from fatbin_inspect.compat import jit

    disabled = jit.cache_settings({"CUDA_CACHE_DISABLE": env.get("CUDA_CACHE_DISABLE", "")}).disabled
    raw = env.get("CUDA_CACHE_PATH")
    if raw:
        path, path_from = raw, "CUDA_CACHE_PATH"
    elif os.name == "nt":
        path, path_from = os.path.join(env.get("APPDATA", "%APPDATA%"), "NVIDIA", "ComputeCache"), "default"
    else:
        path, path_from = os.path.join(env.get("HOME", "~"), ".nv", "ComputeCache"), "default"
    writable, why = _writable(path)
    fs = _fs_type(path, mounts)
    tmpfs = fs == "tmpfs"
    if tmpfs and writable:
        why = "on a tmpfs: kept only until the machine or container restarts"
    try:
        size_env = jit.cache_settings({"CUDA_CACHE_MAXSIZE": env.get("CUDA_CACHE_MAXSIZE", "")}).maxsize
        size_from = "CUDA_CACHE_MAXSIZE" if size_env is not None else "driver default"
    except FatbinInspectError:
        size_env, size_from = None, "CUDA_CACHE_MAXSIZE (not a number: default used)"
    maxsize = jit.CacheSettings(maxsize=size_env).limit(embedded)
    return JitCache(disabled, path, path_from, writable, why, tmpfs, maxsize, size_from)


def _writable(path: str) -> tuple[bool, str | None]:
    """The folder is writable, or the nearest existing folder above it is (the driver creates it)."""
    p = os.path.abspath(path)
    if os.path.exists(p):
        if not os.path.isdir(p):
            return False, "exists and is not a folder"
        return (True, None) if os.access(p, os.W_OK | os.X_OK) else (False, "not writable")
    parent = p
    while not os.path.exists(parent):
        up = os.path.dirname(parent)
        if up == parent:
            return False, "no folder above it exists"
        parent = up
    if os.path.isdir(parent) and os.access(parent, os.W_OK | os.X_OK):
        return True, None
    return False, f"does not exist, and {parent} is not writable"


def _fs_type(path: str, mounts: str) -> str | None:
    """The file-system type of the longest mount point holding ``path`` (/proc/mounts)."""
    try:
        with open(mounts, encoding="utf-8", errors="replace") as fh:
            rows = [line.split() for line in fh]
    except OSError:
        return None
    p = os.path.abspath(path)
    best, fs = "", None
    for row in rows:
        if len(row) < 3:
            continue
        mnt = row[1].replace("\\040", " ")
        if (p == mnt or p.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(best):
            best, fs = mnt, row[2]
    return fs


def _cache_warnings(c: JitCache) -> list[Advice]:
    if c.disabled:
        return [
            Advice(
                "jit-cache",
                "CUDA_CACHE_DISABLE=1: PTX is JIT-compiled again at every start of every program (check shows how long).",
            )
        ]
    if not c.writable:
        return [
            Advice(
                "jit-cache",
                f"the JIT cache folder {c.path} ({c.path_from}) {c.why}: PTX is JIT-compiled again at every start; "
                "set CUDA_CACHE_PATH to a writable, persistent folder.",
            )
        ]
    return []


def _max_ptx_isa(cuda: str | None) -> str | None:
    """drivers.json: the branch whose max_cuda_version is ``cuda`` gives its JIT's PTX ISA."""
    for row in data.branches():
        if cuda and row["max_cuda_version"] == cuda:
            return row["max_ptx_isa_jit"]
    return None


def _driver_condition(
    stack: Stack,
    rt: Runtime | None,
    drv_cuda: str | None,
    source: str | None,
    branch: Driver | None,
    warnings: list[Advice],
) -> Condition:
    if drv_cuda is None:
        return Condition(
            "R-DRV",
            UNKNOWN,
            "No NVIDIA driver found, so no CUDA program can start here "
            "(cudaErrorInsufficientDriver 35 or cudaErrorNoDevice 100).",
        )
    rmm, dmm = _mm(rt.version) if rt is not None else None, _mm(drv_cuda)
    if rt is None or rmm is None or dmm is None:
        return Condition(
            "R-DRV",
            UNKNOWN,
            f"The driver implements CUDA {drv_cuda} ({source}); no CUDA runtime "
            "with a known version was found to compare it with.",
        )
    label = f"CUDA runtime {rt.version} ({rt.path})"
    too_old = _driver_too_old(stack, label, rmm, dmm, drv_cuda)
    if too_old is not None:
        return too_old
    if rmm > dmm:
        return Condition(
            "R-MVC",
            OK,
            f"{label} runs on the CUDA {drv_cuda} driver by minor-version "
            "compatibility: SASS runs; its newer PTX would not JIT (222) and newer "
            "APIs return cudaErrorCallRequiresNewerDriver (36).",
        )
    return Condition("R-DRV", OK, f"{label} is not newer than the driver (CUDA {drv_cuda}, {source}).")


def _driver_too_old(
    stack: Stack, label: str, rmm: tuple[int, int], dmm: tuple[int, int], drv_cuda: str
) -> Condition | None:
    """R-DRV's fail (a newer major runtime) or R-MVC's (a driver below the major's floor)."""
    if rmm[0] > dmm[0]:
        return Condition(
            "R-DRV",
            FAIL,
            f"{label} needs a CUDA {rmm[0]}.x driver; the driver implements CUDA "
            f"{drv_cuda}: programs fail at start with cudaErrorInsufficientDriver (35).",
        )
    floor = data.mvc_floor(rmm[0]) if rmm[0] == dmm[0] and rmm[0] >= 11 else None
    kver = stack.kernel_driver.version if stack.kernel_driver else None
    if floor and kver and not _compat_build(stack) and data.version_tuple(kver) < floor:
        return Condition(
            "R-MVC",
            FAIL,
            f"{label}: driver {kver} is below the CUDA {rmm[0]}.x floor "
            f"{'.'.join(map(str, floor))}: cudaErrorInsufficientDriver (35).",
        )
    return None


def _gpu_condition(stack: Stack, branch: Driver | None, max_isa: str | None) -> Condition:
    if not stack.gpus:
        return Condition(
            "R-GPU", UNKNOWN, "No GPU is visible, so no kernel can run here (see what is missing below)."
        )
    parts = []
    for g in stack.gpus:
        sm = g.cc.replace(".", "")
        kind = f"only sm_{sm} cubins (Tegra)" if g.tegra else f"sm_{g.cc.split('.')[0]}x cubins up to sm_{sm}"
        parts.append(
            f"GPU {g.index} {g.name} (CC {g.cc}) runs {kind}, or PTX up to compute_{sm}"
            + (f" with PTX ISA <= {max_isa}" if max_isa else "")
        )
    text = "; ".join(parts) + "."
    t = stack.torch
    if t and t.archs and branch:
        status, verdict = _torch_coverage(stack, t, branch)
        return Condition("R-SEL", status, f"{text} torch {t.version}: {verdict}")
    return Condition(
        "R-GPU", OK, text + " Check a binary with `fatbin-inspect check PATH --gpu auto --driver auto`."
    )


def _torch_coverage(stack: Stack, torch: Torch, branch: Driver) -> tuple[str, str]:
    """The engine's R-SEL over one image per arch of libtorch_cuda.so (PTX at its newest ISA)."""
    from fatbin_inspect.compat.rules import select
    from fatbin_inspect.compat.targets import Target, gpu_for_cc

    entries = [_arch_entry(a, torch.ptx_isa) for a in torch.archs]
    lacking = []
    for g in stack.gpus:
        gpu = gpu_for_cc(data.parse_cc(g.cc), name=g.name)
        sel = select(entries, Target(dataclasses.replace(gpu, tegra=gpu.tegra or g.tegra), branch))
        if sel.verdict == "fail":
            lacking.append(f"GPU {g.index}: {sel.outcome.reason} ({sel.outcome.error})")
    if lacking:
        return FAIL, "; ".join(lacking) + "."
    return OK, f"{torch.archs_from} carries code for every GPU ({' '.join(torch.archs)})."


def _arch_entry(arch: str, isa: str | None) -> Entry:
    m = re.fullmatch(r"(sm|compute)_(\d+)([af]?)", arch)
    if m is None:
        raise ValueError(f"{arch!r} is not an architecture name")
    kind = KIND_SASS if m.group(1) == "sm" else KIND_PTX
    version = _mm(isa or "0.0") or (0, 0) if kind == KIND_PTX else (1, 8)
    return bare_entry(kind, int(m.group(2)), m.group(3), 0, version)


def _compat_condition(stack: Stack, branch: Driver | None, drv_cuda: str | None) -> Condition | None:
    """R-FWD when a cuda-compat libcuda is loaded: does every GPU here accept it on this kernel
    driver's branch (803 / 804 otherwise)?"""
    from fatbin_inspect.compat.rules import forward_compat
    from fatbin_inspect.compat.targets import Target, gpu_for_cc, resolve_compat

    u = stack.user_driver
    if u is None or not _compat_build(stack) or branch is None or drv_cuda is None:
        return None
    try:
        pkg = resolve_compat(drv_cuda, source=f"libcuda from {u.path}")
    except FatbinInspectError:
        return None
    checks: list[tuple[LocalGpu | None, Outcome]] = [
        (g, forward_compat(Target(gpu_for_cc(data.parse_cc(g.cc), name=g.name), branch, compat=pkg)))
        for g in stack.gpus
    ] or [(None, forward_compat(Target(gpu_for_cc((0, 0)), branch, compat=pkg)))]
    return _fwd_condition(checks)


def _fwd_condition(checks: list[tuple[LocalGpu | None, Outcome]]) -> Condition:
    """R-FWD from each GPU's outcome: the first that fails, else the first."""
    bad = [(g, o) for g, o in checks if not o.ok]
    g, o = (bad or checks)[0]
    who = f"GPU {g.index} {g.name}: " if g is not None and len(checks) > 1 else ""
    err = f" ({o.error}, {'cudaErrorSystemDriverMismatch' if o.error == 803 else 'cudaErrorCompatNotSupportedOnDevice'})"
    return Condition("R-FWD", FAIL if bad else OK, f"{who}{o.reason}{err if bad else ''}.")


def _ptxas_warnings(stack: Stack, out: list[Advice]) -> None:
    """A framework's own ptxas (Triton) must know each GPU's SM: a ptxas 12.6 cannot target sm_120,
    a ptxas 12.8 knows sm_101 but not sm_110. TRITON_PTXAS_PATH, when set, is the one Triton uses."""
    chosen = [p for p in stack.ptxas if p.via == "TRITON_PTXAS_PATH"] or list(stack.ptxas)
    known = {data.version_tuple(t["version"])[:2] for t in data.toolkits()}
    for p in chosen:
        mm = _mm(p.version)
        if mm is None or mm not in known:
            continue  # a ptxas the data does not describe (unreleased or newer): nothing to say
        for g in stack.gpus:
            advice = _ptxas_for(p, mm, g)
            if advice is not None:
                out.append(advice)


def _ptxas_for(p: BundledPtxas, mm: tuple[int, int], g: LocalGpu) -> Advice | None:
    """ptxas-too-old when ptxas ``p`` (CUDA ``mm``) cannot target GPU ``g``'s SM."""
    sm = f"sm_{g.cc.replace('.', '')}"
    able = [data.version_tuple(v)[:2] for v in data.toolkits_targeting(sm)]
    if mm in able:
        return None
    since = f"; {sm} needs ptxas from CUDA {'.'.join(map(str, min(able)))}" if able else ""
    if able and mm > max(able):
        since = f"; CUDA {'.'.join(map(str, max(able)))} was the last to target {sm}"
    return Advice(
        "ptxas-too-old",
        f"{p.framework}'s ptxas {p.version} ({p.path}, {p.via}) cannot target {sm} "
        f"(GPU {g.index} {g.name}, CC {g.cc}): its kernels fail to compile here{since}; "
        "upgrade the framework or point TRITON_PTXAS_PATH at a ptxas that knows this GPU.",
    )


def _compat_build(stack: Stack) -> str | None:
    """The libcuda build when it differs from the kernel driver (a cuda-compat package)."""
    u, k = stack.user_driver, stack.kernel_driver
    if u and u.build and k and u.build != k.version:
        return u.build
    return None


def _mismatch_warnings(stack: Stack, rt: Runtime | None, drv_cuda: str | None, out: list[Advice]) -> None:
    out += _runtimes_newer_than_driver(stack, rt, drv_cuda)
    out += _nvcc_mismatches(stack, rt, drv_cuda)
    out += _driver_setup_warnings(stack)


def _runtimes_newer_than_driver(stack: Stack, rt: Runtime | None, drv_cuda: str | None) -> list[Advice]:
    dmm = _mm(drv_cuda)
    if not dmm:
        return []
    out = [
        _newer_runtime(r, dmm, drv_cuda)
        for r in stack.runtimes
        if r is not rt and (_mm(r.version) or dmm) > dmm
    ]
    in_use = _mm(rt.version) if rt else None
    if rt and in_use and in_use > dmm:
        message = f"the runtime in use ({rt.version}) is newer than the driver (CUDA {drv_cuda})."
        out.append(Advice("runtime-newer-than-driver", message))
    return out


def _newer_runtime(r: Runtime, dmm: tuple[int, int], drv_cuda: str | None) -> Advice:
    rmm = _mm(r.version) or dmm
    effect = (
        ": it cannot start (35)."
        if rmm[0] > dmm[0]
        else ": it runs by minor-version compatibility only (no JIT of its PTX)."
    )
    message = f"CUDA runtime {r.version} at {r.path} is newer than the driver (CUDA {drv_cuda}){effect}"
    return Advice("runtime-newer-than-driver", message)


def _nvcc_mismatches(stack: Stack, rt: Runtime | None, drv_cuda: str | None) -> list[Advice]:
    nvcc = stack.nvcc.version if stack.nvcc else None
    if not nvcc:
        return []
    return _nvcc_vs_runtime(nvcc, rt) + _nvcc_vs_driver(nvcc, drv_cuda)


def _nvcc_vs_runtime(nvcc: str, rt: Runtime | None) -> list[Advice]:
    in_use = _mm(rt.version) if rt else None
    if not (rt and rt.version and in_use) or _mm(nvcc) == in_use or len(data.version_tuple(rt.version)) <= 1:
        return []
    return [
        Advice(
            "nvcc-differs-from-runtime",
            f"nvcc on PATH is {nvcc} but the runtime in use is {rt.version}: "
            "code built here targets another CUDA version than programs load.",
        )
    ]


def _nvcc_vs_driver(nvcc: str, drv_cuda: str | None) -> list[Advice]:
    dmm, mm = _mm(drv_cuda), _mm(nvcc)
    if not (dmm and mm and mm > dmm):
        return []
    return [
        Advice(
            "nvcc-newer-than-driver",
            f"nvcc {nvcc} is newer than the driver (CUDA {drv_cuda}): PTX it "
            "emits will not JIT here (222); build cubins for this GPU (-arch=sm_XY).",
        )
    ]


_JIT_SWITCHES = ("CUDA_FORCE_PTX_JIT", "CUDA_FORCE_JIT", "CUDA_DISABLE_PTX_JIT", "CUDA_DISABLE_JIT")


def _driver_setup_warnings(stack: Stack) -> list[Advice]:
    """A cuda-compat libcuda, an unusable libcuda, JIT switches set in the environment."""
    out = []
    compat = _compat_build(stack)
    if compat and stack.user_driver and stack.kernel_driver:
        out.append(
            Advice(
                "compat-package",
                f"libcuda {compat} ({stack.user_driver.path}) differs from the kernel driver "
                f"{stack.kernel_driver.version}: a cuda-compat package is in use (R-FWD); on "
                "unsupported GPUs this fails with 804, on an unsupported branch with 803.",
            )
        )
    u = stack.user_driver
    if u and u.error:
        out.append(Advice("libcuda-unusable", f"{u.path}: {u.error}."))
    for sw in stack.env:
        if sw.name in _JIT_SWITCHES and sw.value.strip().lower() in ("1", "true", "yes", "on"):
            out.append(Advice("jit-switch", f"{sw.name}={sw.value}: {sw.effect}."))
    return out
