"""A file that shrinks while it is mapped costs that file, not the process.

Reading a page of a mapping past the end of a file that was truncated after ``mmap`` raises
SIGBUS, and Python cannot catch it: the faulting read is retried after any handler returns, so
the default action kills the process (``list``, ``check``) or a pool worker (``scan -j``).

``watch`` registers a mapping; on the first mapping a SIGBUS handler is installed (``sigaction``
through ctypes, Linux only) that maps anonymous zero pages (``MAP_FIXED``, read-only) over the
rest of the faulting mapping and counts the fault: the read is retried, sees zeros, and the
parser goes on over bytes that no longer match the file. The caller compares ``faults()``
before and after a file and replaces what it read with one error record (see
``inventory.reader.inspect_path`` and ``scanning.worker``). A SIGBUS at an address outside
every watched mapping (a real memory error, a truncated shared library) gets the handler that
was there before, as if none had been installed.

Why not the alternatives: reading instead of mapping costs the file's size in memory (a 1 GiB
PTX must stay mapped, see docs/format.md); a child process per file costs a fork and a pickle
of the records per file (list over site-packages: thousands); checking ``st_size`` before each
access still races with the truncation. The guard costs one registration per mapped file
and nothing per read; JVMs turn the same fault into an exception the same way.
"""

from __future__ import annotations

import mmap
import sys
import threading
import weakref

_lock = threading.Lock()
_regions: dict[int, list[int]] = {}  # start address -> [end address, faults]
_state: dict[str, object] = {}  # "handler", "old", "libc" once installed; "failed" if it cannot be
_faults = [0]

MAP_FIXED = 0x10  # Linux, every architecture
SA_SIGINFO = 4
BUS_ADRERR = 2  # "nonexistent physical address": a page past the end of the mapped file


def faults() -> int:
    """How many faults this process has absorbed so far (compare before and after a file)."""
    return _faults[0]


def watch(mm: mmap.mmap) -> None:
    """Absorb a SIGBUS on ``mm``'s pages for as long as it lives (no-op where unsupported)."""
    if not sys.platform.startswith("linux") or sys.maxsize < 1 << 32 or "failed" in _state:
        return
    if "handler" not in _state and not _install():
        return
    start = _address(mm)
    if start is None:
        return
    _regions[start] = [start + len(mm), 0]
    weakref.finalize(mm, _regions.pop, start, None)


def _address(mm: mmap.mmap) -> int | None:
    """The start address of ``mm`` (a read-only mapping: ctypes' from_buffer needs a writable one)."""
    import ctypes

    view = _state["buffer"]()  # type: ignore[operator]
    try:
        if ctypes.pythonapi.PyObject_GetBuffer(ctypes.py_object(mm), ctypes.byref(view), 0) != 0:
            return None
    except (AttributeError, ValueError, BufferError):
        return None
    try:
        return view.buf
    finally:
        ctypes.pythonapi.PyBuffer_Release(ctypes.byref(view))


def _install() -> bool:
    with _lock:
        if "handler" in _state:
            return True
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [
                ctypes.c_void_p,
                ctypes.c_size_t,
                ctypes.c_int,
                ctypes.c_int,
                ctypes.c_int,
                ctypes.c_long,
            ]
            handler_t = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

            class SigAction(ctypes.Structure):  # glibc's struct sigaction (x86-64, aarch64)
                _fields_ = [
                    ("handler", ctypes.c_void_p),
                    ("mask", ctypes.c_ulong * 16),
                    ("flags", ctypes.c_int),
                    ("restorer", ctypes.c_void_p),
                ]

            def on_bus(signum: int, info: int, context: int) -> None:
                addr = ctypes.c_void_p.from_address(info + 16).value or 0  # siginfo_t.si_addr
                for start, region in list(_regions.items()):
                    if start <= addr < region[0]:
                        page = addr & ~(mmap.PAGESIZE - 1)
                        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_FIXED
                        libc.mmap(page, region[0] - page, mmap.PROT_READ, flags, -1, 0)
                        region[1] += 1
                        _faults[0] += 1
                        return
                libc.sigaction(signum, ctypes.byref(old), None)  # not ours: the previous action

            class PyBuffer(ctypes.Structure):  # Py_buffer's first fields, room for the rest
                _fields_ = [
                    ("buf", ctypes.c_void_p),
                    ("obj", ctypes.py_object),
                    ("len", ctypes.c_ssize_t),
                    ("rest", ctypes.c_byte * 64),
                ]

            handler = handler_t(on_bus)
            new, old = SigAction(), SigAction()
            new.handler = ctypes.cast(handler, ctypes.c_void_p).value
            new.flags = SA_SIGINFO
            import signal

            if libc.sigaction(signal.SIGBUS, ctypes.byref(new), ctypes.byref(old)) != 0:
                _state["failed"] = True
                return False
        except (OSError, AttributeError, ImportError):
            _state["failed"] = True
            return False
        _state.update(handler=handler, old=old, libc=libc, buffer=PyBuffer)  # kept alive: the kernel calls it
        return True
