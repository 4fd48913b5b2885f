"""scan --executor dask on a real cluster: ``dask scheduler`` and ``dask worker`` processes on
127.0.0.1, some of them in their own mount namespace (``unshare -m``) with a tmpfs over folders
they must not see."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from dask_cluster import BINS, Cluster, cli_cache_at, cluster_env, doc_untimed, fixture_tree, free_port

pytestmark = [pytest.mark.dask, pytest.mark.slow]


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    r = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs none /mnt"], capture_output=True)
    return r.returncode == 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not _can_unshare():
        pytest.skip("needs unshare -m and mount (root, or a kernel allowing user namespaces)")
    base = tmp_path_factory.mktemp("dask")
    tree = fixture_tree(base)
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


def test_relative_paths_blind_workers_and_retries_give_the_local_records(cluster, tmp_path, monkeypatch):
    args = ["scan", "tree/lib", "tree/hidden", "--format", "json", "--no-cache"]
    monkeypatch.chdir(cluster.tree.parent)
    local = cli_cache_at([*args, "-j", "2"])
    dask = cli_cache_at([*args, "--executor", "dask", "--scheduler", cluster.address])
    assert local.code == 0, local.err
    assert dask.code == 0, dask.err
    assert doc_untimed(dask) == doc_untimed(local)
    assert len(doc_untimed(local)["files"]) == 2 * len(BINS)
    assert all(not f.get("error") for f in doc_untimed(dask)["files"])
    # worker C sees no root: left out, with one note naming it
    notes = [line for line in dask.err.splitlines() if "left out" in line]
    assert len(notes) == 1 and "does not see" in notes[0]


def test_a_file_no_worker_reads_is_an_error_never_cached(cluster, tmp_path):
    cache = tmp_path / "cache"
    root = str(cluster.tree / "only_local")
    dask = cli_cache_at(
        ["scan", root, "--format", "json", "--executor", "dask", "--scheduler", cluster.address], cache=cache
    )
    assert dask.code == 3, dask.err
    files = doc_untimed(dask)["files"]
    assert len(files) == len(BINS)
    assert all("not readable on any Dask worker (2 tried)" in f["error"]["message"] for f in files)
    assert f"{len(BINS)} files not readable on any Dask worker" in dask.err
    # the same files scanned here, with the same cache: read now, not the cluster's error
    local = cli_cache_at(["scan", root, "--format", "json", "-j", "1"], cache=cache)
    assert local.code == 0, local.err
    files = doc_untimed(local)["files"]
    assert len(files) == len(BINS) and all(not f.get("error") for f in files)
    assert doc_untimed(local)["stats"]["cache_hits"] == 0


def test_scheduler_file_and_connect_options(cluster, tmp_path):
    root = str(cluster.tree / "lib")
    res = cli_cache_at(
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
    assert len(doc_untimed(res)["files"]) == len(BINS)
    bad = cli_cache_at(["scan", root, "--executor", "dask", "--scheduler", "foo://127.0.0.1:1"])
    assert bad.code == 2 and bad.err.strip().count("\n") == 0
    assert "unknown scheme 'foo'" in bad.err and "Traceback" not in bad.err
    bad = cli_cache_at(["scan", root, "--executor", "dask", "--scheduler", "tcp://127.0.0.1"])
    assert bad.code == 2 and "not an address" in bad.err
    nobody = cli_cache_at(
        [
            "scan",
            root,
            "--executor",
            "dask",
            "--scheduler",
            f"tcp://127.0.0.1:{free_port()}",
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
    tree = fixture_tree(tmp_path)
    preload = tmp_path / "slow.py"
    preload.write_text(SLOW)
    mark = tmp_path / "started"
    os.environ["FBI_TEST_MARK"] = str(mark)
    c = Cluster(tmp_path)
    try:
        c.worker(preload=str(preload))
        c.wait_workers(1)
        env = cluster_env()
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
