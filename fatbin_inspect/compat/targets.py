"""``--gpu`` / ``--driver`` / ``--env`` -> frozen ``Target`` records.

A GPU is named as ``nvidia-smi`` prints it or as people say it ("H100", "RTX 4090", "4090"), by
compute capability (``8.9``) or SM (``sm_89``), or ``auto`` (NVML, then cuda-python). A name may
match several products of one compute capability; products of different capabilities, or none,
raise ``UsageError`` listing the closest names. A driver is a Linux version (``550.54.14``), a
branch (``550``), a Windows version (``581.29``: Windows numbers run up to four above their branch,
581.xx is R580) or its Device Manager form (``32.0.15.8129`` = 581.29: the last five digits), a
Jetson release (``jetpack-6.2``, ``l4t-36.4``: the CUDA version of its BSP driver), or ``auto``;
without one the newest branch the data confirms is assumed. ``--compat 13.4`` (or, with ``--driver
auto``, a libcuda loaded from a ``cuda-compat`` folder) is a forward-compatibility package: the
user-mode driver then is that CUDA's branch while the kernel driver stays (R-FWD).
"""

from __future__ import annotations

import dataclasses
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
    segment: str | None = None  # datacenter | geforce | workstation | jetson/embedded ... (None: unknown)

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
    platform: str | None = None  # linux | windows | jetson; None: a bare branch, either platform
    jetpack: str | None = None  # a Jetson driver's JetPack release ("6.2", "6.1 / 6.2 / 6.2.1")

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return data.version_tuple(self.version)


@dataclass(frozen=True)
class Compat:
    """A ``cuda-compat-<maj>-<min>`` package in the loader path (R-FWD)."""

    cuda: str  # "13.4"
    driver: Driver  # the user-mode driver it carries (branch of that CUDA)
    source: str  # "--compat 13.4" or the folder libcuda was loaded from

    @property
    def package(self) -> str:
        return "cuda-compat-" + self.cuda.replace(".", "-")


ANY_HOST = "any"  # Target.host: the device code is judged whatever CPU the host has (no R-HOST)


@dataclass(frozen=True)
class Target:
    gpu: Gpu
    driver: Driver
    force_ptx_jit: bool = False  # CUDA_FORCE_PTX_JIT=1: cubins are ignored
    disable_ptx_jit: bool = False  # CUDA_DISABLE_PTX_JIT=1: PTX is never compiled
    hosts: tuple[str, ...] = ()  # fleet targets: the machines with this GPU and driver (sorted)
    compat: Compat | None = None  # forward-compatibility package (R-FWD)
    host: str | None = None  # the host's CPU architecture as a doctor report or fleet entry gives it (R-HOST)

    def __post_init__(self) -> None:
        """The driver as it reads on this GPU, however the target was built (``--driver``, a fleet
        TOML, a doctor report): a number only a Jetson prints (``580.00`` on Thor) becomes its
        JetPack driver; a desktop number for a Jetson, and a cuda-compat pair on which NVIDIA's
        prose and table disagree, get a note the table shows beside the target."""
        drv = driver_on(self.gpu, self.driver)
        fc = data.forward_compat()
        accepts = (
            self.gpu.segment in (None, *fc["supported_segments"]) or self.gpu.name in fc["supported_products"]
        )
        jetson = self.gpu.tegra or drv.platform == "jetson"  # R-FWD reads the JetPack table there
        note = fwd_warning(self.compat, drv) if self.compat is not None and accepts and not jetson else None
        if note:
            drv = _noted(drv, note)
        if drv != self.driver:
            object.__setattr__(self, "driver", drv)

    @property
    def cc(self) -> CC:
        return self.gpu.cc

    @property
    def host_arch(self) -> str | None:
        """The CPU architecture of the machine the GPU sits in: as given (a doctor report's
        ``stack.machine``, a fleet entry's ``host_arch``), else the only one the named GPU is sold
        with (``hosts.json``: Jetson, DGX Spark, Grace superchips are aarch64); None: not known,
        or a GPU given by number (an architecture asked for, not a product)."""
        if self.host == ANY_HOST:  # judged for its device code only, whatever the host
            return None
        if self.host:
            return self.host
        if self.gpu.name.startswith("CC "):  # a number (--gpu 8.7, --require sm_87): no product, no host
            return None
        archs = data.host_archs(self.gpu.name, self.gpu.segment, self.gpu.tegra)
        return archs[0] if archs and len(archs) == 1 else None

    @property
    def umd(self) -> Driver:
        """The user-mode driver programs talk to: the compat package's when one is in use (R-FWD
        decides whether that is allowed), else the installed driver. R-DRV, R-MVC and R-PTX-ISA
        use it; R-GPU uses the kernel driver (``driver``)."""
        return self.compat.driver if self.compat is not None else self.driver

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
        compat = f" + {self.compat.package}" if self.compat else ""
        assumed = " (assumed)" if self.driver.assumed else ""
        return f"{where}{gpu}, driver {self.driver.version}{assumed}{compat}"


@dataclass(frozen=True)
class LocalDevices:
    """This machine's GPUs and driver for ``--gpu auto`` / ``--driver auto``, probed by the caller
    (``system.stack.local_devices``; the engine never probes). ``gpus``: (name, CC) per GPU, None
    when neither NVML nor cuda-python could be used; ``driver``: the version, None when unknown."""

    gpus: tuple[tuple[str, CC], ...] | None = None
    driver: str | None = None
    compat: tuple[str, str] | None = None  # (CUDA, folder) of a cuda-compat libcuda the loader picks


NOT_PROBED = LocalDevices()


def wants_local(gpus: Sequence[str], driver: str | None) -> tuple[bool, bool]:
    """(a GPU query is ``auto``, the driver is ``auto``): what the caller must probe."""
    return any(q.strip().lower() == "auto" for q in gpus), (driver or "").strip().lower() == "auto"


def resolve_targets(
    gpus: Sequence[str],
    driver: str | None,
    env: dict[str, str] | None = None,
    local: LocalDevices = NOT_PROBED,
    compat: str | None = None,
) -> tuple[Target, ...]:
    """One target per GPU query (``auto`` gives one per GPU model in ``local``), all with one driver.

    ``compat`` names a forward-compatibility package (``13.4``, ``cuda-compat-13-4``); without one,
    ``--driver auto`` takes the cuda-compat libcuda the caller found in ``local``."""
    if not gpus:
        raise UsageError(
            "no --gpu given: name the GPUs to judge with --gpu (a name such as 'RTX 4090', a compute "
            "capability '8.9', 'sm_89', or 'auto'), --targets FILE (doctor JSON or fleet TOML), or "
            "(check) targets = [{ gpu = 'H100' }] in [tool.fatbin-inspect] of pyproject.toml"
        )
    force, disable = jit_switches(env or {})
    drv = resolve_driver(driver, local.driver)
    pkg = _compat_package(compat, driver, local)
    out: list[Target] = []
    for q in gpus:
        for g in _gpus_of(q, local):
            t = Target(g, drv, force, disable, compat=pkg)
            if t not in out:
                out.append(t)
    return tuple(out)


def _compat_package(compat: str | None, driver: str | None, local: LocalDevices) -> Compat | None:
    """``--compat``, else (``--driver auto``) the cuda-compat libcuda the caller found."""
    if compat:
        return resolve_compat(compat)
    if local.compat and wants_local((), driver)[1]:
        return resolve_compat(local.compat[0], source=f"libcuda from {local.compat[1]}")
    return None


def _gpus_of(query: str, local: LocalDevices) -> tuple[Gpu, ...]:
    return local_gpus(local) if query.strip().lower() == "auto" else (resolve_gpu(query),)


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
    known = _rows_of_cc(data.gpus(), cc)
    tegra = cc in data.tegra_ccs() if not known else any(g["tegra_igpu"] for g in known)
    named = _named(known, name) if name else []
    return Gpu(
        name=name or f"CC {cc[0]}.{cc[1]}",
        cc=cc,
        tegra=tegra,
        architecture=_only({g["architecture"] for g in known}),
        confidence="high" if known else "low",
        segment=_only({g["segment"] for g in named or known}),
    )


def _named(rows: list[dict], name: str) -> list[dict]:
    """The rows of products called ``name`` (as sold, or as nvidia-smi prints it)."""
    return [g for g in rows if name in (g["name"], *g.get("nvidia_smi_names", ()))]


def _rows_of_cc(rows: list[dict], cc: CC) -> list[dict]:
    return [g for g in rows if data.parse_cc(g["compute_capability"]) == cc]


def _only(values: set[str | None]) -> str | None:
    """The one value all rows share, else None."""
    return next(iter(values)) if len(values) == 1 else None


def _by_name(query: str) -> Gpu:
    if not gpu_names.tokens(query):
        raise UsageError(f"--gpu {query!r}: empty GPU name")
    found = gpu_names.narrow(gpu_names.match(query))
    if not found:
        raise UsageError(
            f"--gpu {query!r}: no known GPU matches; closest: {', '.join(closest_names(query)) or 'none'} "
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
        segment=best["segment"],
    )


def closest_names(query: str, n: int = 5) -> list[str]:
    """Known names most like the query, in this order: names sharing more of its words (``RTX5900``:
    the RTX names, not T500), a model number of the query's length one edit away (5090 and 5000,
    not 500), then the best run of as many words as the query by ``difflib`` (at least 0.5)."""
    qt = gpu_names.loose_tokens(query)
    scores: dict[str, tuple] = {}
    for g in data.gpus():
        for nm in gpu_names.names_of(g):
            score = _likeness(qt, gpu_names.tokens(nm))
            scores[nm] = max(score, scores.get(nm, score))
    best = sorted(
        (nm for nm, s in scores.items() if s[2] >= 0.5), key=lambda nm: (*(-x for x in scores[nm]), len(nm))
    )
    return best[:n]


def _likeness(qt: Sequence[str], toks: Sequence[str]) -> tuple[int, bool, float]:
    """(words shared, a model number one edit away, best ``difflib`` ratio of a run of words)."""
    q, qmodels = " ".join(qt), gpu_names.model_tokens(qt)
    k = min(len(qt), len(toks))
    windows = [" ".join(toks[i : i + k]) for i in range(len(toks) - k + 1)] or [""]
    ratio = max(difflib.SequenceMatcher(None, q, w).ratio() for w in windows)
    near = min(
        (_edits(a, b) for a in qmodels for b in gpu_names.model_tokens(toks) if len(a) == len(b)),
        default=99,
    )
    return (len(set(qt) & set(toks)), near <= 1, ratio)


def _edits(a: str, b: str) -> int:
    """Edits between two equal-length words, a swap of neighbours counting one (5900 -> 5090)."""
    i, out = 0, 0
    while i < len(a):
        if a[i] != b[i]:
            out += 1
            if i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i]:
                i += 1
        i += 1
    return out


def search_gpus(query: str | None = None, cc: str | None = None) -> list[dict]:
    """Known GPUs, sorted by compute capability then name: all of them, those ``query`` names
    (words as for ``--gpu``, or a compute capability / SM), those of compute capability ``cc``."""
    rows = data.gpus()
    if cc is not None:
        if not _is_cc(cc):
            raise UsageError(f"--cc {cc!r}: expected a compute capability such as 9.0 or sm_90")
        rows = _rows_of_cc(rows, resolve_gpu(cc).cc)
    if query and _is_cc(query):
        rows = _rows_of_cc(rows, resolve_gpu(query).cc)
    elif query:
        rows = [m.row for m in gpu_names.match(query, rows, listing=True)]
    return sorted(rows, key=gpu_names.sort_key)


def _is_cc(text: str) -> bool:
    return _CC_RE.fullmatch(text.strip().lower()) is not None


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
_DRIVER_RE = re.compile(r"[rR]?(\d{3})((?:\.\d+){0,2})")
_DEVICE_MANAGER_RE = re.compile(r"(\d{2})\.(\d+)\.(\d{1,2})\.(\d{4})")


def resolve_driver(text: str | None, local_driver: str | None = None) -> Driver:
    """``local_driver``: the version the caller probed, used for ``auto``. Tried in this order: a
    Jetson release or number, Device Manager's form, a Linux or Windows number or branch."""
    if text is None or not text.strip():
        return _assumed_driver()
    text = text.strip()
    if text.lower() == "auto":
        text = _local_driver(local_driver)
    return _jetson_form(text) or _device_manager_form(text) or _numbered_form(text)


def _assumed_driver() -> Driver:
    """No ``--driver``: the newest branch the data confirms."""
    newest = [b for b in data.branches() if b.get("confidence") != "low"][-1]
    return _driver(
        newest["branch"],
        newest,
        assumed=True,
        note=f"no --driver given: assuming R{newest['branch']} (CUDA {newest['max_cuda_version']}), "
        "the newest driver branch the data confirms",
    )


def _local_driver(local_driver: str | None) -> str:
    if not local_driver:
        raise DeviceError(
            "--driver auto: cannot read the driver version (no NVIDIA driver, or "
            "nvidia-ml-py is not installed); give it as --driver 550.54.14"
        )
    return local_driver


def _jetson_form(text: str) -> Driver | None:
    """A JetPack / L4T release or a number a Jetson prints; None for any other form."""
    jetson = data.jetson_release(text) or data.jetson_driver(text)
    if jetson is not None:
        return _jetson_driver(text, jetson)
    if re.fullmatch(r"(?i)\s*(jetpack|jp|l4t)\b.*", text):
        raise UsageError(
            f"--driver {text!r}: not a JetPack / L4T release in the data (e.g. jetpack-6.2, l4t-36.4)"
        )
    return None


def _device_manager_form(text: str) -> Driver | None:
    """Device Manager's ``32.0.15.8129`` (= 581.29: the last five digits); None for another form."""
    dm = _DEVICE_MANAGER_RE.fullmatch(text)
    if not dm:
        return None
    digits = f"{int(dm.group(3)) * 10000 + int(dm.group(4)):05d}"[-5:]
    win = f"{int(digits[:3])}.{digits[3:]}"
    drv = _windows_driver(win, text)
    if drv is None:
        raise UsageError(f"--driver {text!r}: {win} is not a known Windows driver number")
    return drv


def _numbered_form(text: str) -> Driver:
    """A Linux version (``550.54.14``), a branch (``550``, ``R550``) or a Windows number (``581.29``)."""
    m = _DRIVER_RE.fullmatch(text)
    if not m:
        raise UsageError(
            f"--driver {text!r}: expected a Linux driver version (550.54.14), a branch (550), a Windows "
            "version (581.29, or Device Manager's 32.0.15.8129), a Jetson release (jetpack-6.2, l4t-36.4) "
            "or 'auto'"
        )
    branch = int(m.group(1))
    linux_form = m.group(2).count(".") == 2  # 550.54.14: Windows numbers have two parts (581.29)
    if data.branch_row(branch) is None and not linux_form:
        win = _windows_driver(text.lstrip("rR"), None)
        if win is not None:
            return win
    return _branch_driver(text, branch, linux_form)


def _branch_driver(text: str, branch: int, linux_form: bool) -> Driver:
    """The limits of ``branch``, or of the newest known branch below it (with a note)."""
    rows = data.branches()
    known = [b for b in rows if int(b["branch"]) <= branch]
    if not known:
        raise UsageError(f"--driver {text!r}: older than every known branch (oldest R{rows[0]['branch']})")
    row, note = known[-1], None
    if int(row["branch"]) != branch:
        note = f"branch {branch} is not in the data; using the limits of R{row['branch']}"
    platform = "linux" if linux_form else None  # 550.54 is either
    return _driver(text.lstrip("rR"), row, note=note, platform=platform)


def _windows_driver(version: str, shown_as: str | None) -> Driver | None:
    """A Windows driver number (581.29) -> its branch's limits; None when no branch fits."""
    branch = data.windows_branch(data.leading_int(version))
    row = data.branch_row(branch) if branch is not None else None
    if row is None:
        return None
    form = f" (Device Manager shows {shown_as})" if shown_as else ""
    return _driver(
        version,
        row,
        note=f"Windows driver {version}{form} belongs to branch R{branch} (CUDA {row['max_cuda_version']})",
        platform="windows",
    )


def _jetson_driver(text: str, rel: dict) -> Driver:
    """JetPack / L4T release, or the driver number a Jetson prints (``540.4.0``) -> the branch row
    of the CUDA version its BSP driver implements (the desktop branch of that number is not it)."""
    cuda = data.version_tuple(rel["cuda"])
    rows = [b for b in data.branches() if data.version_tuple(b["max_cuda_version"]) <= cuda]
    same = [b for b in rows if data.version_tuple(b["max_cuda_version"]) == cuda]
    row = same[0] if same else rows[-1]
    printed = f"driver {text} is what JetPack" if "driver" in rel else "JetPack"
    shows = " prints" if "driver" in rel else ""
    if rel.get("by_rule"):  # a 540.x number not listed: read by its line's rule
        printed, shows = (
            f"driver {text} reads as JetPack",
            ", by the numbering of its line (not listed: low confidence)",
        )
    return dataclasses.replace(
        _driver(
            text,
            row,
            note=f"Jetson: {printed} {rel['jetpack']} (L4T {rel['l4t']}){shows}, a CUDA {rel['cuda']} driver; "
            f"judged with the limits of R{row['branch']}",
            platform="jetson",
        ),
        jetpack=rel["jetpack"],
    )


def driver_on(gpu: Gpu, drv: Driver) -> Driver:
    """``drv`` read for ``gpu``: on a Jetson a number only Jetsons print (``580.00``, JetPack 7.0)
    is its JetPack driver, and any other desktop number gets the note that it is one; a JetPack
    release for a module it does not support, or a Jetson driver for a GPU that is none, too."""
    if drv.assumed:
        return drv
    if gpu.tegra and drv.platform != "jetson":
        return _desktop_number_on_jetson(gpu, drv)
    if drv.platform != "jetson" or not drv.jetpack:
        return drv
    return _jetson_driver_on(gpu, drv, drv.jetpack)


def _desktop_number_on_jetson(gpu: Gpu, drv: Driver) -> Driver:
    row = data.jetson_driver(drv.version, jetson_gpu=True)
    if row is not None:
        return driver_on(gpu, _jetson_driver(drv.version, row))
    return _noted(
        drv,
        f"{gpu.name} is a Jetson: its driver comes with JetPack/L4T (--driver jetpack-6.2), "
        f"but {drv.version} is a desktop driver number; judged as CUDA {drv.cuda}",
    )


def _jetson_driver_on(gpu: Gpu, drv: Driver, jetpack: str) -> Driver:
    """A JetPack driver on a GPU that is no Jetson, or on a module its line does not support."""
    if not gpu.tegra and gpu.segment is not None:
        return _noted(
            drv, f"{drv.version} is a Jetson (JetPack {drv.jetpack}) driver, but {gpu.name} is no Jetson"
        )
    line = data.jetson_line(jetpack, "platforms")
    cc = f"{gpu.cc[0]}.{gpu.cc[1]}"
    if gpu.tegra and line is not None and cc not in line["ccs"]:
        who = gpu.name if gpu.name == f"CC {cc}" else f"{gpu.name} (CC {cc})"
        return _noted(drv, f"JetPack {drv.jetpack} does not support {who}")
    return drv


def _noted(drv: Driver, note: str) -> Driver:
    """``drv`` with ``note`` added once (a target is rebuilt by ``dataclasses.replace``)."""
    if note in (drv.note or ""):
        return drv
    return dataclasses.replace(drv, note=f"{drv.note}; {note}" if drv.note else note)


def fwd_warning(compat: Compat, base: Driver) -> str | None:
    """Where NVIDIA's forward-compatibility table marks a package compatible (C) with a base
    branch that its prose or its driver lifecycle rules out, the table decides and this says so."""
    if base.platform == "jetson" or data.fwd_cell(compat.cuda, base.branch) != "C":
        return None
    row = data.branch_row(base.branch) or {}
    why = []
    if row.get("type") == "new-feature":
        why.append(f"new feature branches (R{base.branch} is one)")
    if data.branch_ended(row):
        eol = row.get("end_of_life")
        when = f" (R{base.branch}'s was {eol})" if eol and eol != "ended" else f" (R{base.branch} is one)"
        why.append(f"branches past their end of life{when}")
    if not why:
        return None
    return (
        f"NVIDIA's forward-compatibility table marks {compat.package} compatible with R{base.branch}, but its "
        f"prose excludes {' and '.join(why)}: judged by the table (R-FWD, medium confidence)"
    )


def _driver(
    version: str, row: dict, assumed: bool = False, note: str | None = None, platform: str | None = None
) -> Driver:
    return Driver(
        version=str(version),
        branch=int(row["branch"]),
        cuda=row["max_cuda_version"],
        max_ptx_isa=row["max_ptx_isa_jit"],
        assumed=assumed,
        note=note,
        platform=platform,
    )


_COMPAT_RE = re.compile(r"(?:cuda-compat-)?(\d+)[.-](\d+)")


def resolve_compat(text: str, source: str | None = None) -> Compat:
    """``13.4`` / ``cuda-compat-13-4`` -> the package and the user-mode driver it carries."""
    m = _COMPAT_RE.fullmatch(text.strip().lower())
    if not m:
        raise UsageError(f"--compat {text!r}: expected a CUDA version such as 13.4 (or cuda-compat-13-4)")
    cuda = f"{int(m.group(1))}.{int(m.group(2))}"
    rows = [b for b in data.branches() if b["max_cuda_version"] == cuda]
    if not rows:
        raise UsageError(f"--compat {text!r}: no driver branch of CUDA {cuda} is known")
    row = next((b for b in rows if b.get("type") != "developer"), rows[0])
    return Compat(cuda, _driver(row["branch"], row, platform="linux"), source or f"--compat {text.strip()}")
