#!/usr/bin/env python3
"""Benchmark: one image scanned straight from a registry vs the same image as an OCI folder.

    python scripts/bench_registry.py [--lib PATH ...] [--work .cache/bench_registry] [--runs 3]

The image is built with umoci (one gzip'd layer holding the libraries given; default: cuBLAS
and cuFFT from the corpus, ``scripts/fetch_corpus.sh``), pushed with skopeo to Debian's
``docker-registry`` started on 127.0.0.1 (a random port, plain http), then
``fatbin-inspect scan --no-cache --format json`` runs on ``WORK/layout:t`` and on
``docker://127.0.0.1:PORT/bench:t``, alternating, as the CLI in a subprocess (interpreter
start-up included); the median of ``--runs`` each. Prints the ratio (goal: <= 1.5x) and checks
that both give the same records. Needs umoci, skopeo and docker-registry (``.ci/run`` installs
them).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, ".cache", "corpus", "x")
DEFAULT_LIBS = ("nvidia/cu13/lib/libcublas.so.13", "nvidia/cu13/lib/libcufft.so.12")


def sh(*args):
    subprocess.run(args, check=True, capture_output=True)


def scan(target: str) -> tuple[float, list]:
    env = dict(os.environ, PYTHONPATH=ROOT)
    t = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "fatbin_inspect", "scan", "--no-cache", "--format", "json", target],
        capture_output=True,
        env=env,
        check=True,
    )
    seconds = time.perf_counter() - t
    doc = json.loads(p.stdout)
    return seconds, [dict(f, path=f["path"].split("!", 1)[1]) for f in doc["files"]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", action="append", help="a library to put in the image (repeatable)")
    ap.add_argument("--corpus", default=CORPUS, help="the unpacked corpus the default libraries come from")
    ap.add_argument("--work", default=os.path.join(ROOT, ".cache", "bench_registry"))
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    for tool in ("umoci", "skopeo", "docker-registry"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed (apt-get install umoci skopeo docker-registry)")
    libs = a.lib or [os.path.join(a.corpus, p) for p in DEFAULT_LIBS]
    libs = [p for p in libs if os.path.isfile(p)]
    if not libs:
        sys.exit("no library to put in the image: give --lib PATH or fetch the corpus")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    lay, bundle = os.path.join(a.work, "layout"), os.path.join(a.work, "bundle")
    sh("umoci", "init", "--layout", lay)
    sh("umoci", "new", "--image", f"{lay}:t")
    sh("umoci", "unpack", "--rootless", "--image", f"{lay}:t", bundle)
    dest = os.path.join(bundle, "rootfs", "usr", "local", "lib")
    os.makedirs(dest)
    for p in libs:
        shutil.copy(p, dest)
    sh("umoci", "repack", "--image", f"{lay}:t", bundle)
    shutil.rmtree(bundle)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = os.path.join(a.work, "registry.yml")
    with open(cfg, "w") as fh:
        fh.write(
            "version: 0.1\nlog: {level: error}\n"
            f"storage: {{filesystem: {{rootdirectory: {a.work}/store}}}}\nhttp: {{addr: 127.0.0.1:{port}}}\n"
        )
    reg = subprocess.Popen(
        ["docker-registry", "serve", cfg],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        ref = f"docker://127.0.0.1:{port}/bench:t"
        sh("skopeo", "copy", "--dest-tls-verify=false", f"oci:{lay}:t", ref)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _s, fs in os.walk(lay) for f in fs)
        folder, remote = [], []
        for _ in range(a.runs):
            t, recs_local = scan(f"{lay}:t")
            folder.append(t)
            t, recs_remote = scan(ref)
            remote.append(t)
            assert recs_local == recs_remote, "the registry and the folder give different records"
        f, r = statistics.median(folder), statistics.median(remote)
        print(
            f"image: {len(libs)} libraries, {size / 1e6:.0f} MB of blobs (gzip), {len(recs_local)} CUDA files"
        )
        print(f"OCI folder  {f:7.2f} s   (median of {a.runs})")
        print(f"registry    {r:7.2f} s   docker://127.0.0.1 (plain http, same records)")
        print(f"ratio registry / folder: {r / f:.2f}x (goal <= 1.5x)")
    finally:
        os.killpg(reg.pid, signal.SIGTERM)
        reg.wait()


if __name__ == "__main__":
    main()
