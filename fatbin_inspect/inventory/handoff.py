"""A second process scans a large binary's hidden pieces while this one walks its fatbin
sections: which pieces to hand off (``hand_off``), and the forked child that does the work it is
given on them (``handed_off``; the hidden-fatbin search passes its piece scan in, so nothing here
imports it back). The record is the one a single process makes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import NoReturn

from fatbin_inspect.errors import InputError
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.formats.model import Fatbin
from fatbin_inspect.inventory import workers
from fatbin_inspect.inventory.options import Options

Piece = tuple[int, int, str | None]  # (start, end, the section it lies in)
Scanned = tuple[list[Fatbin], list[InputError]]  # one piece's fatbins and errors
# the child's work: (the file's path, its size as mapped here, the pieces) -> one result per
# piece, or None when the file is no longer the one mapped here
PieceScan = Callable[[str, int, list[Piece]], list[Scanned] | None]

# hidden bytes that pay for a second process: forking it and taking its records back cost
# far less than scanning this many (libcublasLt.so.13 has 196 MB of them, 383 fatbins)
HAND_OFF_MIN = 64 << 20


def hand_off(sizes: list[int], own: int) -> list[int]:
    """The indices of the hidden pieces (of ``sizes`` bytes) a second process scans while this
    one walks ``own`` bytes of fatbin sections: largest first, each to the side with less work
    (walking a fatbin section costs about what scanning as many bytes does); none unless that
    takes at least a quarter of the work off the busier side (cuFFT's one 265 MB ``.ldata`` is not handed off whole)."""
    loads, away = [own, 0], []
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        side = int(loads[1] < loads[0])
        loads[side] += sizes[i]
        if side:
            away.append(i)
    total = own + sum(sizes)
    return sorted(away) if away and max(loads) * 4 <= total * 3 else []


class HandOff:
    """The pieces handed to a forked child (``i in away``) and, once this process is done with
    its own, their scans (``results``). A child that cannot be started, fails, or finds the file
    no longer the one mapped here leaves them to this process (``fallback``): the record is the
    same. A bare ``os.fork`` (Linux only; elsewhere nothing is handed off), not a
    ``ProcessPoolExecutor``: importing and starting one costs a large part of the scan it
    takes off this process (libcublasLt.so.13); the child has this process's modules and sends
    its results, pickled, down a pipe. It starts as the pool's workers do (``workers.init``:
    SIGINT blocked across the fork, then ignored; it dies with this process)."""

    def __init__(
        self, disk: str | None, size: int, pieces: list[Piece], indices: list[int], work: PieceScan
    ) -> None:
        self.indices: frozenset[int] = frozenset()
        self.pid: int | None = None
        self.fd: int | None = None
        if not indices or disk is None or not sys.platform.startswith("linux"):
            return
        parent, todo = os.getpid(), [pieces[i] for i in indices]
        r, w = os.pipe()
        try:
            with workers.sigint_held():
                pid = os.fork()
        except OSError:  # no process to spare
            os.close(r)
            os.close(w)
            return
        if pid == 0:
            _child(parent, r, w, disk, size, todo, work)
        os.close(w)
        self.indices, self.pid, self.fd = frozenset(indices), pid, r

    def __contains__(self, i: int) -> bool:
        return i in self.indices

    def results(self, fallback: Callable[[int], Scanned]) -> dict[int, Scanned]:
        if self.pid is None or self.fd is None:
            return {}
        got, fd, self.fd = None, self.fd, None
        try:
            with open(fd, "rb", closefd=True) as f:  # (the pipe from the child)
                data = f.read()
            if self._reap() == 0 and data:
                import pickle  # (a listing that hands nothing off does not load it)

                got = pickle.loads(data)  # (made by the child from its records)
        except Exception:  # a child that died, or a bug there: a bug here too is this record's error
            got = None
        order = sorted(self.indices)
        if not isinstance(got, list) or len(got) != len(order):
            return {i: fallback(i) for i in order}
        return dict(zip(order, got))

    def close(self, cancel: bool = False) -> None:
        if cancel and self.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self._reap()

    def _reap(self) -> int | None:
        """Wait for the child; its exit status (None: none was started)."""
        if self.pid is None:
            return None
        pid, self.pid = self.pid, None
        try:
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        except ChildProcessError:
            return None


def _child(
    parent: int, r: int, w: int, disk: str, size: int, pieces: list[Piece], work: PieceScan
) -> NoReturn:
    """The forked child of ``HandOff``: ``work`` on ``pieces``, written pickled to ``w``, then exit
    (``os._exit``: none of the parent's cleanup, buffers or handlers run here)."""
    code = 1
    try:
        os.close(r)
        workers.init(parent)
        import pickle

        data = pickle.dumps(work(disk, size, pieces), pickle.HIGHEST_PROTOCOL)
        with open(w, "wb", closefd=True) as f:
            f.write(data)
        code = 0
    except BaseException:  # (nothing is printed here: the parent scans the pieces itself)
        pass
    finally:
        os._exit(code)


@contextlib.contextmanager
def handed_off(
    disk: str | None, blob: Blob, pieces: list[Piece], own: int, opts: Options, work: PieceScan
) -> Iterator[HandOff]:
    """A ``HandOff`` of the pieces ``hand_off`` picks, ``work`` done on them in the child, when the pieces hold ``HAND_OFF_MIN``
    bytes, ``opts.jobs`` allows a second process and ``blob`` maps the file ``disk`` whole (looked
    at last: a scan's worker, ``jobs`` 1, makes no ``stat`` for it)."""
    sizes = [b - a for a, b, _ in pieces]
    worth = (
        disk is not None
        and sum(sizes) >= HAND_OFF_MIN
        and workers.processes(opts.jobs) > 1
        and workers.maps_whole_file(blob, disk)
    )
    away = HandOff(disk, blob.size, pieces, hand_off(sizes, own) if worth else [], work)
    try:
        yield away
    except BaseException:  # Ctrl-C, or a parser bug: the child ends now
        away.close(cancel=True)
        raise
    away.close()
