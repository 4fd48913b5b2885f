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
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future, ProcessPoolExecutor
    from multiprocessing.connection import Connection
    from multiprocessing.context import BaseContext
    from multiprocessing.process import BaseProcess

    from fatbin_inspect.formats.binio import Blob

_T = TypeVar("_T")

PR_SET_PDEATHSIG = 1
PER_CPU = 4  # the most worker processes asked for (-j, FATBIN_INSPECT_JOBS, the API) per CPU


def cpus() -> int:
    """The CPUs this process may run on (its affinity mask, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def maps_whole_file(blob: Blob, path: str) -> bool:
    """``blob`` maps the whole file at ``path`` as it is now: another process may map it anew."""
    try:
        return blob.base == 0 and os.path.isfile(path) and os.path.getsize(path) == blob.size
    except OSError:
        return False


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


def trim_heap(over: int = 0) -> None:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim(0)``; elsewhere
    nothing), when glibc holds more than ``over`` bytes free (``mallinfo2``; where glibc is
    older than 2.33, always). A worker that decoded a slice of thousands of cubins had freed
    ~35 MB that glibc kept: free chunks between live ones are returned only by ``malloc_trim``,
    not by ``free``."""
    libc = _libc()
    if libc is None:
        return
    if over > 0 and libc.mallinfo2 is not None and libc.mallinfo2().fordblks <= over:
        return
    libc.malloc_trim(0)


@functools.cache
def _libc() -> Any:  # ctypes.CDLL of glibc
    """glibc's ``malloc_trim`` and ``mallinfo2`` (None where it lacks it), or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # (here: a warm scan, which trims nothing, does not load it)
    import types

    try:
        lib = ctypes.CDLL(None)
        trim = lib.malloc_trim
    except (OSError, AttributeError):
        return None
    info = getattr(lib, "mallinfo2", None)
    if info is not None:

        class Mallinfo2(ctypes.Structure):
            _fields_ = [
                (name, ctypes.c_size_t)
                for name in (
                    "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                    "fordblks", "keepcost",
                )
            ]  # fmt: skip

        info.restype = Mallinfo2
    return types.SimpleNamespace(malloc_trim=trim, mallinfo2=info)


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def pool(jobs: int, mp_context: BaseContext | None = None) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` of ``jobs`` workers set up by ``init``."""
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(jobs, mp_context=mp_context, initializer=init, initargs=(os.getpid(),))


@contextlib.contextmanager
def sigint_held() -> Iterator[None]:
    """Within: SIGINT is blocked in the calling thread, so a process forked here inherits it
    blocked (``init`` unblocks it only after ignoring it). Restored on leaving in the process that
    entered only: a child that leaves (a bare ``os.fork``) keeps it blocked for ``init``."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    except (AttributeError, OSError):  # no pthread_sigmask here
        yield
        return
    entered = os.getpid()
    try:
        yield
    finally:
        if os.getpid() == entered:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def submit(executor: Executor, fn: Callable[..., _T], *args: Any) -> Future[_T]:
    """``executor.submit(fn, *args)`` with SIGINT held back while it may fork workers."""
    with sigint_held():
        return executor.submit(fn, *args)


def stop(executor: Executor) -> None:
    """End ``executor`` now (Ctrl-C): kill its workers, drop queued work, wait for nothing."""
    for proc in list((getattr(executor, "_processes", None) or {}).values()):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            proc.kill()
    executor.shutdown(wait=False, cancel_futures=True)


def in_order(
    task: Callable[..., Any], args: tuple[Any, ...], n: int, jobs: int, window: int
) -> Generator[Any, None, None]:
    """``task(*args, i)`` for each ``i`` in ``range(n)``, yielded in order, computed by
    ``jobs - 1`` worker processes and this one. Each takes the next ``i`` from a shared counter
    the moment it is free, so no worker waits to be handed work; this process takes one whenever
    the next result to yield is not in yet. At most ``window`` are taken and not yet yielded (a
    semaphore: a result frees its permit when the consumer asks for the next), so what is held
    does not grow with ``n``. A worker's exception is raised here in its turn. A worker that dies
    (killed, out of memory) ends the others, and what they had not answered is computed here, as
    is everything where no worker can be started. ``task`` and ``args`` reach the workers by the
    start method's means (inherited by a fork, pickled for a spawn).

    Why not a ``ProcessPoolExecutor`` of ``jobs`` workers, this process only passing results
    on (libtorch_cuda.so ``--kernels --format json``, 2 CPUs): that is one more forked
    interpreter, whose inherited pages every process's RSS counts (peak RSS of the process tree
    142 -> 115 MB), and a worker waits for the executor's threads to get the GIL before it is
    handed its next slice (docs/format.md §2.5)."""
    import multiprocessing as mp
    from multiprocessing.connection import wait

    ctx = mp.get_context()
    crew: list = []
    try:
        taken, room = ctx.Value("q", 0), ctx.Semaphore(window)
        pipes = [ctx.Pipe(duplex=False) for _ in range(max(0, jobs - 1))]
        crew = [
            ctx.Process(target=_crew_member, args=(os.getpid(), task, args, n, taken, room, w), daemon=True)
            for _r, w in pipes
        ]
        _start_all(crew)
    # no semaphores (no /dev/shm), no process to spare, or this is a daemonic process (which
    # multiprocessing lets have no children)
    except (OSError, ImportError, AssertionError):
        for p in crew:
            if p.pid is not None:  # (started before another could not be: it must not write too)
                p.kill()
                p.join()
        for i in range(n):
            yield task(*args, i)
        return
    for r, w in pipes:
        w.close()
        _widen(r)
    live = {r: p for (r, _w), p in zip(pipes, crew)}
    ready: dict[int, tuple[Any, BaseException | None]] = {}

    def abandon() -> None:
        """End every worker: from here on this process computes what is not in yet."""
        for p in crew:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                p.kill()
        for p in crew:
            p.join(5)
        for r in live:
            r.close()
        live.clear()

    def collect(timeout: float | None) -> None:
        """Take in the answers there are (waiting up to ``timeout`` for one or a worker's end)."""
        ends: dict[Any, Any] = {p.sentinel: r for r, p in live.items()}
        for x in wait([*live, *ends], timeout):
            r = ends.get(x, x)
            if r not in live:
                continue
            if x is r:
                receive(cast("Connection", r))
                continue
            # the worker ended: first what it sent (a fork's workers hold each other's pipe
            # ends, so a dead one's pipe need not read as closed), then how: well only once
            # every i is taken
            while r.poll() and receive(r):
                pass
            live[r].join(5)  # (its sentinel closes as it exits, maybe before it can be reaped)
            if live[r].exitcode != 0:
                abandon()
                return
            r.close()
            del live[r]

    def receive(r: Connection) -> bool:
        try:
            i, out, exc = r.recv()
        except (EOFError, OSError):
            return False
        ready[i] = (out, exc)
        return True

    def here(i: int) -> None:
        try:
            ready[i] = (task(*args, i), None)
        except Exception as exc:  # raised in its turn, after the results before it
            ready[i] = (None, exc)

    all_taken = False
    try:
        for y in range(n):
            while y not in ready:
                if not live:
                    here(y)
                    break
                collect(0)
                if y in ready or not live:
                    continue
                if all_taken or not room.acquire(False):
                    collect(None)
                    continue
                k = _take(taken, 5)
                if k is None:  # a worker died holding the counter's lock
                    abandon()
                elif k < n:
                    here(k)
                else:  # y is a worker's, not answered yet: wait for it (taking again would spin)
                    room.release()
                    all_taken = True
            out, exc = ready.pop(y)
            if exc is not None:
                raise exc
            yield out
            room.release()
    finally:
        abandon()


PIPE_BYTES = 1 << 20  # what a worker's answers may fill of its pipe before it waits (Linux)


def _widen(conn: Connection) -> None:
    """Let ``conn``'s pipe hold ``PIPE_BYTES`` (Linux ``F_SETPIPE_SZ``; elsewhere, or refused,
    its default). A worker's answer is a slice's small fragments and where the rest lies in
    memory files: ~11 KB, at times ~0.7 MB (libtorch_cuda.so --kernels). With the default
    64 KiB, a worker blocked on its write while this process decoded a slice of its own: the
    worker sat idle far longer than with 1 MiB. The kernel allocates a
    pipe's pages as they are written, so an idle pipe costs nothing."""
    try:
        import fcntl

        fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass


def _start_all(crew: Sequence[BaseProcess]) -> None:
    with sigint_held():
        for p in crew:
            p.start()


def _take(taken: Any, timeout: float | None = None) -> int | None:  # a multiprocessing Value("q")
    """The next ``i`` of ``in_order``'s shared counter (None: its lock was not had in time)."""
    lock = taken.get_lock()
    if not lock.acquire(timeout=timeout):
        return None
    try:
        i = taken.value
        taken.value = i + 1
        return i
    finally:
        lock.release()


def _crew_member(
    parent: int,
    task: Callable[..., Any],
    args: tuple[Any, ...],
    n: int,
    taken: Any,
    room: Any,
    conn: Connection,
) -> None:
    """One of ``in_order``'s workers: take the next ``i`` while there is room, answer, repeat;
    leave once every ``i`` is taken. Anything else that goes wrong here ends the process with
    status 1 and no traceback (``in_order`` then computes what it held)."""
    try:
        init(parent)
        with conn:
            while True:
                room.acquire()
                i = _take(taken)
                if i is None or i >= n:
                    room.release()  # (for another worker waiting to learn that all is taken)
                    return
                answer: tuple[int, Any, BaseException | None]
                try:
                    answer = (i, task(*args, i), None)
                except Exception as exc:
                    answer = (i, None, exc)
                conn.send(answer)
    except BaseException:
        os._exit(1)
