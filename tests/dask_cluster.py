"""A real Dask cluster for the tests of ``scan --executor dask``: ``dask scheduler`` and
``dask worker`` processes on 127.0.0.1, each in its own process group, stopped by PID."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from conftest import ROOT, Ran, cli, fixture_path
from index_servers import free_port

distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (extra 'dask')")
BINS = ("t01_exe_sm80", "t12_lib_sm86_c89.so", "t13_raw_sm75_c75_sm120.fatbin")


def cluster_env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=ROOT, DASK_DISTRIBUTED__WORKER__DAEMON="False")


class Cluster:
    """A scheduler and workers, each in its own process group, stopped by PID."""

    def __init__(self, tmp: pathlib.Path) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.scheduler_file = str(tmp / "scheduler.json")
        self.scheduler = self._start(
            [
                "dask",
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--no-dashboard",
                "--scheduler-file",
                self.scheduler_file,
            ]
        )

    def _start(self, argv: list[str], hide: Sequence[os.PathLike[str] | str] = ()) -> subprocess.Popen[bytes]:
        cmd = [
            sys.executable,
            "-m",
            "distributed.cli." + ("dask_scheduler" if argv[1] == "scheduler" else "dask_worker"),
        ]
        cmd += argv[2:]
        if hide:  # a tmpfs over each folder in ``hide``, in a mount namespace of its own
            mounts = " && ".join(f"mount -t tmpfs none '{h}'" for h in hide)
            cmd = ["unshare", "-m", "sh", "-c", f'{mounts} && exec "$@"', "sh", *cmd]
        log = open(self.tmp / f"log{len(self.procs)}", "wb")
        p = subprocess.Popen(cmd, env=cluster_env(), stdout=log, stderr=log, start_new_session=True)
        self.procs.append(p)
        return p

    def worker(
        self, hide: Sequence[os.PathLike[str] | str] = (), preload: str | None = None
    ) -> subprocess.Popen[bytes]:
        argv = ["dask", "worker", self.address, "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1"]
        if preload:
            argv += ["--preload", preload]
        return self._start(argv, hide)

    def wait_workers(self, n: int) -> list[Any]:
        with distributed.Client(self.address, timeout=60) as c:
            c.wait_for_workers(n, timeout=120)
            return sorted(c.nthreads())

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def fixture_tree(base: pathlib.Path) -> pathlib.Path:
    """``base/tree`` with the fixtures ``BINS`` in each of lib/, hidden/ and only_local/."""
    tree = base / "tree"
    for sub in ("lib", "hidden", "only_local"):
        (tree / sub).mkdir(parents=True)
    for sub in ("lib", "hidden", "only_local"):
        for name in BINS:
            with open(fixture_path("bin", name), "rb") as fh:
                (tree / sub / name).write_bytes(fh.read())
    return tree


def cli_cache_at(args: Sequence[str], cache: pathlib.Path | None = None) -> Ran:
    """The CLI through conftest's ``cli``, its cache only at ``cache`` (none set: the default)."""
    return cli(*args, env={"FATBIN_INSPECT_CACHE_DIR": str(cache) if cache else None})


def doc_untimed(res: Ran) -> Any:
    """The JSON document of a run, without its time (which differs run to run)."""
    d = res.json()
    d["stats"].pop("seconds")
    return d
