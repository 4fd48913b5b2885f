"""Where the scan's units run: one protocol, a local process pool, or this process alone.

An executor takes units (``submit``), hands them out while at most ``jobs + 1`` are in flight
(one more than the processes, so a process that ends a unit finds the next one waiting; the
others wait as units, the walk never waits for the pool) and gives back each ended unit with its
result (``done``): the function's value, or a ``Crash`` or ``Unread`` record saying why there is
none. The Dask one is ``dask_executor.DaskExecutor``. Units run in the order found, not the
largest first: bytes do not tell the cost (cuFFT's 273 MB take longer than libtorch_cpu's 425 MB).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol

from fatbin_inspect.scanning.units import Unit


class Crash(NamedTuple):
    """A unit whose process died while it ran alone: it is the cause."""

    why: str


class Unread(NamedTuple):
    """A unit no Dask worker could read (``tried`` workers tried)."""

    tried: int


class Done(NamedTuple):
    """An ended unit and its result (``Crash``/``Unread`` where it gave none)."""

    unit: Unit
    result: Any


class Executor(Protocol):
    """``jobs``: units run at once; ``remote``: the workers see absolute paths only, and each
    file is sent whole (no ELF split), and a scan on them keeps no whole answer."""

    jobs: int
    remote: bool

    def start(self, roots: list[str]) -> list[str]:
        """Before the first unit: the notes for the user (workers left out)."""

    def submit(self, unit: Unit) -> None:
        """Queue ``unit``."""

    @property
    def busy(self) -> bool:
        """Units in flight."""

    @property
    def pending(self) -> bool:
        """Units in flight, queued or waiting to run again."""

    def done(self, wait: bool = False) -> list[Done]:
        """The units that ended (with ``wait``: at least one, when any is pending), then queued
        units handed out."""

    def abandon(self) -> None:
        """End the units in flight now (Ctrl-C, or an error), not after they end."""

    def close(self) -> None:
        """Let the processes go, once every unit is done."""


class Queued:
    """The queue and the bound on units in flight shared by the executors; ``_run`` hands a unit
    to the workers and gives its future."""

    jobs: int
    remote = False

    def __init__(self) -> None:
        self.queue: collections.deque[Unit] = collections.deque()
        self.inflight: set[Any] = set()  # futures

    def start(self, roots: list[str]) -> list[str]:
        return []

    def submit(self, unit: Unit) -> None:
        self.queue.append(unit)

    @property
    def busy(self) -> bool:
        return bool(self.inflight)

    @property
    def pending(self) -> bool:
        return bool(self.inflight or self.queue)

    def _hand_out(self) -> None:
        while self.queue and len(self.inflight) <= self.jobs:
            self.inflight.add(self._run(self.queue.popleft()))

    def _run(self, unit: Unit) -> Any:
        raise NotImplementedError

    def _ended(self, wait: bool) -> Iterable[Any]:
        """The futures that ended, out of ``inflight`` (with ``wait``, at least one)."""
        if wait and self.inflight:
            from concurrent.futures import FIRST_COMPLETED
            from concurrent.futures import wait as wait_for

            done, self.inflight = wait_for(self.inflight, return_when=FIRST_COMPLETED)
            return done
        ended = [f for f in self.inflight if f.done()]
        self.inflight.difference_update(ended)
        return ended


class InProcess(Queued):
    """``jobs`` 1: each unit run here when it is submitted."""

    jobs = 1

    def __init__(self) -> None:
        super().__init__()
        self.ended: list[Done] = []

    def submit(self, unit: Unit) -> None:
        self.ended.append(Done(unit, unit.fn(*unit.args)))

    @property
    def pending(self) -> bool:
        return bool(self.ended)

    def done(self, wait: bool = False) -> list[Done]:
        ended, self.ended = self.ended, []
        return ended

    def abandon(self) -> None:
        self.ended = []

    def close(self) -> None:
        pass


class LocalPool(Queued):
    """A process pool on this machine (forked where the platform can), made at the first unit.

    A unit whose process died with others in flight may not be the cause (which one killed it is
    unknown): each of them is run again alone (a batch split into its files), one at a time with
    nothing beside it; a unit that fails alone is the cause and comes back as a ``Crash``."""

    def __init__(self, jobs: int) -> None:
        super().__init__()
        self.jobs = jobs
        self.pool: Any = None  # a ProcessPoolExecutor
        self.units: dict[Any, Unit] = {}  # future -> its unit, to run it again
        self.suspects: collections.deque[Unit] = collections.deque()
        self.alone: Any = None  # the future of the suspect running alone
        self.processes: list[Any] = []  # the pool's processes (it forgets them once broken)

    @property
    def pending(self) -> bool:
        return bool(self.inflight or self.queue or self.suspects)

    def done(self, wait: bool = False) -> list[Done]:
        out = []
        for fut in self._ended(wait):
            unit = self.units.pop(fut)
            alone, self.alone = self.alone is fut, None if self.alone is fut else self.alone
            try:
                out.append(Done(unit, fut.result()))
            except Exception as exc:  # a process died (a signal, a native crash), or the unit raised
                crash = self._lost(unit, exc, alone)
                if crash is not None:
                    out.append(crash)
        if self.suspects:
            if not self.inflight:
                self.alone = self._run(self.suspects.popleft())
                self.inflight.add(self.alone)
        else:
            self._hand_out()
        return out

    def _run(self, unit: Unit) -> Any:
        from fatbin_inspect.inventory import workers

        if self.pool is None:
            import multiprocessing

            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
            self.pool = workers.pool(self.jobs, multiprocessing.get_context(method))
        fut = workers.submit(self.pool, unit.fn, *unit.args)
        procs = getattr(self.pool, "_processes", None) or {}
        if len(procs) > len(self.processes):  # (all forked at the first unit; spawned as needed)
            self.processes = list(procs.values())
        self.units[fut] = unit
        return fut

    def _lost(self, unit: Unit, exc: Exception, alone: bool) -> Done | None:
        """A unit that gave no result: its ``Crash`` when it ran alone, else its files suspects."""
        why = self._why(exc)
        if alone:
            return Done(unit, Crash(why))
        self.suspects.extend(unit.alone())
        return None

    def _why(self, exc: Exception) -> str:
        """Why a unit gave no result; a broken pool is stopped (the next unit starts a new one).
        Its processes' exit codes are read once the pool's manager thread has joined them: the
        futures fail before that, while the dead process may not be reaped yet."""
        from concurrent.futures.process import BrokenProcessPool

        if not (isinstance(exc, BrokenProcessPool) and self.pool is not None):
            return f"{type(exc).__name__}: {exc}"
        from fatbin_inspect.inventory import workers

        manager = getattr(self.pool, "_executor_manager_thread", None)
        if manager is not None:
            manager.join(5)
        codes = [p.exitcode for p in self.processes]
        killed = sorted({-c for c in codes if isinstance(c, int) and c < 0} - {15})  # not our SIGTERMs
        workers.stop(self.pool)
        self.pool, self.processes = None, []
        return "killed by " + ", ".join(_signal_name(k) for k in killed) if killed else "it exited"

    def abandon(self) -> None:
        if self.pool is not None:
            from fatbin_inspect.inventory import workers

            workers.stop(self.pool)
            self.pool = None

    def close(self) -> None:
        if self.pool is not None:
            for fut in self.inflight:
                fut.cancel()
            self.pool.shutdown(wait=True)


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
