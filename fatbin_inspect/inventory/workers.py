"""Worker processes (the scan's pool, a large file's parallel decoding) that die with their parent.

A pool worker killed parent leaves behind would run on with parent 1 (``scan -j2`` killed with
SIGTERM or SIGKILL); a Ctrl-C delivered to the whole foreground process group would print one
``KeyboardInterrupt`` traceback per worker. So every worker starts with ``init``: it asks Linux
for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``, through ctypes; elsewhere a
daemon thread watches ``getppid``), and ignores SIGINT, which the parent alone handles
(``stop`` then ends the workers at once instead of waiting for their batches). A Ctrl-C that
lands while a worker is still being forked would reach it before ``init`` runs (a traceback from
multiprocessing's bootstrap), so ``submit``, which is where the executor forks, holds SIGINT
blocked in the calling thread; a child inherits the mask and ``init`` unblocks it only after
ignoring SIGINT (which drops one already pending); the parent gets its own on unblocking.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
PER_CPU = 4  # the most worker processes asked for (-j, FATBIN_INSPECT_JOBS, the API) per CPU


def cpus() -> int:
    """The CPUs this process may run on (its affinity mask, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def processes(asked: int) -> int:
    """Worker processes for ``asked`` (0 or less: one per CPU), capped at ``PER_CPU`` per CPU:
    ``-j 100000`` must not fork a hundred thousand interpreters."""
    n = cpus()
    return n if asked <= 0 else min(asked, n * PER_CPU)


def capped_note(asked: int) -> str | None:
    """The note a command gives when ``processes`` caps ``asked``."""
    if asked <= processes(asked):
        return None
    return f"--jobs {asked:,}: capped at {processes(asked)} worker processes ({cpus()} CPUs x {PER_CPU})"


def init(parent: int) -> None:
    """Pool initializer: die with ``parent``, leave Ctrl-C to it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(AttributeError, OSError):  # no pthread_sigmask: nothing was blocked
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            armed = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
    if not armed:
        threading.Thread(target=_watch, args=(parent,), daemon=True, name="parent-watchdog").start()


def trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim(0)``; elsewhere
    nothing). A worker that decoded a slice of thousands of cubins had freed ~35 MB that glibc
    kept: free chunks between live ones are returned only by ``malloc_trim``, not by ``free``."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def pool(jobs: int, mp_context=None):
    """A ``ProcessPoolExecutor`` of ``jobs`` workers set up by ``init``."""
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(jobs, mp_context=mp_context, initializer=init, initargs=(os.getpid(),))


def submit(executor, fn, *args):
    """``executor.submit(fn, *args)`` with SIGINT held back while it may fork workers."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    except (AttributeError, OSError):
        return executor.submit(fn, *args)
    try:
        return executor.submit(fn, *args)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def stop(executor) -> None:
    """End ``executor`` now (Ctrl-C): kill its workers, drop queued work, wait for nothing."""
    for proc in list((getattr(executor, "_processes", None) or {}).values()):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            proc.kill()
    executor.shutdown(wait=False, cancel_futures=True)
