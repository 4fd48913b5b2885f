"""The scan's work units on a Dask distributed cluster (``scan --executor dask``).

The units are the local pool's (``worker.inspect_batch``/``inspect_span`` on absolute paths: a
worker resolves a relative one against its own cwd). Before any unit is sent, a probe runs on every
worker (``Client.run``) and checks that it sees every root; workers that do not are left out (a
note says which). A worker may still miss a file (another mount, a permission): ``run_unit``
checks each path's size and mtime against the client's stat before reading it and hands back the
ones it could not see, which go to another worker; a file no worker could read becomes an error
record the scan never caches. The cache stays on the client.

Addresses: ``tcp://HOST:PORT``, ``tls://HOST:PORT`` (certificates from ``scan --tls-ca-file
--tls-cert [--tls-key]``, else from Dask's own configuration, ``distributed.comm.tls.*`` or
``DASK_DISTRIBUTED__COMM__TLS__*``), ``HOST:PORT`` (tcp), or a scheduler file (``dask scheduler
--scheduler-file``).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from fatbin_inspect.errors import UsageError
from fatbin_inspect.scanning.executors import Done, Queued, Unread
from fatbin_inspect.scanning.units import FileRef, Unit

SCHEMES = ("tcp", "tls")
_ADDRESS = re.compile(r"(?:([A-Za-z][A-Za-z0-9+.-]*)://)?(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(\d{1,5})")


class ClusterLost(UsageError):
    """The Dask scheduler went away during a scan (exit 130, like an interrupt)."""

    exit_code = 130


def check_address(address: str) -> str:
    """``address`` as Dask takes it, or a UsageError naming what is wrong with it."""
    m = _ADDRESS.fullmatch(address.strip())
    if m is None:
        raise UsageError(
            f"--scheduler {address!r}: not an address of the form tcp://HOST:PORT or tls://HOST:PORT"
        )
    scheme = (m.group(1) or "tcp").lower()
    if scheme not in SCHEMES:
        raise UsageError(f"--scheduler {address!r}: unknown scheme {scheme!r} (use tcp:// or tls://)")
    if not 0 < int(m.group(3)) < 65536:
        raise UsageError(f"--scheduler {address!r}: port {m.group(3)} is out of range")
    return f"{scheme}://{m.group(2)}:{int(m.group(3))}"


SCHEDULER_FILE_MAX = 1 << 20  # ``dask scheduler --scheduler-file`` writes a few hundred bytes
TLS_FILE_MAX = 1 << 20  # a PEM certificate, key or CA bundle (Debian's whole bundle: ~220 KB)


def scheduler_file_address(path: str) -> str:
    """The scheduler's address from the JSON file ``dask scheduler --scheduler-file`` wrote,
    read here rather than by ``distributed`` (which opens whatever it is named, a FIFO or
    ``/dev/zero`` too, and waits for a file that is not there): a regular file of at most
    ``SCHEDULER_FILE_MAX`` bytes (``binio.read_regular``) holding a JSON object whose
    ``address`` is an address ``check_address`` takes. UsageError naming the file and the key."""
    import json

    from fatbin_inspect.errors import InputError
    from fatbin_inspect.formats.binio import read_regular

    where = f"--scheduler-file {path}"
    try:
        doc = json.loads(read_regular(path, SCHEDULER_FILE_MAX))
    except InputError as exc:
        raise UsageError(f"{where}: {exc.message}") from None
    except (ValueError, RecursionError) as exc:  # (UnicodeDecodeError is a ValueError)
        raise UsageError(f"{where}: not JSON ({type(exc).__name__})") from None
    if type(doc) is not dict:
        raise UsageError(f"{where}: not a JSON object but {type(doc).__name__}")
    address = doc.get("address")
    if type(address) is not str:
        raise UsageError(f"{where}: key 'address' is {type(address).__name__}, not a string")
    try:
        return check_address(address)
    except UsageError as exc:
        raise UsageError(f"{where}: key 'address': {str(exc).removeprefix('--scheduler ')}") from None


def security(tls: tuple[str, str, str | None] | None, address: str | None) -> Any:
    """A ``distributed.Security`` from ``(CA file, certificate, key or None)`` (the certificate
    file may hold the key), encryption required; None without ``tls`` (Dask's configuration
    then gives a ``tls://`` address its certificates). UsageError naming the option for a file
    that is not readable, or for certificates given with a ``tcp://`` address."""
    if tls is None:
        return None
    if address is not None and not address.startswith("tls://"):
        raise UsageError(f"--tls-ca-file/--tls-cert: the scheduler {address} is not a tls:// address")
    for option, path in zip(("--tls-ca-file", "--tls-cert", "--tls-key"), tls, strict=True):
        if path is not None and not (os.path.isfile(path) and os.access(path, os.R_OK)):
            raise UsageError(f"{option} {path}: not a readable file")
        if path is not None and os.path.getsize(path) > TLS_FILE_MAX:
            raise UsageError(f"{option} {path}: over {TLS_FILE_MAX:,} bytes, no certificate file")
    from distributed.security import Security

    ca, cert, key = tls
    return Security(tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key, require_encryption=True)


def connect(
    scheduler: str | None,
    scheduler_file: str | None = None,
    timeout: float = 30,
    tls: tuple[str, str, str | None] | None = None,
) -> Any:
    """A ``distributed.Client``; UsageError when there is no address, no dask, or no answer.
    ``tls``: the client's ``(CA file, certificate, key or None)`` for a ``tls://`` scheduler."""
    if not scheduler and not scheduler_file:
        raise UsageError("--executor dask needs --scheduler tcp://HOST:PORT or --scheduler-file FILE")
    address = check_address(scheduler) if scheduler else scheduler_file_address(str(scheduler_file))
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(
            "--executor dask needs dask.distributed: pip install 'fatbin-inspect[dask]'"
        ) from None
    sec = security(tls, address)
    where = address if scheduler else f"{address} (from {scheduler_file})"
    _silence_distributed()
    try:
        return Client(address, timeout=timeout, security=sec)
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {where}: {exc or type(exc).__name__}") from None


def _silence_distributed() -> None:
    """The client's own log lines (reconnect attempts, tracebacks) would reach the user's
    stderr; what matters comes back as one error line (ClusterLost, UsageError)."""
    import logging

    for name in [n for n in logging.root.manager.loggerDict if n.split(".")[0] == "distributed"]:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    logging.getLogger("distributed").setLevel(logging.CRITICAL + 1)


def sees(paths: list[str]) -> bool:
    """Run on each worker: every one of ``paths`` exists there."""
    return all(os.path.exists(p) for p in paths)


def usable_workers(client: Any, roots: list[str]) -> tuple[dict[str, int], list[str]]:
    """``({worker address: threads}, notes)``: the workers that see every root."""
    threads = client.nthreads()
    seen = client.run(sees, roots)
    good = {w: n for w, n in threads.items() if seen.get(w)}
    notes = [
        f"Dask worker {w} does not see {roots[0] if len(roots) == 1 else 'the scanned paths'}: left out"
        for w in sorted(threads)
        if w not in good
    ]
    if not good:
        raise UsageError(
            f"no Dask worker sees {roots[0] if len(roots) == 1 else 'the scanned paths'}"
            f" ({len(threads)} worker{'s' * (len(threads) != 1)} asked)"
        )
    return good, notes


def _visible(path: str, key: tuple[int, ...]) -> bool:
    """The file the client stat-ed (same size and mtime), readable here."""
    if os.path.isdir(path):  # an OCI image layout: keyed by its index.json
        path = os.path.join(path, "index.json")
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (st.st_size, st.st_mtime_ns) == (key[2], key[3]) and os.access(path, os.R_OK)


class Ran(NamedTuple):
    """A unit run on a worker: the worker's address, the unit's result (None where it read
    nothing), and the files it could not see there."""

    worker: str
    result: Any
    unseen: list[FileRef]


def run_unit(fn: Callable[..., Any], args: tuple[Any, ...]) -> Ran:
    """Run on a worker: ``fn(*args)`` for the files this worker sees. ``fn`` is
    ``worker.inspect_batch`` (args[0] a batch) or ``worker.inspect_span`` (args[0:2] path and key)."""
    from distributed import get_worker

    here = get_worker().address
    if fn.__name__ == "inspect_span":
        if not _visible(args[0], args[1]):
            return Ran(here, None, [FileRef(args[0], args[1])])
        return Ran(here, fn(*args), [])
    batch = args[0]
    unseen = [FileRef(p, k) for p, k in batch if not _visible(p, k)]
    if not unseen:
        return Ran(here, fn(*args), [])
    rest = [u for u in batch if u not in unseen]
    return Ran(here, fn(rest, *args[1:]) if rest else [], unseen)


class DaskExecutor(Queued):
    """The scan's units on the Dask workers that see the roots (``start`` probes them). A unit a
    worker could not see goes to another one (a batch: the files it could not see); where none
    is left it comes back ``Unread``. A lost scheduler is ``ClusterLost``."""

    remote = True

    def __init__(
        self,
        scheduler: str | None,
        scheduler_file: str | None = None,
        timeout: float = 30,
        tls: tuple[str, str, str | None] | None = None,
    ) -> None:
        super().__init__()
        self.where = scheduler or scheduler_file
        self.client = connect(scheduler, scheduler_file, timeout, tls)
        self.jobs = 2  # until ``start`` has found the workers that see the roots
        self.workers: dict[str, int] = {}
        self.executors: dict[frozenset[str], Any] = {}  # workers left out -> an executor for the rest
        self.units: dict[Any, tuple[Unit, frozenset[str]]] = {}  # future -> (unit, workers tried)

    def start(self, roots: list[str]) -> list[str]:
        """The workers that see ``roots``; a note for each left out. In flight and split as for
        a local pool of as many processes as they have threads; never in-process."""
        try:
            self.workers, notes = usable_workers(self.client, roots)
        except BaseException:
            self.client.close()
            raise
        self.jobs = max(2, sum(self.workers.values()))
        return notes

    def _run(self, unit: Unit, tried: frozenset[str] = frozenset()) -> Any:
        """``unit`` to the workers that see the roots, less those ``tried``."""
        ex = self.executors.get(tried)
        if ex is None:
            ex = self.executors[tried] = self.client.get_executor(
                pure=False, workers=[w for w in self.workers if w not in tried], allow_other_workers=False
            )
        fut = ex.submit(run_unit, unit.fn, unit.args)
        self.units[fut] = (unit, tried)
        return fut

    def done(self, wait: bool = False) -> list[Done]:
        out: list[Done] = []
        for fut in self._ended(wait):
            out += self._answer(fut)
        self._hand_out()
        return out

    def _answer(self, fut: Any) -> list[Done]:
        """A unit's result; what a worker could not see sent elsewhere, or ``Unread``."""
        unit, tried = self.units.pop(fut)
        here, result, unseen = self._result(fut)
        if not unseen:
            return [Done(unit, result)]
        tried = tried | {here}
        left = any(w not in tried for w in self.workers)
        if unit.part is not None:  # a part: again elsewhere, or the whole file is unread
            if left:
                self.inflight.add(self._run(unit, tried))
                return []
            return [Done(unit, Unread(len(tried)))]
        rest = Unit(unit.fn, (unseen, *unit.args[1:]))  # a batch: the files it could not see
        if left:
            self.inflight.add(self._run(rest, tried))
            return [Done(unit, result)]
        return [Done(rest, Unread(len(tried))), Done(unit, result)]

    def _result(self, fut: Any) -> Ran:
        """``run_unit``'s answer; a lost scheduler is ``ClusterLost``."""
        try:
            return fut.result()
        except (KeyboardInterrupt, ClusterLost):
            raise
        except Exception as exc:
            lost = ("CancelledError", "CommClosedError", "FutureCancelledError")
            if self.client.status != "running" or type(exc).__name__ in lost:
                raise ClusterLost(f"lost the Dask scheduler at {self.where}: {type(exc).__name__}") from None
            raise

    def abandon(self) -> None:
        with contextlib.suppress(Exception):
            self.client.cancel(list(self.inflight), force=True)
        self.inflight = set()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close(timeout=5)
