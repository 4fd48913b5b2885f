"""cuda-python's Driver API bindings, imported only where a GPU is really used (doctor's fallback
GPU probe, the verify child). cuda-python is an optional extra: ``pip install 'fatbin-inspect[gpu]'``.

cuda-bindings 12.6+ and 13 name the module ``cuda.bindings.driver``; older cuda-python ``cuda.cuda``.
Every call returns a tuple ``(CUresult, *values)``.
"""

from __future__ import annotations

from typing import Any

from fatbin_inspect.errors import DeviceError


def bindings() -> Any:  # cuda-python's driver module: foreign, untyped objects
    try:
        from cuda.bindings import driver
    except ImportError:
        try:
            from cuda import cuda as driver
        except ImportError:
            raise DeviceError("cuda-python is not installed (pip install 'fatbin-inspect[gpu]')") from None
    return driver


def code(result: Any) -> int:
    """A CUresult as a plain int (an IntEnum in some releases, a fast enum in others)."""
    return int(getattr(result, "value", result))


def check(ret: Any, what: str) -> Any:
    """The value of a binding call, or DeviceError naming the CUresult."""
    ret = ret if isinstance(ret, tuple) else (ret,)
    rc = code(ret[0])
    if rc != 0:
        raise DeviceError(f"{what} failed: CUresult {rc} ({getattr(ret[0], 'name', '?')})")
    return ret[1] if len(ret) == 2 else ret[1:] or None
