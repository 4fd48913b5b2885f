"""``--gpu`` / ``--driver`` / ``--env`` -> frozen ``Target`` records.

A GPU is named as ``nvidia-smi`` prints it or as people say it ("H100", "RTX 4090", "4090"), by
compute capability (``8.9``) or SM (``sm_89``), or ``auto`` (NVML, then cuda-python). A name may
match several products of one compute capability; products of different capabilities, or none,
raise ``UsageError`` listing the closest names. A driver is a Linux version (``550.54.14``), a
branch (``550``), or ``auto``; without one the newest branch the data confirms is assumed.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from fatbin_inspect.compat import data, gpu_names
from fatbin_inspect.compat.data import CC
from fatbin_inspect.errors import DeviceError, UsageError

_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Gpu:
    name: str  # representative product name, or "CC 8.9" when given by number
    cc: CC
    tegra: bool  # Tegra/Jetson iGPU: cubins must match the CC exactly (R-SASS-TEGRA)
    architecture: str | None = None
    confidence: str = "high"
    matched: tuple[str, ...] = ()  # every known product the query matched (one CC)

    @property
    def sm(self) -> int:
        return self.cc[0] * 10 + self.cc[1]


@dataclass(frozen=True)
class Driver:
    version: str  # as given ("550.54.14", "550") or the assumed branch ("615")
    branch: int
    cuda: str  # CUDA version nvidia-smi shows for the branch, e.g. "12.4"
    max_ptx_isa: str  # newest PTX ISA its JIT compiles
    assumed: bool = False  # no --driver given
    note: str | None = None

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return data.version_tuple(self.version)


@dataclass(frozen=True)
class Target:
    gpu: Gpu
    driver: Driver
    force_ptx_jit: bool = False  # CUDA_FORCE_PTX_JIT=1: cubins are ignored
    disable_ptx_jit: bool = False  # CUDA_DISABLE_PTX_JIT=1: PTX is never compiled
    hosts: tuple[str, ...] = ()  # fleet targets: the machines with this GPU and driver (sorted)

    @property
    def cc(self) -> CC:
        return self.gpu.cc

    @property
    def host_label(self) -> str | None:
        """``node01``, ``node01, node02``, ``node01, node02 +3`` (None for a target not from a fleet)."""
        if not self.hosts:
            return None
        more = f" +{len(self.hosts) - 2}" if len(self.hosts) > 3 else ""
        return ", ".join(self.hosts[: 2 if more else 3]) + more

    @property
    def label(self) -> str:
        cc = f"CC {self.cc[0]}.{self.cc[1]}"
        gpu = cc if self.gpu.name == cc else f"{self.gpu.name} ({cc})"
        where = f"{self.host_label}: " if self.hosts else ""
        return f"{where}{gpu}, driver {self.driver.version}{' (assumed)' if self.driver.assumed else ''}"


@dataclass(frozen=True)
class LocalDevices:
    """This machine's GPUs and driver for ``--gpu auto`` / ``--driver auto``, probed by the caller
    (``system.stack.local_devices``; the engine never probes). ``gpus``: (name, CC) per GPU, None
    when neither NVML nor cuda-python could be used; ``driver``: the version, None when unknown."""

    gpus: tuple[tuple[str, CC], ...] | None = None
    driver: str | None = None


NOT_PROBED = LocalDevices()


def wants_local(gpus: Sequence[str], driver: str | None) -> tuple[bool, bool]:
    """(a GPU query is ``auto``, the driver is ``auto``): what the caller must probe."""
    return any(q.strip().lower() == "auto" for q in gpus), (driver or "").strip().lower() == "auto"


def resolve_targets(
    gpus: Sequence[str],
    driver: str | None,
    env: dict[str, str] | None = None,
    local: LocalDevices = NOT_PROBED,
) -> tuple[Target, ...]:
    """One target per GPU query (``auto`` gives one per GPU model in ``local``), all with one driver."""
    if not gpus:
        raise UsageError(
            "no --gpu given (a name such as 'RTX 4090', a compute capability '8.9', 'sm_89', or 'auto')"
        )
    force, disable = jit_switches(env or {})
    drv = resolve_driver(driver, local.driver)
    out: list[Target] = []
    for q in gpus:
        for g in local_gpus(local) if q.strip().lower() == "auto" else (resolve_gpu(q),):
            t = Target(g, drv, force, disable)
            if t not in out:
                out.append(t)
    return tuple(out)


def jit_switches(env: dict[str, str]) -> tuple[bool, bool]:
    """(force PTX JIT, disable PTX JIT); the PTX spellings win over the older CUDA_*_JIT ones."""

    def flag(new: str, old: str) -> bool:
        val = env.get(new, env.get(old))
        return val is not None and val.strip().lower() in _TRUE

    return flag("CUDA_FORCE_PTX_JIT", "CUDA_FORCE_JIT"), flag("CUDA_DISABLE_PTX_JIT", "CUDA_DISABLE_JIT")


# ---------------------------------------------------------------------------------------- GPUs
_CC_RE = re.compile(r"(?:(?:sm|compute)_(\d+)[af]?|(\d+)\.(\d+))")


def resolve_gpu(query: str) -> Gpu:
    q = query.strip()
    m = _CC_RE.fullmatch(q.lower())
    if m:
        cc = (
            (int(m.group(1)) // 10, int(m.group(1)) % 10)
            if m.group(1)
            else (int(m.group(2)), int(m.group(3)))
        )
        return gpu_for_cc(cc)
    return _by_name(q)


def gpu_for_cc(cc: CC, name: str | None = None) -> Gpu:
    known = [g for g in data.gpus() if data.parse_cc(g["compute_capability"]) == cc]
    tegra = cc in data.tegra_ccs() if not known else any(g["tegra_igpu"] for g in known)
    archs = {g["architecture"] for g in known}
    return Gpu(
        name=name or f"CC {cc[0]}.{cc[1]}",
        cc=cc,
        tegra=tegra,
        architecture=archs.pop() if len(archs) == 1 else None,
        confidence="high" if known else "low",
    )


def _by_name(query: str) -> Gpu:
    if not gpu_names.tokens(query):
        raise UsageError(f"--gpu {query!r}: empty GPU name")
    found = gpu_names.narrow(gpu_names.match(query))
    if not found:
        raise UsageError(
            f"--gpu {query!r}: no known GPU matches; closest: {', '.join(_closest(query)) or 'none'} "
            "(see `fatbin-inspect gpus`)"
        )
    groups: dict[tuple[CC, bool], list[dict]] = {}
    for m in found:
        groups.setdefault((m.cc, bool(m.row["tegra_igpu"])), []).append(m.row)
    if len(groups) > 1:
        listed = "; ".join(
            f"{', '.join(x['name'] for x in gs[:4])} ({cc[0]}.{cc[1]})"
            for (cc, _t), gs in sorted(groups.items())
        )
        raise UsageError(
            f"--gpu {query!r} matches GPUs of different compute capabilities: {listed}. "
            "Give a fuller name or the compute capability"
        )
    (cc, tegra), gs = next(iter(groups.items()))
    best = min(gs, key=lambda g: (len(gpu_names.tokens(g["name"])), g["confidence"] != "high", g["name"]))
    return Gpu(
        name=best["name"],
        cc=cc,
        tegra=tegra,
        architecture=best["architecture"],
        confidence=best["confidence"],
        matched=tuple(sorted({g["name"] for g in gs})),
    )


def _closest(query: str, n: int = 5) -> list[str]:
    """Known names whose best run of as many words as the query looks most like it."""
    qt = gpu_names.tokens(query)
    q = " ".join(qt)
    scores: dict[str, float] = {}
    for g in data.gpus():
        for nm in gpu_names.names_of(g):
            toks = gpu_names.tokens(nm)
            k = min(len(qt), len(toks))
            windows = [" ".join(toks[i : i + k]) for i in range(len(toks) - k + 1)] or [""]
            score = max(difflib.SequenceMatcher(None, q, w).ratio() for w in windows)
            scores[nm] = max(score, scores.get(nm, 0.0))
    best = sorted((nm for nm, s in scores.items() if s >= 0.5), key=lambda nm: (-scores[nm], len(nm)))
    return best[:n]


def search_gpus(query: str | None = None, cc: str | None = None) -> list[dict]:
    """Known GPUs, sorted by compute capability then name: all of them, those ``query`` names
    (words as for ``--gpu``, or a compute capability / SM), those of compute capability ``cc``."""
    rows = data.gpus()
    if cc is not None:
        want = resolve_gpu(cc).cc if _CC_RE.fullmatch(cc.strip().lower()) else None
        if want is None:
            raise UsageError(f"--cc {cc!r}: expected a compute capability such as 9.0 or sm_90")
        rows = [g for g in rows if data.parse_cc(g["compute_capability"]) == want]
    if query and _CC_RE.fullmatch(query.strip().lower()):
        want = resolve_gpu(query).cc
        rows = [g for g in rows if data.parse_cc(g["compute_capability"]) == want]
    elif query:
        rows = [m.row for m in gpu_names.match(query, rows)]
    return sorted(rows, key=gpu_names.sort_key)


def local_gpus(local: LocalDevices) -> tuple[Gpu, ...]:
    """One ``Gpu`` per GPU model the caller probed (names as the machine reports them)."""
    if not local.gpus:
        raise DeviceError(
            "--gpu auto: no NVIDIA GPU found (NVML and cuda-python report none, or "
            "nvidia-ml-py / cuda-python are not installed); name the GPU instead"
        )
    out: list[Gpu] = []
    for name, cc in local.gpus:
        g = gpu_for_cc(cc, name=name)
        if g not in out:
            out.append(g)
    return tuple(out)


# ------------------------------------------------------------------------------------- drivers
_DRIVER_RE = re.compile(r"[rR]?(\d{3})(?:\.\d+){0,2}")


def resolve_driver(text: str | None, local_driver: str | None = None) -> Driver:
    """``local_driver``: the version the caller probed, used for ``auto``."""
    rows = data.branches()
    if text is None or not text.strip():
        newest = [b for b in rows if b.get("confidence") != "low"][-1]
        return _driver(
            newest["branch"],
            newest,
            assumed=True,
            note=f"no --driver given: assuming R{newest['branch']} (CUDA {newest['max_cuda_version']}), "
            "the newest driver branch the data confirms",
        )
    text = text.strip()
    if text.lower() == "auto":
        if not local_driver:
            raise DeviceError(
                "--driver auto: cannot read the driver version (no NVIDIA driver, or "
                "nvidia-ml-py is not installed); give it as --driver 550.54.14"
            )
        text = local_driver
    m = _DRIVER_RE.fullmatch(text)
    if not m:
        raise UsageError(
            f"--driver {text!r}: expected a Linux driver version (550.54.14), a branch (550) or 'auto'"
        )
    branch = int(m.group(1))
    known = [b for b in rows if int(b["branch"]) <= branch]
    if not known:
        raise UsageError(f"--driver {text!r}: older than every known branch (oldest R{rows[0]['branch']})")
    row, note = known[-1], None
    if int(row["branch"]) != branch:
        note = f"branch {branch} is not in the data; using the limits of R{row['branch']}"
    return _driver(text.lstrip("rR"), row, note=note)


def _driver(version: str, row: dict, assumed: bool = False, note: str | None = None) -> Driver:
    return Driver(
        version=str(version),
        branch=int(row["branch"]),
        cuda=row["max_cuda_version"],
        max_ptx_isa=row["max_ptx_isa_jit"],
        assumed=assumed,
        note=note,
    )
