"""Itanium C++ demangling through libstdc++'s ``__cxa_demangle`` (no toolkit needed).

Returns None when no C++ runtime is found or the name is not mangled; callers show the
mangled name then.
"""

from __future__ import annotations

import ctypes  # (ctypes.util, which imports subprocess, only when the runtime is looked for)
from functools import lru_cache
from typing import Any

_fn: Any = None  # __cxa_demangle from the C++ runtime, once found
_free: Any = None
_loaded = False


def _load():
    global _fn, _free, _loaded
    import ctypes.util

    _loaded = True
    for name in ("stdc++", "c++"):
        path = ctypes.util.find_library(name)
        for candidate in filter(None, (path, f"lib{name}.so.6", f"lib{name}.so.1")):
            try:
                lib = ctypes.CDLL(candidate)
                fn = lib.__cxa_demangle
            except (OSError, AttributeError):
                continue
            fn.restype = ctypes.c_void_p
            fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
            libc.free.argtypes = [ctypes.c_void_p]
            _fn, _free = fn, libc.free
            return


@lru_cache(maxsize=1 << 16)
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
