"""scan --executor dask on a real cluster: ``dask scheduler`` and ``dask worker`` processes on
127.0.0.1, some of them in their own mount namespace (``unshare -m``) with a tmpfs over folders
they must not see."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest
from conftest import cli, fixture_path

pytestmark = [pytest.mark.dask, pytest.mark.slow]
distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (extra 'dask')")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINS = ("t01_exe_sm80", "t12_lib_sm86_c89.so", "t13_raw_sm75_c75_sm120.fatbin")


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    r = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs none /mnt"], capture_output=True)
    return r.returncode == 0


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env():
    return dict(os.environ, PYTHONPATH=REPO, DASK_DISTRIBUTED__WORKER__DAEMON="False")


class Cluster:
    """A scheduler and workers, each in its own process group, stopped by PID."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []
        self.port = _port()
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

    def _start(self, argv, hide=()):
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
        p = subprocess.Popen(cmd, env=_env(), stdout=log, stderr=log, start_new_session=True)
        self.procs.append(p)
        return p

    def worker(self, hide=(), preload=None):
        argv = ["dask", "worker", self.address, "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1"]
        if preload:
            argv += ["--preload", preload]
        return self._start(argv, hide)

    def wait_workers(self, n: int):
        with distributed.Client(self.address, timeout=60) as c:
            c.wait_for_workers(n, timeout=120)
            return sorted(c.nthreads())

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _tree(base):
    tree = base / "tree"
    for sub in ("lib", "hidden", "only_local"):
        (tree / sub).mkdir(parents=True)
    for sub in ("lib", "hidden", "only_local"):
        for name in BINS:
            with open(fixture_path("bin", name), "rb") as fh:
                (tree / sub / name).write_bytes(fh.read())
    return tree


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not _can_unshare():
        pytest.skip("needs unshare -m and mount (root, or a kernel allowing user namespaces)")
    base = tmp_path_factory.mktemp("dask")
    tree = _tree(base)
    c = Cluster(base)
    try:
        c.worker(hide=[tree / "only_local"])  # A: sees lib/ and hidden/
        c.worker(hide=[tree / "hidden", tree / "only_local"])  # B: sees lib/ only
        c.worker(hide=[base])  # C: sees nothing of the tree
        c.wait_workers(3)
        c.tree = tree
        yield c
    finally:
        c.stop()


def _cli(args, cache=None):
    """The CLI through conftest's ``cli``, its cache only at ``cache`` (none set: the default)."""
    return cli(*args, env={"FATBIN_INSPECT_CACHE_DIR": str(cache) if cache else None})


def _doc(res):
    d = res.json()
    d["stats"].pop("seconds")
    return d


def test_relative_paths_blind_workers_and_retries_give_the_local_records(cluster, tmp_path, monkeypatch):
    args = ["scan", "tree/lib", "tree/hidden", "--format", "json", "--no-cache"]
    monkeypatch.chdir(cluster.tree.parent)
    local = _cli([*args, "-j", "2"])
    dask = _cli([*args, "--executor", "dask", "--scheduler", cluster.address])
    assert local.code == 0, local.err
    assert dask.code == 0, dask.err
    assert _doc(dask) == _doc(local)
    assert len(_doc(local)["files"]) == 2 * len(BINS)
    assert all(not f.get("error") for f in _doc(dask)["files"])
    # worker C sees no root: left out, with one note naming it
    notes = [line for line in dask.err.splitlines() if "left out" in line]
    assert len(notes) == 1 and "does not see" in notes[0]


def test_a_file_no_worker_reads_is_an_error_never_cached(cluster, tmp_path):
    cache = tmp_path / "cache"
    root = str(cluster.tree / "only_local")
    dask = _cli(
        ["scan", root, "--format", "json", "--executor", "dask", "--scheduler", cluster.address], cache=cache
    )
    assert dask.code == 3, dask.err
    files = _doc(dask)["files"]
    assert len(files) == len(BINS)
    assert all("not readable on any Dask worker (2 tried)" in f["error"]["message"] for f in files)
    assert f"{len(BINS)} files not readable on any Dask worker" in dask.err
    # the same files scanned here, with the same cache: read now, not the cluster's error
    local = _cli(["scan", root, "--format", "json", "-j", "1"], cache=cache)
    assert local.code == 0, local.err
    files = _doc(local)["files"]
    assert len(files) == len(BINS) and all(not f.get("error") for f in files)
    assert _doc(local)["stats"]["cache_hits"] == 0


def test_scheduler_file_and_connect_options(cluster, tmp_path):
    root = str(cluster.tree / "lib")
    res = _cli(
        [
            "scan",
            root,
            "--format",
            "json",
            "--no-cache",
            "--executor",
            "dask",
            "--scheduler-file",
            cluster.scheduler_file,
        ]
    )
    assert res.code == 0, res.err
    assert len(_doc(res)["files"]) == len(BINS)
    bad = _cli(["scan", root, "--executor", "dask", "--scheduler", "foo://127.0.0.1:1"])
    assert bad.code == 2 and bad.err.strip().count("\n") == 0
    assert "unknown scheme 'foo'" in bad.err and "Traceback" not in bad.err
    bad = _cli(["scan", root, "--executor", "dask", "--scheduler", "tcp://127.0.0.1"])
    assert bad.code == 2 and "not an address" in bad.err
    nobody = _cli(
        [
            "scan",
            root,
            "--executor",
            "dask",
            "--scheduler",
            f"tcp://127.0.0.1:{_port()}",
            "--connect-timeout",
            "1",
        ]
    )
    assert nobody.code == 2 and "cannot reach the Dask scheduler" in nobody.err
    assert "Traceback" not in nobody.err


SLOW = """
import os, time
import fatbin_inspect.scanning.worker as w

def inspect_batch(*args, **kw):  # stands in for a long unit: the test interrupts it
    open(os.environ["FBI_TEST_MARK"], "w").close()
    time.sleep(600)

w.inspect_batch = inspect_batch
"""


@pytest.mark.parametrize("how", ["sigint", "scheduler-killed"])
def test_interrupt_or_lost_scheduler_exits_130_with_one_line(how, tmp_path):
    if not _can_unshare():
        pytest.skip("needs unshare -m")
    tree = _tree(tmp_path)
    preload = tmp_path / "slow.py"
    preload.write_text(SLOW)
    mark = tmp_path / "started"
    os.environ["FBI_TEST_MARK"] = str(mark)
    c = Cluster(tmp_path)
    try:
        c.worker(preload=str(preload))
        c.wait_workers(1)
        env = _env()
        p = subprocess.Popen(
            [sys.executable, "-m", "fatbin_inspect", "scan", str(tree / "lib"), "--no-cache", "--format", "json",
             "--executor", "dask", "--scheduler", c.address, "--connect-timeout", "3"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        while not mark.exists() and p.poll() is None:
            time.sleep(0.1)
        if how == "sigint":
            p.send_signal(signal.SIGINT)
        else:
            os.killpg(c.scheduler.pid, signal.SIGKILL)
        out, err = p.communicate(timeout=120)
        assert p.returncode == 130, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err, err
        assert ("interrupted" if how == "sigint" else "lost the Dask scheduler") in lines[0]
    finally:
        os.environ.pop("FBI_TEST_MARK", None)
        c.stop()
