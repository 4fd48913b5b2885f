"""fatbin-inspect: list the CUDA device code inside binaries and predict whether it loads.

The library API (``fatbin_inspect.api``, loaded on first use so that ``import fatbin_inspect`` stays
cheap)::

    import fatbin_inspect as fi
    fi.inspect("dist/pkg.whl")                         # records: fatbins, entries, kernels
    fi.check(["dist/pkg.whl"], gpus=["H100"], driver="550")   # FileVerdict per file and GPU
    fi.scan(["venv/"], gpus=["H100"])                  # (ScanResult, coverage matrix)
    fi.gate(["dist/pkg.whl"], require="sm_80,sm_90")   # FindingsReport of the release gate

Layers, one way only (folder names): ``formats`` and ``containers`` (bytes) -> ``inventory`` ->
``compat`` (the engine) -> ``scanning`` and ``release`` -> ``judging`` (the library layer the API
and the CLI call) -> ``render`` -> ``cli``; ``system`` probes this machine for the library layer.
Nothing below ``render`` prints. No subpackage shares a name with an API function.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from fatbin_inspect.version import __version__

__all__ = ["__version__", "check", "gate", "inspect", "scan", "targets"]

if TYPE_CHECKING:
    from fatbin_inspect.api import check, gate, inspect, scan, targets


def __getattr__(name: str) -> Any:
    if name in __all__:
        from fatbin_inspect import api

        return getattr(api, name)
    raise AttributeError(f"module 'fatbin_inspect' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The API names too, though not loaded yet: ``dir()``, REPL and IDE completion and
    ``help(fatbin_inspect)`` (pydoc lists what ``dir`` gives and ``__all__`` admits) see them."""
    loaded = (n for n in globals() if n.startswith("__") or f"{__name__}.{n}" in sys.modules)  # subpackages
    return sorted({*__all__, *loaded})
