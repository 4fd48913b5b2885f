"""torch beside the files judged: the runtime of an environment (R-VARIANT), the libtorch_cuda.so
of ``gate --match torch`` (FBI009), and the files whose CUDA major differs from torch's (FBI017)."""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

from fatbin_inspect.errors import UsageError
from fatbin_inspect.formats.model import FileReport

if TYPE_CHECKING:
    from fatbin_inspect.compat.engine import FileVerdict
    from fatbin_inspect.compat.runtime import RuntimeNeed
    from fatbin_inspect.scanning.coverage import FileSummary

Record: TypeAlias = "FileReport | FileSummary"  # what a scan holds: full records or their summaries

TORCH_LIB = "torch/lib/libtorch_cuda.so"


def _torch_runtime(
    reports: Iterable[Record], engine_vs: Mapping[str, list[FileVerdict]]
) -> tuple[Record | None, RuntimeNeed | None]:
    """(torch's libtorch_cuda.so among the records, the runtime it was judged with), or Nones."""
    torch = next((r for r in reports if r.path.replace("\\", "/").endswith(TORCH_LIB)), None)
    if torch is None or not engine_vs.get(torch.path):
        return None, None
    return torch, engine_vs[torch.path][0].runtime


def torch_mismatches(reports: Sequence[Record], engine_vs: Mapping[str, list[FileVerdict]]) -> list[str]:
    """Files whose CUDA runtime major differs from the torch scanned with them (a CUDA 12
    extension beside a CUDA 13 torch): both runtimes would load into one process."""
    torch, trt = _torch_runtime(reports, engine_vs)
    if torch is None or trt is None:
        return []
    top = torch.path.replace("\\", "/").rsplit("/lib/", 1)[0] + "/"
    out = []
    for r in reports:
        vs = engine_vs.get(r.path)
        rt = vs[0].runtime if vs else None
        if rt is None or rt.major == trt.major or r.path.replace("\\", "/").startswith(top):
            continue
        who = r.distribution or r.path
        out.append(f"{who}: {r.path} needs CUDA {rt.major} ({rt.source}) but torch uses CUDA {trt.major}")
    return out


def environment_runtime(given: str | None, reports: Sequence[FileReport]) -> tuple[int, ...] | None:
    """R-VARIANT's runtime: ``--runtime``, else the CUDA of the torch among the inputs (its
    ``torch/version.py`` when installed, else the cudart its libtorch_cuda.so links)."""
    from fatbin_inspect.compat import runtime, units

    if given:
        try:
            return units.parse_runtime(given)
        except ValueError as exc:
            raise UsageError(f"--runtime: {exc}") from None
    for r in reports:
        if not r.path.replace("\\", "/").endswith(TORCH_LIB):
            continue
        version_py = os.path.join(os.path.dirname(os.path.dirname(r.path)), "version.py")
        declared = _torch_cuda(version_py) if "!" not in r.path else None
        if declared:
            return units.parse_runtime(declared)
        rt = runtime.for_file(r)
        if rt is not None:
            return units.parse_runtime(rt.version)
    return None


def _torch_cuda(version_py: str) -> str | None:
    """``cuda = '12.8'`` from torch/version.py (read as text, never imported)."""
    try:
        with open(version_py, encoding="utf-8", errors="replace") as fh:
            m = re.search(r"^cuda\s*(?::\s*\S+\s*)?=\s*['\"]([\d.]+)['\"]", fh.read(), re.M)
    except OSError:
        return None
    return m.group(1) if m else None


def torch_reference(match: str, reports: Sequence[FileReport]) -> FileReport:
    """libtorch_cuda.so for ``--match``: among the inputs, else the installed torch (found, not
    imported), or the library file ``match`` names."""
    from fatbin_inspect.inventory.options import Options
    from fatbin_inspect.inventory.reader import inspect_path

    if match != "torch":
        if not os.path.isfile(match):
            raise UsageError(f"--match: {match!r} is neither 'torch' nor a library file")
        return next(iter(inspect_path(match, Options())))
    for r in reports:
        if r.path.replace("\\", "/").endswith(TORCH_LIB) and r.fatbins:
            return r
    lib = installed_torch_lib()
    if lib is None:
        raise UsageError(f"--match torch: no {TORCH_LIB} among the inputs and no torch installed")
    return next(iter(inspect_path(lib, Options())))


def installed_torch_lib() -> str | None:
    spec = importlib.util.find_spec("torch")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    lib = os.path.join(next(iter(spec.submodule_search_locations)), "lib", "libtorch_cuda.so")
    return lib if os.path.isfile(lib) else None
