"""scan --executor dask: the local pool's work units on a Dask cluster (a LocalCluster here)."""

import pytest
from builders import conda_index, conda_package, tar_archive, zip_archive
from conftest import cli, fixture_path, read_file

from fatbin_inspect.scanning import ScanOptions, scan

pytestmark = pytest.mark.dask
distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (extra 'dask')")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
    ) as c:
        yield c


def _tree(tmp_path):
    root = tmp_path / "tree"
    (root / "lib").mkdir(parents=True)
    for name in (
        "t01_exe_sm80",
        "t12_lib_sm86_c89.so",
        "t13_raw_sm75_c75_sm120.fatbin",
        "t10_rdc_lib_sm80.a",
    ):
        (root / "lib" / name).write_bytes(read_file(fixture_path("bin", name)))
    (root / "lib" / "broken.so").write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"\x50\xed\x55\xba" * 40)
    (root / "w-1.0-py3-none-any.whl").write_bytes(
        zip_archive([("w/libw.so", read_file(fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")))])
    )
    (root / "img.tar").write_bytes(
        tar_archive([("usr/bin/app", read_file(fixture_path("bin", "t01_exe_sm80")))])
    )
    index = conda_index("k", "1.0", "cuda126_0", ["cuda-version >=12.6"])
    (root / "k-1.0-cuda126_0.conda").write_bytes(
        conda_package(index, [("lib/libk.so", read_file(fixture_path("bin", "t12_lib_sm86_c89.so")))])
    )
    return root


def test_dask_gives_the_local_pools_records(cluster, tmp_path):
    root = _tree(tmp_path)
    local = scan([str(root)], ScanOptions(jobs=2, cache_dir=None))
    dask = scan(
        [str(root)], ScanOptions(cache_dir=None, executor="dask", scheduler=cluster.scheduler_address)
    )
    assert len(local.reports) >= 8
    assert dask.reports == local.reports
    assert [r.distribution for r in dask.reports] == [r.distribution for r in local.reports]


def test_dask_json_is_identical_and_the_cache_is_consulted_first(cluster, tmp_path, monkeypatch):
    root = _tree(tmp_path)
    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(tmp_path / "cache"))

    def doc(*extra):
        d = cli("scan", root, "--format", "json", *extra, codes=0).json()
        d["stats"].pop("seconds")
        return d

    local = doc("--no-cache", "-j", "2")
    cold = doc("--executor", "dask", "--scheduler", cluster.scheduler_address)
    assert cold == local
    # warm: every file is answered from this machine's cache, nothing is sent to the cluster
    sent = _tasks_seen(cluster)
    warm = doc("--executor", "dask", "--scheduler", cluster.scheduler_address)
    assert _tasks_seen(cluster) == sent > 0
    hits = warm["stats"].pop("cache_hits")
    cold["stats"].pop("cache_hits")
    assert warm == cold and hits == cold["stats"]["inspected"]


def _tasks_seen(cluster) -> int:
    """Tasks of the scan's work functions the scheduler has ever been given."""
    prefixes = cluster.scheduler.task_prefixes
    return sum(
        sum(prefixes[p].state_counts.values()) for p in prefixes if p.startswith(("inspect_", "run_unit"))
    )


def test_dask_without_a_scheduler_is_a_usage_error(tmp_path):
    res = cli("scan", tmp_path, "--executor", "dask")
    assert res.code == 2 and "--scheduler" in res.out + res.err
