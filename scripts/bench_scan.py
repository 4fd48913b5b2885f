#!/usr/bin/env python3
"""Benchmark ``fatbin-inspect scan`` on real wheels (issue 4). Prints ratios measured in one run.

    python scripts/bench_scan.py [--corpus .cache/corpus] [--work .cache/bench_scan] [--jobs N]

(a) the extracted tree scanned (no cache) vs ``cuobjdump -lelf -lptx`` on each ELF file of it,
    run on the same number of parallel workers (target: >= 10x faster);
(b) the wheels scanned directly (no cache) vs only inflating their candidate members once, both
    serially and spread over the same workers (target: <= 1.5x);
(c) a warm-cache rescan of the tree vs the cold scan (target: >= 20x);
(d) peak resident memory of the scan, its worker processes included, sampled every 20 ms (< 500 MB);
(e) an OCI image tarball (one gzip'd layer) of the fixture binaries vs the same files as a folder,
    alternating, median of 5 (target: <= 1.5x); ``--oci-only`` runs just this row (no corpus needed);
(f) ``--members-cost``: the torch wheel scanned with members judged by content vs by name only;
(g) ``--dask``: the corpus wheels on a 2-worker Dask LocalCluster vs the local pool of 2 processes
    (same records asserted);
(h) ``--dask-cluster``: the extracted corpus tree (.cache/corpus/x) x1 and x3 (hard-linked copies)
    scanned to JSON by the CLI on a real cluster (``dask scheduler`` + 2 ``dask worker`` processes
    on 127.0.0.1) vs the local pool of 2 processes: seconds, and the client's peak RSS (the Dask
    client has no child processes; the local figure includes its 2 workers).
Every scan runs as the CLI in a subprocess (interpreter start-up included). The wheels are
extracted into --work (gitignored), never into the repository.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from fatbin_inspect.containers import archives  # noqa: E402

WHEELS = (
    "torch-2.14.1-",
    "nvidia_cublas-13.",
    "nvidia_cufft-12.",
    "nvidia_nccl_cu13-",
    "cupy_cuda12x-",
    "onnxruntime_gpu-",
)


def _tree_sum(pid: int, table: str, key: str, each: dict | None = None) -> int:
    """The bytes line ``key`` of /proc/PID/``table`` gives, summed over ``pid`` and all its
    descendants (Linux /proc, no psutil needed); ``each``: pid -> the largest value seen of that
    process, updated."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/{table}") as fh:
                for line in fh:
                    if line.startswith(key):
                        value = int(line.split()[1]) * 1024
                        total += value
                        if each is not None:
                            each[p] = max(each.get(p, 0), value)
                        break
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except (OSError, ValueError):
            continue
    return total


def _tree_rss(pid: int, each: dict | None = None) -> int:
    """Resident bytes of ``pid`` and all its descendants (``each``: as ``_tree_sum``)."""
    return _tree_sum(pid, "status", "VmRSS:", each)


def _tree_pss(pid: int) -> int:
    """Proportional bytes of ``pid`` and all its descendants (``Pss`` of smaps_rollup): a page
    several processes share counts once over them all, where each one's RSS counts it whole
    (forked workers share their parent's pages)."""
    return _tree_sum(pid, "smaps_rollup", "Pss:")


def peak_pss(cmd, env=None) -> int:
    """The peak proportional memory of a subprocess's tree (``_tree_pss``, plus the machine's
    shared memory grown meanwhile), sampled every 20 ms; reading smaps costs more than status,
    so these runs are not the timed ones."""
    base = _shmem()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_pss(proc.pid) + max(0, _shmem() - base))
        time.sleep(0.02)
    return peak


def run_measured(cmd, env=None):
    """(seconds, peak tree RSS bytes, returncode) of a subprocess."""
    secs, peak, _largest, rc = run_measured_each(cmd, env)
    return secs, peak, rc


def _shmem() -> int:
    """The machine's shared-memory bytes now (``Shmem`` of /proc/meminfo; 0 elsewhere)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("Shmem:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def run_measured_each(cmd, env=None):
    """(seconds, peak tree memory bytes, peak RSS bytes of its largest process, returncode).
    The tree's memory is its RSS plus the machine's shared memory grown since the start: the
    pages of memory files (``inventory.spill``'s ring) are in no process's RSS, yet held all the
    same (one sample, every 20 ms, of both)."""
    start = time.monotonic()
    base = _shmem()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = [0]
    each: dict[int, int] = {}

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss(proc.pid, each) + max(0, _shmem() - base))
            time.sleep(0.02)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    _, err = proc.communicate()
    secs = time.monotonic() - start
    t.join()
    if proc.returncode not in (0, 1):
        sys.stderr.write(err.decode(errors="replace")[-2000:])
    return secs, peak[0], max(each.values(), default=0), proc.returncode


def extract(wheels, work):
    tree = os.path.join(work, "tree")
    for w in wheels:
        dest = os.path.join(tree, os.path.basename(w)[:-4])
        if os.path.exists(os.path.join(dest, ".complete")):
            continue
        shutil.rmtree(dest, ignore_errors=True)
        with zipfile.ZipFile(w) as zf:
            zf.extractall(dest)
        open(os.path.join(dest, ".complete"), "w").close()
    return tree


def inflate_candidates(wheel: str) -> int:
    """The zlib floor: inflate every candidate member once, keep nothing."""
    n = 0
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.is_dir() or not archives.is_candidate(info.filename):
                continue
            with zf.open(info) as fh:
                while True:
                    chunk = fh.read(archives.CHUNK)
                    if not chunk:
                        break
                    n += len(chunk)
    return n


def find_cuobjdump():
    from conftest import find_cuobjdump as find

    return find()


def elf_files(tree):
    for d, _, files in os.walk(tree):
        for f in files:
            p = os.path.join(d, f)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            with open(p, "rb") as fh:
                if fh.read(4) == b"\x7fELF":
                    yield p


def oci_vs_dir(work: str, env: dict, scan: list, rounds: int = 5) -> float:
    """(e): the fixtures as an image's only layer, in an OCI archive, vs the same files as a folder."""
    import statistics

    from builders import layer_tar, oci_layout, tar_of_dir

    base = os.path.join(work, "oci")
    shutil.rmtree(base, ignore_errors=True)
    tree = os.path.join(base, "tree", "usr", "lib")
    os.makedirs(tree)
    files = []
    for p in sorted(glob.glob(os.path.join(ROOT, "fixtures", "bin", "*"))):
        with open(p, "rb") as fh:
            data = fh.read()
        files.append(("usr/lib/" + os.path.basename(p), data))
        with open(os.path.join(tree, os.path.basename(p)), "wb") as fh:
            fh.write(data)
    layout = os.path.join(base, "layout")
    oci_layout(layout, [layer_tar(files)])
    image = os.path.join(base, "image.tar")
    with open(image, "wb") as fh:
        fh.write(tar_of_dir(layout))
    folder = os.path.join(base, "tree")
    times = {"image": [], "folder": []}
    for _ in range(rounds):
        for name, target in (("image", image), ("folder", folder)):
            times[name].append(run_measured([*scan, "--no-cache", target], env)[0])
    img, fol = statistics.median(times["image"]), statistics.median(times["folder"])
    size = sum(len(d) for _, d in files)
    print(
        f"\n(e) OCI archive of the {len(files)} fixtures ({size / 2**20:.1f} MiB, one gzip'd layer): {img:.2f} s; "
        f"the same files as a folder: {fol:.2f} s (medians of {rounds}, alternating)"
    )
    print(f"    ratio: {img / fol:.2f}x (target <= 1.5x)")
    return img / fol


def _alternate(rounds: int, sides: dict) -> dict:
    """Median seconds of each zero-argument callable, run alternately ``rounds`` times."""
    import statistics

    times: dict = {k: [] for k in sides}
    for _ in range(rounds):
        for k, fn in sides.items():
            start = time.monotonic()
            fn()
            times[k].append(time.monotonic() - start)
    return {k: statistics.median(v) for k, v in times.items()}


def members_cost(corpus: str, jobs: int, rounds: int = 3) -> None:
    """(f): what judging unnamed members by their first block costs on the torch wheel."""
    from fatbin_inspect.scanning import ScanOptions, scan

    whl = sorted(glob.glob(os.path.join(corpus, "torch-*.whl")))[:1]
    if not whl:
        print("\n(f) no torch wheel in the corpus: skipped")
        return
    real = archives._zip_file
    opts = ScanOptions(jobs=jobs, cache_dir=None)

    def by_name():
        archives._zip_file = lambda info: False  # the old name filter: no member judged by content
        try:
            return scan(whl, opts)
        finally:
            archives._zip_file = real

    m = _alternate(rounds, {"content": lambda: scan(whl, opts), "name": by_name})
    judged = sum(1 for i in zipfile.ZipFile(whl[0]).infolist() if not archives.zip_wanted(i) and real(i))
    print(
        f"\n(f) {os.path.basename(whl[0])}: {judged} members judged by their first block; scan "
        f"{m['content']:.2f} s vs {m['name']:.2f} s by name only (medians of {rounds}): {m['content'] / m['name']:.2f}x"
    )


def dask_vs_pool(corpus: str, rounds: int = 3) -> None:
    """(g): the same scan on a 2-worker Dask LocalCluster and on a local pool of 2 processes."""
    try:
        from distributed import LocalCluster
    except ImportError:
        print("\n(g) dask.distributed not installed: skipped (pip install 'fatbin-inspect[dask]')")
        return
    from fatbin_inspect.scanning import ScanOptions, scan

    wheels = [w for w in sorted(glob.glob(os.path.join(corpus, "*.whl"))) if "/torch-" not in w]
    size = sum(os.path.getsize(w) for w in wheels)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", silence_logs=40) as c:
        ref = scan(wheels, ScanOptions(jobs=2, cache_dir=None)).reports
        dask = ScanOptions(cache_dir=None, executor="dask", scheduler=c.scheduler_address)
        assert scan(wheels, dask).reports == ref, "dask records differ from the local pool's"
        m = _alternate(
            rounds,
            {
                "pool": lambda: scan(wheels, ScanOptions(jobs=2, cache_dir=None)),
                "dask": lambda: scan(wheels, dask),
            },
        )
    print(
        f"\n(g) {len(wheels)} corpus wheels ({size / 2**20:.0f} MiB), same records: local pool of 2 "
        f"{m['pool']:.2f} s ({size / 2**20 / m['pool']:.0f} MiB/s), Dask with 2 workers {m['dask']:.2f} s "
        f"({size / 2**20 / m['dask']:.0f} MiB/s): {m['dask'] / m['pool']:.2f}x"
    )


def dask_cluster(corpus: str, work: str) -> None:
    """(h): see the module docstring (the tree: ``corpus``/x)."""
    import socket

    x = os.path.join(corpus, "x")
    if not os.path.isdir(x) or shutil.which("dask") is None:
        print("\n(h) no extracted corpus (--corpus/x) or no dask CLI: skipped")
        return
    trees = {"x1": [x]}
    copies = []
    for i in range(3):
        c = os.path.join(work, f"x3-{i}")
        if not os.path.isdir(c):
            subprocess.run(["cp", "-al", x, c], check=True)
        copies.append(c)
    trees["x3"] = copies
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=ROOT)
    address = f"tcp://127.0.0.1:{port}"
    argv = [["dask", "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"]]
    argv += [["dask", "worker", address, "--nthreads", "1", "--no-dashboard"]] * 2
    procs = [
        subprocess.Popen(
            a, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        for a in argv
    ]
    try:
        from distributed import Client

        with Client(address, timeout=60) as c:
            c.wait_for_workers(2, timeout=120)
        cli = [
            sys.executable,
            "-m",
            "fatbin_inspect",
            "scan",
            "--no-cache",
            "--format",
            "json",
            "-o",
            os.devnull,
        ]
        for name, paths in trees.items():
            size = sum(
                os.path.getsize(os.path.join(d, f)) for p in paths for d, _, fs in os.walk(p) for f in fs
            )
            t_l, m_l, rc_l = run_measured(cli + ["-j", "2", *paths], env)
            t_d, m_d, rc_d = run_measured(cli + ["--executor", "dask", "--scheduler", address, *paths], env)
            print(
                f"\n(h) corpus tree {name} ({size / 2**20:.0f} MiB): local pool of 2 {t_l:.2f} s "
                f"(peak {m_l / 2**20:.0f} MB with workers, rc {rc_l}); Dask 2 workers {t_d:.2f} s "
                f"(client peak {m_d / 2**20:.0f} MB, rc {rc_d}): {t_d / t_l:.2f}x"
            )
    finally:
        for p in procs:
            os.killpg(p.pid, 9)
            p.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.path.join(ROOT, ".cache", "corpus"))
    ap.add_argument("--work", default=os.path.join(ROOT, ".cache", "bench_scan"))
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--skip-cuobjdump", action="store_true")
    ap.add_argument("--oci-only", action="store_true", help="Only (e): an OCI archive vs a folder.")
    ap.add_argument("--members-cost", action="store_true", help="Only (f): members by content, torch wheel.")
    ap.add_argument("--dask", action="store_true", help="Only (g): Dask LocalCluster vs the local pool.")
    ap.add_argument("--dask-cluster", action="store_true", help="Only (h): a real cluster, corpus x1 and x3.")
    args = ap.parse_args()
    if args.dask_cluster:
        os.makedirs(args.work, exist_ok=True)
        dask_cluster(args.corpus, args.work)
        return 0
    if args.members_cost or args.dask:
        if args.members_cost:
            members_cost(args.corpus, args.jobs)
        if args.dask:
            dask_vs_pool(args.corpus)
        return 0
    if args.oci_only:
        env = dict(os.environ, FATBIN_INSPECT_JOBS=str(args.jobs), FATBIN_INSPECT_PROGRESS="0")
        oci_vs_dir(args.work, env, [sys.executable, "-m", "fatbin_inspect", "scan", "-o", os.devnull])
        return 0
    wheels = [w for pre in WHEELS for w in sorted(glob.glob(os.path.join(args.corpus, pre + "*.whl")))[:1]]
    if len(wheels) < len(WHEELS):
        print(f"missing wheels in {args.corpus}; need {', '.join(WHEELS)}", file=sys.stderr)
        return 2
    total = sum(os.path.getsize(w) for w in wheels)
    print(f"{len(wheels)} wheels, {total / 2**20:.0f} MiB: {', '.join(os.path.basename(w) for w in wheels)}")
    print(f"workers: {args.jobs} (cores: {os.cpu_count()})")
    tree = extract(wheels, args.work)
    cache = os.path.join(args.work, "cache")
    env = dict(
        os.environ,
        FATBIN_INSPECT_CACHE_DIR=cache,
        FATBIN_INSPECT_JOBS=str(args.jobs),
        FATBIN_INSPECT_PROGRESS="0",
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed by pip: byte code compiled once, reused
    scan = [sys.executable, "-m", "fatbin_inspect", "scan", "-o", os.devnull]
    peaks = {}

    # warm the page cache so every contender reads from memory, not from disk
    for w in wheels:
        with open(w, "rb") as fh:
            while fh.read(64 << 20):
                pass
    run_measured(scan + ["--no-cache", tree], env)

    # (a) extracted tree vs cuobjdump per file
    t_tree, peaks["tree, no cache"], _ = run_measured(scan + ["--no-cache", tree], env)
    print(f"\n(a) scan of the extracted tree (no cache): {t_tree:.2f} s")
    exe = None if args.skip_cuobjdump else find_cuobjdump()
    if exe:
        files = list(elf_files(tree))
        fails = [0]

        def one(p):
            r = subprocess.run(
                [exe, "-lelf", "-lptx", p], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            fails[0] += r.returncode != 0

        start = time.monotonic()
        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(one, files))
        t_cuob = time.monotonic() - start
        print(
            f"    cuobjdump -lelf -lptx on each of {len(files)} ELF files ({fails[0]} failed), "
            f"{args.jobs} at a time: {t_cuob:.2f} s"
        )
        print(f"    ratio: scan is {t_cuob / t_tree:.1f}x faster (target >= 10x)")
    else:
        print("    cuobjdump not found: (a) skipped (pip install nvidia-cuda-cuobjdump==13.5.37)")

    # (b) wheels directly vs the zlib floor
    t_whl, peaks["wheels, no cache"], _ = run_measured(scan + ["--no-cache", *wheels], env)
    start = time.monotonic()
    inflated = sum(inflate_candidates(w) for w in wheels)
    t_floor_serial = time.monotonic() - start
    start = time.monotonic()
    with ProcessPoolExecutor(args.jobs) as pool:
        list(pool.map(inflate_candidates, sorted(wheels, key=os.path.getsize, reverse=True)))
    t_floor_par = time.monotonic() - start
    print(f"\n(b) scan of the {len(wheels)} wheels (no cache): {t_whl:.2f} s")
    print(
        f"    inflating their candidate members once ({inflated / 2**20:.0f} MiB): "
        f"{t_floor_serial:.2f} s serially, {t_floor_par:.2f} s on {args.jobs} workers"
    )
    print(
        f"    ratio: {t_whl / t_floor_serial:.2f}x the serial floor, {t_whl / t_floor_par:.2f}x the parallel "
        f"floor (target <= 1.5x)"
    )

    # (c) warm vs cold
    shutil.rmtree(cache, ignore_errors=True)
    t_cold, peaks["tree, cold cache"], _ = run_measured(scan + [tree], env)
    t_warm, peaks["tree, warm cache"], _ = run_measured(scan + [tree], env)
    print(
        f"\n(c) tree, cold cache: {t_cold:.2f} s; warm cache: {t_warm:.2f} s; "
        f"ratio {t_cold / t_warm:.1f}x (target >= 20x)"
    )
    shutil.rmtree(cache, ignore_errors=True)
    t_cold_w, peaks["wheels, cold cache"], _ = run_measured(scan + wheels, env)
    t_warm_w, peaks["wheels, warm cache"], _ = run_measured(scan + wheels, env)
    print(
        f"    wheels, cold cache: {t_cold_w:.2f} s; warm cache: {t_warm_w:.2f} s; "
        f"ratio {t_cold_w / t_warm_w:.1f}x (target >= 20x)"
    )

    oci_vs_dir(args.work, env, scan)  # (e)

    # (d) memory
    worst = max(peaks.values())
    print(
        "\n(d) peak RSS, workers included: " + ", ".join(f"{k} {v / 2**20:.0f} MB" for k, v in peaks.items())
    )
    print(f"    max {worst / 2**20:.0f} MB (target < 500 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
