"""Which CUDA runtime a file needs (the input of R-DRV and R-MVC).

Evidence, strongest first:
* ``DT_NEEDED libcudart.so.N`` / PE import ``cudart64_N.dll`` (``FileReport.needs``). Since CUDA 11
  only the major matters (minor-version compatibility); the sonames say so too: every 11.x runtime
  is ``libcudart.so.11.0`` / ``cudart64_110.dll``, every 12.x ``libcudart.so.12`` / ``cudart64_12.dll``.
  Before 11 the minor is part of the name (``libcudart.so.10.1``, ``cudart64_101.dll``).
* A wheel's ``Requires-Dist`` on ``nvidia-cuda-runtime[-cuNN]``, ``cuda-toolkit[cudart]==X.Y`` or any
  ``nvidia-*-cuNN`` library (major only).
* A bundled copy renamed by auditwheel/delvewheel (``libcudart-3b2a1c4d.so.12.0.107``,
  ``cudart64_12-<hash>.dll``): the version is in the name's tail.
* What the distribution declares when the file itself says nothing (R-RT 5, medium): the folder
  it is installed in (NVIDIA's CUDA 13 wheels install under ``nvidia/cu13/``, toolkits under
  ``cuda-12.4/``), the distribution's name (``nvidia-cufft-cu12``, ``cupy-cuda12x``), a cudart
  beside it (``libcudart.so.13`` in the same folder). Without any of these the runtime is not
  known and the verdict says so (the driver check is not made); the toolkit that built a file's
  cubins is no such evidence (a driver-API library links no runtime).
* A statically linked cudart carries no version string; the inventory finds its marker
  (``FileReport.static_cudart``, ``containers.has_static_cudart``), and nvcc links the static
  cudart of the toolkit whose ptxas built the file's cubins, so the version is taken from the
  cubins' ``.note.nv.tkinfo`` ("ptxas 13.0.88"), medium confidence. A file without kernels
  (bindings, launchers, plugins) has no cubins: there, the newest CUDA release its cudart's
  driver entry-point requests name (``FileReport.static_cudart_version``), medium confidence.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from fatbin_inspect.formats.model import FileReport, Requirement


@dataclass(frozen=True)
class RuntimeNeed:
    version: str  # "12" (a family, 11+) or "10.1" (exact, before 11) or "12.4" (wheel pin)
    source: str  # the evidence, e.g. "DT_NEEDED libcudart.so.12"
    confidence: str = "high"
    windows: bool = False  # a Windows binary (cudart64_*.dll): judged against Windows driver numbers

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def minor(self) -> int | None:
        parts = self.version.split(".")
        return int(parts[1]) if len(parts) > 1 else None


def from_needs(needs: Iterable[str]) -> RuntimeNeed | None:
    """From linked library names; None when no CUDA runtime is linked dynamically."""
    for name in needs:
        low = name.lower()
        m = re.fullmatch(r"libcudart(-[0-9a-z]+)?\.so\.(\d+)(?:\.(\d+))?(?:\.\d+)*", low)
        if m:
            bundled = " (a bundled copy, renamed by auditwheel)" if m.group(1) else ""
            return RuntimeNeed(_family(int(m.group(2)), m.group(3)), f"DT_NEEDED {name}{bundled}")
        m = re.fullmatch(r"cudart(?:64|32)_(\d+)(-[0-9a-z]+)?\.dll", low)
        if m:
            d = m.group(1)
            if len(d) == 2 and int(d) >= 11:
                version = d
            else:
                version = _family(int(d[:-1]), d[-1])
            return RuntimeNeed(version, f"imports {name}", windows=True)
    for name in needs:  # no shared cudart (linked statically): cuBLAS 11+ shares the CUDA major
        m = re.fullmatch(
            r"(?:libcublas(?:lt)?\.so\.|cublas(?:lt)?64_)(\d+)(?:\.dll)?(?:\.[\d.]+)?", name.lower()
        )
        if m and int(m.group(1)) >= 11:
            return RuntimeNeed(
                m.group(1),
                f"links {name} (cuBLAS {m.group(1)} belongs to CUDA {m.group(1)}.x)",
                windows=name.lower().endswith(".dll"),
            )
    return None


def _family(major: int, minor: str | None) -> str:
    return str(major) if major >= 11 or minor is None else f"{major}.{minor}"


def from_requirements(requirements: Iterable[Requirement]) -> RuntimeNeed | None:
    """From a wheel's ``Requires-Dist`` (``containers.wheel.declared_requirements``): cudart
    requirements first, else any ``nvidia-*-cuNN`` library."""
    family = None
    for req in requirements:
        name = req.name
        if name.startswith("nvidia-cuda-runtime") or (name == "cuda-toolkit" and "cudart" in req.extras):
            need = _cudart_requirement(req)
            if need is not None:
                return need
        cu = re.fullmatch(r"nvidia-[a-z0-9\-]+-cu(\d+)", name)
        if cu and family is None:
            family = RuntimeNeed(cu.group(1), f"wheel requires {name}", confidence="medium")
    return family


def _cudart_requirement(req: Requirement) -> RuntimeNeed | None:
    """A cudart requirement: its pinned version (``==12.4.*``, ``>=12``), else its ``-cuNN``."""
    name, spec = req.name, req.specifier
    pin = re.search(r"==\s*(\d+)\.(\d+)", spec) or re.search(r"(?:~=|>=)\s*(\d+)()", spec)
    if pin:
        major, minor = int(pin.group(1)), pin.group(2)
        return RuntimeNeed(
            f"{major}.{minor}" if minor and major >= 11 else _family(major, minor or None),
            f"wheel requires {req.written}",
        )
    cu = re.search(r"-cu(\d+)$", name)
    return RuntimeNeed(cu.group(1), f"wheel requires {name}") if cu else None


def from_context(
    path: str, distribution: str | None = None, beside: Iterable[str] = ()
) -> RuntimeNeed | None:
    """R-RT 5: what the distribution declares around a file that names no runtime itself:
    its install folder, its distribution's name, a cudart in the same folder (``beside``: the
    names of the files there)."""
    folders = re.split(r"[/\\!]", path)[:-1]
    for folder in reversed(folders):
        need = _install_folder(folder)
        if need is not None:
            return need
    return _declared_around(distribution, beside)


def _install_folder(folder: str) -> RuntimeNeed | None:
    """``cu12/`` (NVIDIA's wheel layout) or ``cuda-12.4/`` (a toolkit folder)."""
    m = re.fullmatch(r"cu(\d{2,3})", folder.lower())
    if m and int(m.group(1)[:2]) >= 11:
        major = m.group(1)[:2]
        return RuntimeNeed(major, f"installed under {folder}/ (NVIDIA's CUDA {major} wheel layout)", "medium")
    m = re.fullmatch(r"cuda-(\d+)\.(\d+)", folder.lower())
    if m:
        return RuntimeNeed(
            _family(int(m.group(1)), m.group(2)),
            f"installed under {folder}/ (a CUDA toolkit folder)",
            "medium",
        )
    return None


def _declared_around(distribution: str | None, beside: Iterable[str]) -> RuntimeNeed | None:
    """The distribution's name, then a cudart in the same folder."""
    if distribution:
        m = re.search(r"[-_]cu(?:da)?(\d{2})(?:x|\d)?(?:$|[-_ ])", distribution.lower())
        if m and int(m.group(1)) >= 11:
            return RuntimeNeed(m.group(1), f"distribution {distribution} names CUDA {m.group(1)}", "medium")
    for name in beside:
        need = from_needs([name])
        if need is not None and need.source.startswith(("DT_NEEDED", "imports")):
            return RuntimeNeed(need.version, f"{name} beside it", "medium", need.windows)
    return None


def from_cubin_toolkit(report: FileReport) -> RuntimeNeed | None:
    """The toolkit that built most of the file's cubins ("ptxas 13.0.88" -> 13.0)."""
    seen: Counter[tuple[int, int]] = Counter()
    for e in report.entries:
        m = re.search(r"(\d+)\.(\d+)", (e.cubin.toolkit or "") if e.cubin else "")
        if m:
            seen[(int(m.group(1)), int(m.group(2)))] += 1
    if not seen:
        return None
    (major, minor), _ = seen.most_common(1)[0]
    version = f"{major}.{minor}"
    return RuntimeNeed(version, f"static cudart; cubins built by CUDA {version}", confidence="medium")


def from_static_requests(version: str) -> RuntimeNeed:
    """A static cudart in a file without kernels: the newest CUDA release its driver entry-point
    requests name (``containers.cudart_version``), its major the family it needs (R-RT 3)."""
    major = version.split(".")[0]
    return RuntimeNeed(
        major,
        f"static cudart: its driver entry-point requests (cuGetProcAddress) name CUDA {version} at most",
        confidence="medium",
    )


def from_package(report: FileReport) -> RuntimeNeed | None:
    """The CUDA a conda package declares (``cuda-version``/``__cuda`` in ``depends``, the build
    string's ``cuda_compiler_version``), for the files it holds (R-RT 4, medium)."""
    p = report.package
    if p is None or not p.cuda:
        return None
    return RuntimeNeed(p.cuda, f"{p.name} {p.version}: {p.cuda_source}", confidence="medium")


def for_file(report: FileReport, wheel: RuntimeNeed | None = None) -> RuntimeNeed | None:
    """R-RT in its order: a linked (or bundled, renamed) cudart; a static cudart found in the
    file's bytes, wherever they are (file, archive member, installed file); the wheel's
    requirement or the conda package's declared CUDA; else a cuBLAS the file links (same major)."""
    need = from_needs(report.needs)
    if need is not None and need.source.startswith(("DT_NEEDED", "imports")):
        return need
    if report.fatbins and getattr(report, "static_cudart", False):
        static = from_cubin_toolkit(report)
        if static is not None:
            return static
    if report.static_cudart_version is not None:
        return from_static_requests(report.static_cudart_version)
    if wheel is not None and report.fatbins:
        return wheel
    if report.fatbins:
        declared = from_package(report)
        if declared is not None:
            return declared
    return need
