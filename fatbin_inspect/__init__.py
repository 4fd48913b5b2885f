"""fatbin-inspect: list the CUDA device code inside binaries and predict whether it loads.

The library API (``fatbin_inspect.api``, loaded on first use so that ``import fatbin_inspect`` stays
cheap)::

    import fatbin_inspect as fi
    fi.inspect("dist/pkg.whl")                         # records: fatbins, entries, kernels
    fi.check(["dist/pkg.whl"], gpus=["H100"], driver="550")   # FileVerdict per file and GPU
    fi.scan(["venv/"], gpus=["H100"])                  # (ScanResult, coverage matrix)
    fi.gate(["dist/pkg.whl"], require="sm_80,sm_90")   # FindingsReport of the release gate

Layers, one way only (folder names): ``formats`` and ``containers`` (bytes) -> ``inventory`` ->
``compat`` (the engine) -> ``checks`` and ``scan`` -> ``render`` -> ``cli``; ``system`` probes this
machine for the CLI and this API. Nothing below ``render`` prints.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["__version__", "check", "gate", "inspect", "scan", "targets"]

if TYPE_CHECKING:
    from fatbin_inspect.api import check, gate, inspect, scan, targets


def __getattr__(name: str) -> Any:
    if name in __all__:
        from fatbin_inspect import api

        return getattr(api, name)
    raise AttributeError(f"module 'fatbin_inspect' has no attribute {name!r}")


class _Package(types.ModuleType):
    """Keeps ``fatbin_inspect.scan`` the function: importing the subpackage ``fatbin_inspect.scan``
    would bind its module to that name (reach the module with ``from fatbin_inspect.scan import
    ...`` or ``importlib.import_module``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in __all__ and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
