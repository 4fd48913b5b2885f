#!/usr/bin/env python3
"""Issue 54's figures for packages judged from an index, each a ratio printed in one run, against a
real index (pypiserver, started here on 127.0.0.1 over the corpus wheels and ten built releases):

  1 cold ``check pkg:pypi/NAME@V`` (empty cache) vs ``pip download --no-deps`` of the same file
    plus ``check`` of it: wall, median of --pairs alternating pairs                    [<= 1.0]
  2 per wheel: bytes fetched vs the candidate members' compressed size + 1 MiB         [<= 1.0]
    and vs the whole wheel (the saving)
  3 warm repeat of 1 (cache filled): wheel bytes fetched (goal 0) and wall             [<= 0.5 s]
  4 ``releases NAME`` over 10 releases, warm                                           [<= 2 s]

    python scripts/bench_index.py [--pairs 3] [--wheels torchvision,nvidia_curand] [--work DIR]

Every timed command is a child process (interpreter start included) with pip's configuration set
aside (PIP_CONFIG_FILE=/dev/null) and the index named; the wheel files' pages are warmed first.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, ".cache", "corpus")
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
TARGETS = ["--gpu", "H100", "--gpu", "GTX 1080", "--driver", "580", "--format", "json"]


def _env(cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "FATBIN_INSPECT_CACHE_DIR": cache, "PYTHONPATH": ROOT}


CPU: list[float] = [0.0]  # user + system seconds of the children run so far


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _run(argv: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one child (its CPU seconds added to ``CPU[0]``): on a shared host the
    CPU seconds tell a contended machine from a slower program."""
    start, cpu = time.perf_counter(), _cpu()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - start
    CPU[0] += _cpu() - cpu
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
    return took


def _tool(*args: str) -> list[str]:
    return [sys.executable, "-m", "fatbin_inspect", *args]


def cold_vs_pip(index: str, pin: str, work: str, pairs: int) -> tuple[float, float]:
    """Median walls of a cold index check and of pip download + check of the file."""
    ours, theirs = [], []
    check = _tool("check", f"pkg:pypi/{pin.replace('==', '@')}", "--index-url", index, *TARGETS)
    for i in range(pairs):
        cache = tempfile.mkdtemp(dir=work)
        ours.append(_run(check, _env(cache)))
        dl = tempfile.mkdtemp(dir=work)
        start = time.perf_counter()
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary=:all:",
                "--index-url",
                index,
                "-d",
                dl,
                pin,
            ],
            _env(cache),
        )
        (got,) = os.listdir(dl)
        _run(_tool("check", os.path.join(dl, got), *TARGETS), _env(cache))
        theirs.append(time.perf_counter() - start)
        shutil.rmtree(dl)
        if i == 0:
            before = CPU[0]
            warm = [_run(check, _env(cache)) for _ in range(3)]
            cpu = (CPU[0] - before) / len(warm)
            print(
                f"  3 warm repeat of {pin}: {statistics.median(warm):.3f} s wall, {cpu:.3f} s CPU (goal <= 0.5 s)"
            )
    return statistics.median(ours), statistics.median(theirs)


def bytes_fetched(index: str, path: str, cache: str) -> None:
    """Row 2 for one wheel, in this process (the transport counts the body bytes), and row 3's
    bytes: a second read from the cache fetches none."""
    os.environ.update(_env(cache))
    from fatbin_inspect.containers.archives import is_candidate
    from fatbin_inspect.containers.index import config
    from fatbin_inspect.containers.wheel import wheel_name
    from fatbin_inspect.judging import index_inputs
    from fatbin_inspect.judging.inputs import verdict_options

    dist = wheel_name(path)
    src = index_inputs.IndexSource(config.resolve(config.Overrides(index)), python="3.11")
    index_inputs.use(src)
    pin = f"pkg:pypi/{dist.name}@{dist.version}"
    (cold,) = index_inputs.fetch_all(pin, verdict_options(False))
    src._pages.clear()
    (warm,) = index_inputs.fetch_all(pin, verdict_options(False))
    with zipfile.ZipFile(path) as zf:
        members = sum(i.compress_size for i in zf.infolist() if is_candidate(i.filename))
    whole = os.path.getsize(path)
    print(
        f"  2 {os.path.basename(path)[:60]}: fetched {cold.received / 1e6:.2f} MB; "
        f"vs candidates + 1 MiB {cold.received / (members + (1 << 20)):.3f}x (goal <= 1.0); "
        f"vs whole wheel {cold.received / whole:.3f}x; warm read fetched {warm.received} wheel bytes (goal 0)"
    )


def build_releases(work: str) -> str:
    """Ten releases of bench-releases (one large torchvision library each) for row 4: their folder."""
    from index_servers import build_wheel

    from fatbin_inspect.containers.archives import is_candidate

    folder = os.path.join(work, "releases")
    os.makedirs(folder, exist_ok=True)
    with zipfile.ZipFile(
        os.path.join(CORPUS, "torchvision-0.29.1-cp311-cp311-manylinux_2_28_x86_64.whl")
    ) as zf:
        lib = next(i for i in zf.infolist() if is_candidate(i.filename) and i.file_size > 1 << 20)
        data = zf.read(lib)
    for minor in range(10):
        build_wheel(
            folder,
            "bench-releases",
            f"1.{minor}",
            "py3-none-manylinux_2_28_x86_64",
            {"bench_releases/_C.so": data},
        )
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--wheels", default="torchvision,nvidia_curand,cupy_cuda12x,nvidia_cuda_cupti")
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    from index_servers import pypiserver

    work = a.work or tempfile.mkdtemp(prefix="bench-index-")
    served = os.path.join(work, "served")
    os.makedirs(served, exist_ok=True)
    names = sorted(os.listdir(CORPUS))
    picked = [
        os.path.join(CORPUS, n)
        for w in a.wheels.split(",")
        for n in names
        if n.endswith(".whl") and n.startswith(w + "-")
    ]
    for w in picked:
        os.symlink(w, os.path.join(served, os.path.basename(w)))
        with open(w, "rb") as fh:
            while fh.read(1 << 24):
                pass
    releases_folder = build_releases(work)
    for n in os.listdir(releases_folder):
        os.symlink(os.path.join(releases_folder, n), os.path.join(served, n))
    server = pypiserver(served)
    index = server.url + "/simple/"
    try:
        print(f"index {index}, {len(picked)} corpus wheels, {a.pairs} pairs")
        from fatbin_inspect.containers.wheel import wheel_name

        first = wheel_name(picked[0])
        ours, theirs = cold_vs_pip(index, f"{first.name}=={first.version}", work, a.pairs)
        print(
            f"  1 cold check of {first.name} {first.version}: {ours:.3f} s vs pip download + check {theirs:.3f} s: {ours / theirs:.3f}x (goal <= 1.0)"
        )
        for w in picked:
            bytes_fetched(index, w, tempfile.mkdtemp(dir=work))
        cache = tempfile.mkdtemp(dir=work)
        argv = _tool(
            "releases",
            "bench-releases",
            "--index-url",
            index,
            "--gpu",
            "H100",
            "--driver",
            "580",
            "--format",
            "json",
        )
        cold = _run(argv, _env(cache))
        before = CPU[0]
        warm = statistics.median(_run(argv, _env(cache)) for _ in range(3))
        cpu = (CPU[0] - before) / 3
        print(
            f"  4 releases over 10 releases: cold {cold:.3f} s; warm {warm:.3f} s wall, {cpu:.3f} s CPU (goal <= 2 s)"
        )
        print(f"  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    finally:
        server.stop()
        if a.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
