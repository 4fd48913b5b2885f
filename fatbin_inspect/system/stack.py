"""Discovery of this machine's CUDA stack, one frozen record per layer (``doctor``).

Every probe reads from a ``Roots`` (the /proc tree, library folders, PATH, site-packages, the
environment) and from replaceable hooks for what needs a real driver (NVML, ``cuDriverGetVersion``),
so the whole discovery runs against fake folders in tests. Nothing here initialises a CUDA context
or imports torch: NVML is tried first, cuda-python only when NVML is absent.

Which "CUDA version" each number is:
* kernel driver: the kernel module's version (``580.95.05``), from NVML or /proc/driver/nvidia/version;
* user-mode driver: ``libcuda.so.1``'s Driver API version (``cuDriverGetVersion``, 13000 = 13.0);
  its file name carries its own build (``libcuda.so.590.44.01``), which differs from the kernel
  driver exactly when a ``cuda-compat`` package is on the loader path;
* runtime: each ``libcudart``'s version (``cudaRuntimeGetVersion``, or the version in its file name
  or its wheel);
* nvcc: the toolkit that would build new code here.
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
import site
import socket
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fatbin_inspect.compat.data import parse_cc
from fatbin_inspect.compat.targets import NOT_PROBED, LocalDevices, wants_local

STANDARD_LIB_DIRS = (
    "/usr/local/cuda/lib64",
    "/usr/local/cuda/lib",
    "/usr/local/cuda/targets/x86_64-linux/lib",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/lib/wsl/lib",
)
# where wheels put libcudart, relative to a site-packages folder (nvidia-cuda-runtime-cu12:
# nvidia/cuda_runtime/lib; CUDA 13 wheels: nvidia/cu13/lib; vendored copies: torch/lib, *.libs)
SITE_CUDART_GLOBS = ("nvidia/*/lib/libcudart*.so*", "*/lib/libcudart*.so*", "*.libs/libcudart*.so*")
ENV_SWITCHES = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_MODULE_LOADING",
    "CUDA_FORCE_PTX_JIT",
    "CUDA_FORCE_JIT",
    "CUDA_DISABLE_PTX_JIT",
    "CUDA_DISABLE_JIT",
    "CUDA_FORCE_PRELOAD_LIBRARIES",
)
ENV_EFFECT = {
    "CUDA_VISIBLE_DEVICES": "limits and reorders the GPUs CUDA programs see (NVML still lists all)",
    "CUDA_DEVICE_ORDER": "FASTEST_FIRST (default) or PCI_BUS_ID ordering of device numbers",
    "CUDA_MODULE_LOADING": "LAZY (default) loads kernels at first use, EAGER at start-up",
    "CUDA_FORCE_PTX_JIT": "1: embedded cubins are ignored, every kernel is JIT-compiled from PTX",
    "CUDA_FORCE_JIT": "older spelling of CUDA_FORCE_PTX_JIT",
    "CUDA_DISABLE_PTX_JIT": "1: no JIT; a kernel without a matching cubin fails (223 or 209)",
    "CUDA_DISABLE_JIT": "older spelling of CUDA_DISABLE_PTX_JIT",
    "CUDA_FORCE_PRELOAD_LIBRARIES": "1: the JIT libraries are loaded at initialisation",
    "CUDA_CACHE_DISABLE": "1: JIT results are not cached; PTX is recompiled every run",
    "CUDA_CACHE_PATH": "JIT cache folder (default ~/.nv/ComputeCache)",
    "CUDA_CACHE_MAXSIZE": "JIT cache size in bytes (default 1 GiB; larger binaries are not cached)",
    "LD_LIBRARY_PATH": "searched before the ldconfig cache: decides which libcuda/libcudart load",
}
_CUDA_DIR = re.compile(r"cuda|nvidia|cudart", re.I)


@dataclass(frozen=True)
class LocalGpu:
    """A GPU as this machine reports it (NVML or cuda-python); ``compat.targets.Gpu`` is a GPU
    the engine judges for."""

    index: int
    name: str
    cc: str  # "9.0"
    tegra: bool
    uuid: str | None = None


@dataclass(frozen=True)
class KernelDriver:
    version: str  # "580.95.05"
    source: str  # "nvml" | path of the /proc file


@dataclass(frozen=True)
class UserDriver:
    """``libcuda.so.1`` as the loader finds it."""

    path: str
    build: str | None  # "590.44.01" from the real file name, None when it has no version
    api_version: int | None  # cuDriverGetVersion: 13000 = CUDA 13.0
    error: str | None = None  # why api_version is missing (stub library, load failure)


@dataclass(frozen=True)
class Runtime:
    """One ``libcudart`` found on disk."""

    path: str
    version: str | None  # "12.8" (major.minor), or "12" when only the soname tells
    found_via: str  # "LD_LIBRARY_PATH" | "ldconfig" | "standard dir" | "site-packages"
    distribution: str | None = None  # "nvidia-cuda-runtime-cu12 12.8.90" (dist-info RECORD, conda-meta)


@dataclass(frozen=True)
class Nvcc:
    path: str
    version: str | None  # "13.0.88"


@dataclass(frozen=True)
class BundledPtxas:
    """A ptxas a framework compiles with at run time (Triton: ``backends/nvidia/bin/ptxas``, or
    ``TRITON_PTXAS_PATH``): it must know the local GPU's SM, whatever nvcc the machine has."""

    path: str
    version: str | None  # "12.8.93" from ``ptxas --version``
    framework: str  # "triton"
    via: str  # "TRITON_PTXAS_PATH" | "bundled with triton <version>"


@dataclass(frozen=True)
class Torch:
    path: str  # the torch package folder
    version: str | None  # "2.8.0+cu128"
    cuda: str | None  # torch.version.cuda: "12.8", None for a CPU build
    archs: tuple[str, ...] = ()  # "sm_90", "compute_120" read from libtorch_cuda.so's fatbins
    archs_from: str | None = None  # the library the archs were read from
    ptx_isa: str | None = None  # newest PTX ISA among its PTX entries


@dataclass(frozen=True)
class EnvSwitch:
    name: str
    value: str
    effect: str


@dataclass(frozen=True)
class Stack:
    gpus: tuple[LocalGpu, ...] = ()
    kernel_driver: KernelDriver | None = None
    user_driver: UserDriver | None = None
    runtimes: tuple[Runtime, ...] = ()  # loader order first (the one a plain program gets), then wheels
    nvcc: Nvcc | None = None
    torch: Torch | None = None
    ptxas: tuple[BundledPtxas, ...] = ()  # framework-bundled ptxas (Triton), TRITON_PTXAS_PATH first
    env: tuple[EnvSwitch, ...] = ()
    missing: tuple[str, ...] = ()  # what could not be found, and why, one sentence each
    gpu_source: str | None = None  # "nvml" | "cuda-python"
    host: str | None = None  # this machine's host name: names the node when the report is a --targets file
    machine: str | None = (
        None  # its CPU architecture (platform.machine(): x86_64, aarch64): R-HOST of --targets
    )


# ------------------------------------------------------------------------------- roots and hooks
@dataclass(frozen=True)
class Roots:
    """Where the probes look. ``from_environment()`` gives this machine's."""

    proc: str = "/proc"
    etc: str = "/etc"
    env: Mapping[str, str] = field(default_factory=dict)
    lib_dirs: tuple[str, ...] = STANDARD_LIB_DIRS
    site_dirs: tuple[str, ...] = ()
    ldconfig: str | None = None  # `ldconfig -p` text; None: run it

    @classmethod
    def from_environment(cls) -> Roots:
        sites = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
        user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
        if user:
            sites.append(user)
        seen, dirs = set(), []
        for d in sites:
            real = os.path.realpath(d)
            if real not in seen and os.path.isdir(d):
                seen.add(real)
                dirs.append(d)
        return cls(env=dict(os.environ), site_dirs=tuple(dirs))


GpuProbe = Callable[[], tuple[list[LocalGpu], str | None, str | None]]  # gpus, driver version, error
DriverApiProbe = Callable[[str], tuple[int | None, str | None]]  # path -> version, error
RuntimeApiProbe = Callable[[str], int | None]  # libcudart path -> cudaRuntimeGetVersion


def discover(
    roots: Roots | None = None,
    gpu_probe: GpuProbe | None = None,
    driver_api: DriverApiProbe | None = None,
    runtime_api: RuntimeApiProbe | None = None,
    torch_archs: bool = True,
    tegra_ccs: Iterable[str] = (),
) -> Stack:
    """The whole stack. ``tegra_ccs``: compute capabilities that are Tegra iGPUs (data)."""
    roots = roots or Roots.from_environment()
    missing: list[str] = []
    gpus, nvml_driver, gpu_err, gpu_source = _gpus(gpu_probe, roots, set(tegra_ccs))
    if gpu_err:
        missing.append(gpu_err)
    kdrv = proc_driver_version(roots.proc)
    if kdrv is None and nvml_driver:
        kdrv = KernelDriver(nvml_driver, "nvml")
    ldcache = _ldconfig_entries(roots)
    udrv = user_driver(roots, ldcache, driver_api or driver_api_version)
    runtimes = find_runtimes(roots, ldcache, runtime_api or runtime_api_version)
    nvcc = find_nvcc(roots.env.get("PATH", ""))
    for absent, why in (
        (
            kdrv is None,
            f"no NVIDIA kernel driver: {os.path.join(roots.proc, 'driver/nvidia/version')} "
            "is absent and NVML gave no version",
        ),
        (udrv is None, "no libcuda.so.1 on the loader path (LD_LIBRARY_PATH, ldconfig, standard folders)"),
        (not runtimes, "no libcudart found on the loader path or in site-packages"),
        (nvcc is None, "no nvcc on PATH"),
    ):
        if absent:
            missing.append(why)
    return Stack(
        gpus=tuple(gpus),
        kernel_driver=kdrv,
        user_driver=udrv,
        runtimes=tuple(runtimes),
        nvcc=nvcc,
        torch=find_torch(roots.site_dirs, torch_archs),
        ptxas=find_bundled_ptxas(roots),
        env=env_switches(roots.env),
        missing=tuple(missing),
        gpu_source=gpu_source,
        host=socket.gethostname() or None,
        machine=_machine(),
    )


def _machine() -> str | None:
    """This machine's CPU architecture as R-HOST names it (``arm64`` on macOS is ``aarch64``)."""
    import platform

    m = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m) or None


# ------------------------------------------------------------------------------------- GPUs
def _gpus(
    probe: GpuProbe | None, roots: Roots, tegra_ccs: set[str]
) -> tuple[list[LocalGpu], str | None, str | None, str | None]:
    if probe is not None:
        gpus, drv, err = probe()
        return gpus, drv, err, "injected"
    errors = []
    for name, fn in (("nvml", nvml_gpus), ("cuda-python", cuda_python_gpus)):
        gpus, drv, err = fn()
        if err is None:
            tegra_board = os.path.exists(os.path.join(roots.etc, "nv_tegra_release"))
            gpus = [
                LocalGpu(g.index, g.name, g.cc, g.tegra or tegra_board or g.cc in tegra_ccs, g.uuid)
                for g in gpus
            ]
            return gpus, drv, None if gpus else f"{name}: no GPU visible", name
        errors.append(f"{name}: {err}")
    return [], None, "no GPU found (" + "; ".join(errors) + ")", None


def nvml_gpus() -> tuple[list[LocalGpu], str | None, str | None]:
    """GPUs and the kernel driver version through NVML (``pip install nvidia-ml-py``)."""
    try:
        import pynvml
    except ImportError:
        return [], None, "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return [], None, f"NVML unavailable ({exc})"
    try:
        drv = _text(pynvml.nvmlSystemGetDriverVersion())
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            gpus.append(
                LocalGpu(
                    i,
                    _text(pynvml.nvmlDeviceGetName(h)),
                    f"{major}.{minor}",
                    False,
                    _text(pynvml.nvmlDeviceGetUUID(h)),
                )
            )
        return gpus, drv, None
    except Exception as exc:
        return [], None, f"NVML query failed ({exc})"
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def cuda_python_gpus() -> tuple[list[LocalGpu], str | None, str | None]:
    """GPUs through cuda-python (``cuInit``: used only when NVML is missing, e.g. on Jetson)."""
    from fatbin_inspect.system import cudadrv

    try:
        drv = cudadrv.bindings()
        cudadrv.check(drv.cuInit(0), "cuInit")
        count = cudadrv.check(drv.cuDeviceGetCount(), "cuDeviceGetCount")
        attr = drv.CUdevice_attribute
        gpus = []
        for i in range(count):
            dev = cudadrv.check(drv.cuDeviceGet(i), "cuDeviceGet")
            name = cudadrv.check(drv.cuDeviceGetName(256, dev), "cuDeviceGetName")
            major = cudadrv.check(
                drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), ""
            )
            minor = cudadrv.check(
                drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), ""
            )
            gpus.append(LocalGpu(i, _text(name).split("\0", 1)[0], f"{major}.{minor}", False))
        return gpus, None, None
    except Exception as exc:  # DeviceError from cudadrv, or a binding mismatch
        return [], None, str(exc)


def _text(v: object) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


# ---------------------------------------------------------------------------------- drivers
_PROC_VERSION = re.compile(r"Kernel Module(?: for [\w]+)?\s+(\d+\.\d+(?:\.\d+)?)")


def local_devices(gpus: Sequence[str], driver: str | None) -> LocalDevices:
    """Probe what ``--gpu auto`` / ``--driver auto`` in ``gpus``/``driver`` need (nothing otherwise):
    GPUs through NVML, else cuda-python; the driver version through NVML, else /proc."""
    want_gpus, want_driver = wants_local(gpus, driver)
    if not (want_gpus or want_driver):
        return NOT_PROBED
    probed, version = _local_gpus(want_gpus)
    if want_driver and version is None:
        version = _proc_version()
    compat = _local_compat(version) if want_driver else None
    return LocalDevices(gpus=probed, driver=version, compat=compat)


def _local_gpus(wanted: bool) -> tuple[tuple | None, str | None]:
    """((name, CC) of the GPUs NVML, else cuda-python, sees: None unless ``wanted``; NVML's
    driver version or None)."""
    found, version, err = nvml_gpus()
    probed = None if err else [(g.name, parse_cc(g.cc)) for g in found]
    if wanted and probed is None:
        probed = _cuda_python_ccs()
    return (tuple(probed) if wanted and probed is not None else None), version


def _cuda_python_ccs() -> list:
    """(name, CC) of the GPUs cuda-python sees (none when it cannot be asked)."""
    found, _version, err = cuda_python_gpus()
    return [] if err else [(g.name, parse_cc(g.cc)) for g in found]


def _proc_version() -> str | None:
    kernel = proc_driver_version("/proc")
    return kernel.version if kernel is not None else None


def _local_compat(kernel_version: str | None) -> tuple[str, str] | None:
    """(CUDA, folder) of the cuda-compat libcuda the loader picks, for ``--driver auto`` (R-FWD)."""
    found = compat_package(loaded_user_driver(), kernel_version)
    return (found.cuda, found.folder) if found is not None and found.cuda else None


def proc_driver_version(proc: str) -> KernelDriver | None:
    """``NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue ...`` (open modules say
    ``Open Kernel Module for x86_64``)."""
    path = os.path.join(proc, "driver", "nvidia", "version")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(4096)
    except OSError:
        return None
    m = _PROC_VERSION.search(text)
    return KernelDriver(m.group(1), path) if m else None


def user_driver(
    roots: Roots, ldcache: list[tuple[str, str]], driver_api: DriverApiProbe
) -> UserDriver | None:
    hits = _loader_hits("libcuda.so.1", roots, ldcache)
    if not hits:
        return None
    path = hits[0][0]
    real = os.path.basename(os.path.realpath(path))
    m = re.match(r"libcuda\.so\.(\d+\.\d+(?:\.\d+)?)$", real)
    api, err = driver_api(path)
    return UserDriver(path=path, build=m.group(1) if m else None, api_version=api, error=err)


_COMPAT_DIR = re.compile(
    r"(?:^|/)(?:cuda-compat[-_]?(\d+)[-.](\d+)[^/]*|[^/]*?(?:cuda-(\d+)\.(\d+))?[^/]*/compat)(?:/|$)"
)


@dataclass(frozen=True)
class CompatPackage:
    """A libcuda loaded from a cuda-compat folder whose build is not the kernel driver's."""

    cuda: str | None  # "13.4" from cuDriverGetVersion or the folder name; None when neither says
    build: str | None  # "615.71.09" from the library's file name
    folder: str


def compat_package(
    udrv: UserDriver | None, kernel_version: str | None, local: bool = True
) -> CompatPackage | None:
    """The forward-compatibility package in use: libcuda's real path lies in a ``cuda-compat``
    folder (``/usr/local/cuda-13.4/compat``, a conda ``cuda-compat`` prefix) and its build differs
    from the kernel driver (a compat libcuda of the installed build changes nothing). ``local``:
    the path is on this machine (links are followed); a path from another machine's report is not."""
    if udrv is None:
        return None
    folder = os.path.dirname(os.path.realpath(udrv.path) if local else udrv.path)
    m = _COMPAT_DIR.search(folder)
    if not m:
        return None
    if udrv.build and kernel_version and udrv.build == kernel_version:
        return None
    return CompatPackage(_compat_cuda(udrv, m), udrv.build, folder)


def _compat_cuda(udrv: UserDriver, m: re.Match) -> str | None:
    """The CUDA a compat libcuda implements: its Driver API version, else its folder's name
    (``cuda-13.4/compat``), else its build's branch (drivers.json)."""
    if udrv.api_version:
        return f"{udrv.api_version // 1000}.{udrv.api_version % 1000 // 10}"
    if m.group(1) or m.group(3):
        return f"{int(m.group(1) or m.group(3))}.{int(m.group(2) or m.group(4))}"
    if not udrv.build:
        return None
    from fatbin_inspect.compat import data

    row = data.branch_row(data.leading_int(udrv.build))
    return row["max_cuda_version"] if row else None


def loaded_user_driver(roots: Roots | None = None) -> UserDriver | None:
    """The libcuda.so.1 this machine's loader picks (LD_LIBRARY_PATH, ldconfig, standard folders)."""
    roots = roots or Roots.from_environment()
    return user_driver(roots, _ldconfig_entries(roots), driver_api_version)


def driver_api_version(path: str) -> tuple[int | None, str | None]:
    """``cuDriverGetVersion`` through ctypes: needs no GPU and creates no context."""
    try:
        lib = ctypes.CDLL(path)
        v = ctypes.c_int(0)
        rc = lib.cuDriverGetVersion(ctypes.byref(v))
    except (OSError, AttributeError) as exc:
        return None, f"cannot load {path}: {exc}"
    if rc != 0:
        return None, f"cuDriverGetVersion returned {rc}" + (" (stub library)" if rc == 34 else "")
    return v.value, None


# --------------------------------------------------------------------------------- runtimes
def _ldconfig_entries(roots: Roots) -> list[tuple[str, str]]:
    """(soname, path) pairs of the loader cache."""
    text = roots.ldconfig
    if text is None:
        try:
            text = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            text = ""
    wide = ctypes.sizeof(ctypes.c_void_p) == 8
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)", line)
        # "(libc6,x86-64)" / "(libc6,AArch64)": 64-bit; a bare "(libc6)" on a 64-bit host is 32-bit
        if m and not (wide and m.group(2) == "libc6"):
            out.append((m.group(1), m.group(3)))
    return out


def _ld_library_path(env: Mapping[str, str]) -> list[str]:
    return [d for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]


def _loader_hits(prefix: str, roots: Roots, ldcache: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Files whose name starts with ``prefix``, in the loader's order: LD_LIBRARY_PATH, the ldconfig
    cache, then standard folders (a program with an RPATH may still pick another one)."""
    hits: list[tuple[str, str]] = []
    seen = set()

    def add(path: str, via: str) -> None:
        real = os.path.realpath(path)
        if real not in seen and os.path.isfile(path):
            seen.add(real)
            hits.append((path, via))

    for d in _ld_library_path(roots.env):
        for p in sorted(glob.glob(os.path.join(glob.escape(d), prefix + "*"))):
            add(p, "LD_LIBRARY_PATH")
    for soname, p in ldcache:
        if soname.startswith(prefix):
            add(p, "ldconfig")
    for d in roots.lib_dirs:
        for p in sorted(glob.glob(os.path.join(glob.escape(d), prefix + "*"))):
            add(p, "standard dir")
    return hits


def find_runtimes(
    roots: Roots, ldcache: list[tuple[str, str]], runtime_api: RuntimeApiProbe
) -> list[Runtime]:
    from fatbin_inspect.scanning.distributions import Attributor

    found = [(p, via) for p, via in _loader_hits("libcudart.so", roots, ldcache)]
    seen = {os.path.realpath(p) for p, _ in found}
    for sd in roots.site_dirs:
        for pattern in SITE_CUDART_GLOBS:
            for p in sorted(glob.glob(os.path.join(glob.escape(sd), pattern))):
                real = os.path.realpath(p)
                if real not in seen and os.path.isfile(p):
                    seen.add(real)
                    found.append((p, "site-packages"))
    owners = Attributor()  # dist-info RECORD / conda-meta, read only for folders holding a libcudart
    out = []
    for path, via in found:
        dist = owners.distribution(path) if via == "site-packages" else None
        out.append(Runtime(path, runtime_version(path, dist, runtime_api), via, dist))
    return out


def runtime_version(path: str, dist: str | None, runtime_api: RuntimeApiProbe) -> str | None:
    """File name (libcudart.so.12.8.90), then ``cudaRuntimeGetVersion``, then the wheel's version
    (nvidia-cuda-runtime-cu12 12.8.90), then the soname major alone."""
    real = os.path.basename(os.path.realpath(path))
    m = re.search(r"\.so\.(\d+)\.(\d+)", real)
    if m:
        return f"{m.group(1)}.{m.group(2)}"
    v = runtime_api(path)
    if v:
        return f"{v // 1000}.{v % 1000 // 10}"
    if dist:
        m = re.search(r" (\d+)\.(\d+)", dist)
        if m and "runtime" in dist:
            return f"{m.group(1)}.{m.group(2)}"
    m = re.search(r"\.so\.(\d+)", real)
    return m.group(1) if m else None


def runtime_api_version(path: str) -> int | None:
    """``cudaRuntimeGetVersion`` through ctypes; the runtime answers without a driver."""
    try:
        lib = ctypes.CDLL(path)
        v = ctypes.c_int(0)
        return v.value if lib.cudaRuntimeGetVersion(ctypes.byref(v)) == 0 else None
    except (OSError, AttributeError):
        return None


# ------------------------------------------------------------------------------ nvcc, torch
# Where Triton keeps the ptxas it runs: 3.x under backends/nvidia/bin, 2.x under third_party/cuda/bin.
TRITON_PTXAS = ("triton/backends/nvidia/bin/ptxas", "triton/third_party/cuda/bin/ptxas")


def find_bundled_ptxas(roots: Roots) -> tuple[BundledPtxas, ...]:
    """``TRITON_PTXAS_PATH`` (what Triton uses when set), then the ptxas each Triton install ships."""
    out: list[BundledPtxas] = []
    env = roots.env.get("TRITON_PTXAS_PATH")
    if env and os.path.isfile(env):
        out.append(BundledPtxas(env, tool_version(env), "triton", "TRITON_PTXAS_PATH"))
    for d in roots.site_dirs:
        for rel in TRITON_PTXAS:
            exe = os.path.join(d, rel)
            if os.path.isfile(exe) and all(os.path.realpath(exe) != os.path.realpath(p.path) for p in out):
                ver = _py_attr(os.path.join(d, "triton", "__init__.py"), "__version__")
                via = f"bundled with triton {ver}" if ver else "bundled with triton"
                out.append(BundledPtxas(exe, tool_version(exe), "triton", via))
    return tuple(out)


def tool_version(exe: str) -> str | None:
    """``V12.8.93`` (or ``release 12.8``) from an NVIDIA tool's ``--version``; None if it will not run."""
    if not os.access(exe, os.X_OK):
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"V(\d+\.\d+(?:\.\d+)?)", out) or re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


def find_nvcc(path_var: str) -> Nvcc | None:
    for d in path_var.split(os.pathsep):
        exe = os.path.join(d, "nvcc")
        if d and os.path.isfile(exe) and os.access(exe, os.X_OK):
            return Nvcc(exe, tool_version(exe))
    return None


_PY_ASSIGN = r"^{name}\s*(?::[^=]*)?=\s*['\"]([^'\"]*)['\"]"


def _py_attr(path: str, name: str) -> str | None:
    """``name = '...'`` at the start of a line of a Python file (read, never imported)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(65536)
    except OSError:
        return None
    m = re.search(_PY_ASSIGN.format(name=name), text, re.M)
    return m.group(1) if m else None


def find_torch(site_dirs: Iterable[str], archs: bool = True) -> Torch | None:
    """torch from its ``version.py`` text (never imported, so CUDA is never initialised); the archs
    from the fatbins of ``lib/libtorch_cuda.so`` (what ``torch.cuda.get_arch_list()`` reports)."""
    for sd in site_dirs:
        vfile = os.path.join(sd, "torch", "version.py")
        try:
            with open(vfile, encoding="utf-8", errors="replace") as fh:
                text = fh.read(65536)
        except OSError:
            continue
        ver = re.search(_PY_ASSIGN.format(name="__version__"), text, re.M)
        cuda = re.search(_PY_ASSIGN.format(name="cuda"), text, re.M)
        lib = os.path.join(sd, "torch", "lib", "libtorch_cuda.so")
        found: tuple[str, ...] = ()
        isa = None
        if archs and os.path.isfile(lib):
            found, isa = library_archs(lib)
        return Torch(
            os.path.join(sd, "torch"),
            ver.group(1) if ver else None,
            cuda.group(1) if cuda else None,
            found,
            lib if found else None,
            isa,
        )
    return None


def library_archs(path: str) -> tuple[tuple[str, ...], str | None]:
    """Distinct cubin and PTX archs in a library, ordered as torch prints them (sm_ first), and the
    newest PTX ISA among them."""
    from fatbin_inspect.inventory.options import Options
    from fatbin_inspect.inventory.reader import inspect_path

    seen, isas = set(), set()
    for rec in inspect_path(path, Options()):
        for e in rec.entries:
            if e.kind in ("sass", "ptx"):
                seen.add((e.kind != "sass", e.sm, e.variant, e.arch))
            if e.kind == "ptx":
                isas.add(e.code_version)
    return tuple(a for *_k, a in sorted(seen)), "{}.{}".format(*max(isas)) if isas else None


# --------------------------------------------------------------------------------------- env
def env_switches(env: Mapping[str, str]) -> tuple[EnvSwitch, ...]:
    out = [EnvSwitch(n, env[n], ENV_EFFECT[n]) for n in ENV_SWITCHES if n in env]
    for n in sorted(k for k in env if k.startswith("CUDA_CACHE_")):
        out.append(EnvSwitch(n, env[n], ENV_EFFECT.get(n, "JIT cache setting")))
    cuda_dirs = [d for d in _ld_library_path(env) if _CUDA_DIR.search(d)]
    if cuda_dirs:
        out.append(EnvSwitch("LD_LIBRARY_PATH", os.pathsep.join(cuda_dirs), ENV_EFFECT["LD_LIBRARY_PATH"]))
    return tuple(out)
