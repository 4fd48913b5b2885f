#!/usr/bin/env python3
"""Write the CLI's outputs (exit code, stdout, stderr) for every command × format over the
fixtures and, where downloaded, real corpus wheels, one file a command, so that a refactoring can
be shown byte-identical: ``diff -r BEFORE AFTER``.

    python scripts/snapshot_outputs.py --out DIR [--repo CHECKOUT] [--jobs 2] [--no-corpus]

``--repo`` runs another checkout's code (PYTHONPATH), for a "before" snapshot. Wall times in the
documents (``"seconds": …``, JUnit ``time="…"``) are zeroed; everything else is compared as is.
Each command runs with its own empty cache folder, ``NO_COLOR``, ``COLUMNS=100`` and a fixed
``SOURCE_DATE_EPOCH``.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = "fixtures/bin"
GPUS = ["--gpu", "H100", "--gpu", "RTX 5090", "--gpu", "GTX 1080", "--gpu", "Jetson Orin", "--driver", "550"]
FINDINGS = ["table", "json", "jsonl", "sarif", "junit", "github", "markdown", "gitlab", "html"]
CORPUS = [
    "torchvision-0.29.1-*.whl",
    "nvidia_cuda_cupti-13.0.85-*.whl",
    "ctranslate2-4.8.5-*.whl",
    "bitsandbytes-0.50.2-*.whl",
]
_TIMES = [
    (re.compile(rb'"seconds": [0-9.e+-]+'), b'"seconds": 0'),
    (re.compile(rb'time="[0-9.]+"'), b'time="0"'),
    (re.compile(rb" in [0-9.]+ s\)"), b" in 0 s)"),
]


def commands(corpus: list[str]) -> dict[str, list[str]]:
    """name -> argv after ``python -m fatbin_inspect``."""
    one, two = f"{BIN}/t02_exe_sm75_sm80_sm90_c90", f"{BIN}/t01_exe_sm80"
    c: dict[str, list[str]] = {}
    for fmt in ("table", "json", "jsonl", "cyclonedx"):
        c[f"list.{fmt}"] = ["list", BIN, "--format", fmt]
    c["list.kernels.json"] = ["list", "--kernels", one, "--format", "json"]
    c["list.kernels.table"] = ["list", "--kernels", one]
    c["list.missing"] = ["list", "no/such/path"]
    for fmt in FINDINGS:
        c[f"check.{fmt}"] = ["check", BIN, *GPUS, "--format", fmt]
    c["check.long"] = ["check", one, *GPUS, "--long"]
    c["check.per_fatbin.json"] = ["check", one, *GPUS, "--per-fatbin", "--format", "json"]
    for fmt in ("table", "json", "html", "cyclonedx"):
        c[f"scan.{fmt}"] = ["scan", BIN, "--gpu", "H100", "--gpu", "GTX 1080", "--no-cache", "--format", fmt]
    c["scan.files"] = ["scan", BIN, "--gpu", "H100", "--no-cache", "--files", "--verdicts"]
    for fmt in [*FINDINGS, "cyclonedx"]:
        c[f"gate.{fmt}"] = ["gate", BIN, "--gpu", "H100", "--gpu", "GTX 1080", "--format", fmt]
    for fmt in ("table", "json", "markdown", "sarif", "junit", "github", "gitlab"):
        c[f"diff.{fmt}"] = ["diff", one, two, "--format", fmt]
    for fmt in ("table", "json"):
        c[f"explain.209.{fmt}"] = ["explain", "209", "--format", fmt]
        c[f"gpus.{fmt}"] = ["gpus", "--format", fmt]
    for i, whl in enumerate(corpus):
        c[f"corpus{i}.list.json"] = ["list", whl, "--format", "json"]
        c[f"corpus{i}.check.json"] = ["check", whl, *GPUS, "--format", "json"]
    if corpus:
        c["corpus.scan.json"] = ["scan", *corpus, "--gpu", "H100", "--no-cache", "--format", "json"]
        c["corpus.scan.table"] = ["scan", *corpus, "--gpu", "H100", "--gpu", "GTX 1080", "--no-cache"]
    return c


def run(repo: str, argv: list[str]) -> bytes:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(
            os.environ,
            PYTHONPATH=repo,
            FATBIN_INSPECT_CACHE_DIR=cache,
            NO_COLOR="1",
            COLUMNS="100",
            SOURCE_DATE_EPOCH="1700000000",
        )
        env.pop("FORCE_COLOR", None)
        p = subprocess.run(
            [sys.executable, "-m", "fatbin_inspect", *argv],
            cwd=repo,  # python -m puts the working folder first on sys.path: it must be the checkout
            env=env,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=900,
        )
    out = b"rc=%d\n--- stdout\n%s\n--- stderr\n%s" % (p.returncode, p.stdout, p.stderr)
    for pattern, repl in _TIMES:
        out = pattern.sub(repl, out)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--repo", default=ROOT, help="the checkout whose code runs (default: this one)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-corpus", action="store_true")
    a = ap.parse_args()
    corpus: list[str] = []
    if not a.no_corpus:
        for pattern in CORPUS:
            corpus += sorted(glob.glob(os.path.join(ROOT, ".cache", "corpus", pattern)))[:1]
    os.makedirs(a.out, exist_ok=True)
    todo = commands(corpus)
    repo = os.path.abspath(a.repo)

    def one(name: str) -> str:
        with open(os.path.join(a.out, name + ".txt"), "wb") as f:
            f.write(run(repo, todo[name]))
        return name

    with ThreadPoolExecutor(a.jobs) as pool:
        done = list(pool.map(one, todo))
    print(f"{len(done)} outputs in {a.out} ({len(corpus)} corpus wheels)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
