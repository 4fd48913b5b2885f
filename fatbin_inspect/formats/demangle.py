"""Itanium C++ demangling through libstdc++'s ``__cxa_demangle`` (no toolkit needed).

Returns None when no C++ runtime is found or the name is not mangled; callers show the
mangled name then.
"""

from __future__ import annotations

import ctypes  # (ctypes.util, which imports subprocess, only when no soname is found)
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

_fn: Any = None  # __cxa_demangle from the C++ runtime, once found
_free: Any = None
_loaded = False


def _libraries(name: str) -> Iterator[str]:
    """Where the C++ runtime ``name`` may be: its sonames first (``dlopen`` finds them as the
    linker would), then ``ctypes.util.find_library``, whose import and ``ldconfig -p`` subprocess
    cost each worker process start-up time, only when those fail."""
    yield f"lib{name}.so.6"
    yield f"lib{name}.so.1"
    from ctypes import util

    path = util.find_library(name)
    if path:
        yield path


def _free_fn() -> Any:
    """``free`` of the C library: this process's own symbols first (glibc, macOS), then by name."""
    try:
        return ctypes.CDLL(None).free
    except (OSError, AttributeError, TypeError):
        from ctypes import util

        return ctypes.CDLL(util.find_library("c")).free


def _load() -> None:
    global _fn, _free, _loaded
    _loaded = True
    for name in ("stdc++", "c++"):
        for candidate in _libraries(name):
            try:
                lib = ctypes.CDLL(candidate)
                fn = lib.__cxa_demangle
                free = _free_fn()
            except (OSError, AttributeError, TypeError):
                continue
            fn.restype = ctypes.c_void_p
            fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
            free.argtypes = [ctypes.c_void_p]
            _fn, _free = fn, free
            return


# a name recurs in one fatbin's cubins (one per architecture; libtorch_cuda.so: 145k kernels,
# 23k names, at most 1,317 in one fatbin): 2,048 names (~2 MB: 267 + 601 characters on average)
# keep all but 13 of the 121,601 hits a cache of 65,536 had, without ~10 MB a worker decoding
# libtorch_cuda.so would keep of names it will not see again (4,096: 2 MB more, 13 hits more)
@lru_cache(maxsize=2048)
def demangle(name: str) -> str | None:
    if not name.startswith("_Z"):
        return None
    if not _loaded:
        _load()
    if _fn is None:
        return None
    status = ctypes.c_int(0)
    ptr = _fn(name.encode("utf-8", "replace"), None, None, ctypes.byref(status))
    if status.value != 0 or not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        _free(ptr)
