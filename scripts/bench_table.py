#!/usr/bin/env python3
"""Every row of issue 26's table, each a ratio measured in one run (the two sides of a pair run
back to back, alternating; median of ``--pairs`` pairs, default 3, with the spread of the pairs'
ratios), with the peer's or floor's figure beside it; optionally a third contender (``--base DIR``:
a checkout of an older fatbin-inspect, run the same way, it and this checkout taking turns to
run first after the peer) for "before" figures.

    python scripts/bench_table.py [--pairs 3] [--base /tmp/old-checkout] [--rows 1,2,...] [--jobs N]

Rows (goal in brackets):
  1 warm scan --format json -o FILE of the six extracted wheels (cache filled, nothing changed)
    vs the FLOOR: a fresh Python process that starts, lstats every file of the tree and writes the
    cold scan's JSON to a file                                                     [<= 1.5]
  2 the cold scan (no cache yet) vs cuobjdump -lelf -lptx on every ELF file of the tree,
    on the same number of workers                                                   [<= 0.08]
  3 scan --format json of the six .whl files (no cache) vs inflating their candidate members
    once (one process)                                                              [<= 0.8]
  4 listing libcublasLt.so.13 (--format json) vs cuobjdump -lelf -lptx              [<= 0.12]
  5 --kernels --format json on libtorch_cuda.so vs cubloaty 0.2.0b1: wall [<= 0.15] (and CPU
    seconds beside it), peak RSS [<= 0.2]
    (and, untimed, the same peak as proportional memory: a page shared by forked processes once)
  6 listing libtorch_cuda.so (--format json) vs cuobjdump -lelf -lptx               [<= 0.025]
  7 peak RSS of the largest process of scan --format json over the tree [< 300 MB], and over
    the tree plus a copy of it (flat: ratio 1.0)
Every command is a child process (interpreter start included) writing to a file or /dev/null;
peak RSS is sampled every 20 ms over the process tree, with the machine's shared memory grown
meanwhile (memory files hold pages no RSS counts); the page cache is warmed before each
command. Row 1 also checks that the warm document equals the cold one (``seconds`` and
``cache_hits`` aside). The wheels are extracted into --work, never into the repository.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.dont_write_bytecode = True  # no scripts/__pycache__ left behind (tests read every file there)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import bench_scan  # noqa: E402  (extract, run_measured, inflate_candidates, elf_files)

X = os.path.join(ROOT, ".cache", "corpus", "x")
SIX = bench_scan.WHEELS

# the least a warm rescan can cost: start the interpreter, lstat every file (os.scandir, as the
# scan walks) and write the cold scan's document to a file (argv: tree, that document, output)
FLOOR = [
    sys.executable,
    "-c",
    "import os, sys\n"
    "def walk(d):\n"
    "    n = 0\n"
    "    with os.scandir(d) as it:\n"
    "        for e in it:\n"
    "            if e.is_dir(follow_symlinks=False):\n"
    "                n += walk(e.path)\n"
    "            else:\n"
    "                n += e.stat(follow_symlinks=False).st_size > 0\n"
    "    return n\n"
    "walk(sys.argv[1])\n"
    "with open(sys.argv[2], 'rb') as src, open(sys.argv[3], 'wb') as dst:\n"
    "    dst.write(src.read())\n",
]


def cuobjdump_args(exe):  # what the peer runs on each file
    return [exe, "-lelf", "-lptx"]


def warm(*paths):
    for p in paths:
        if os.path.isdir(p):
            for d, _, files in os.walk(p):
                for f in files:
                    warm(os.path.join(d, f))
        elif os.path.isfile(p) and not os.path.islink(p):
            with open(p, "rb") as fh:
                while fh.read(64 << 20):
                    pass


class Run(NamedTuple):
    secs: float
    peak: float  # MB, the whole process tree
    largest: float  # MB, its largest process
    cpu: float  # user + system seconds of the process tree (a loaded machine's second opinion)


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed(cmd, env=None, warm_paths=()) -> Run:
    """One child process, measured."""
    warm(*warm_paths)
    cpu = children_cpu()
    secs, peak, largest, _rc = bench_scan.run_measured_each(cmd, env)
    return Run(secs, peak / 2**20, largest / 2**20, children_cpu() - cpu)


def turn(contenders, i):
    """The contenders in the order of pair ``i``: rotated each pair, so that none always runs
    first after the peer (whose run evicts what the next process reads from the page cache)."""
    k = i % len(contenders)
    return contenders[k:] + contenders[:k]


def fi(src: str):
    """The command line of fatbin-inspect from checkout ``src``."""

    def cmd(*args):
        return [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {src!r}); "
            "from fatbin_inspect.cli.main import console_main; sys.argv[0] = 'fatbin-inspect'; console_main()",
            *args,
        ]

    return cmd


class Row:
    """Samples of one row: ``add(side, value)`` per run; ratios are taken pair by pair."""

    def __init__(self, n, title, goal, unit="s"):
        self.n, self.title, self.goal, self.unit = n, title, goal, unit
        self.samples: dict[str, list] = {}

    def add(self, who, value):
        self.samples.setdefault(who, []).append(value)

    def med(self, who):
        v = self.samples.get(who)
        return statistics.median(v) if v else float("nan")

    def ratios(self, a, b):
        va, vb = self.samples.get(a) or [], self.samples.get(b) or []
        return [x / y for x, y in zip(va, vb, strict=False) if y]

    def line(self, a, b, label_a, label_b, goal=None):
        rs = self.ratios(a, b)
        if not rs:
            return f"    {label_a}: not measured"
        u = self.unit
        spread = f"{min(rs):.3f}-{max(rs):.3f}"
        return (
            f"    {label_a} {self.med(a):8.3f} {u}   {label_b} {self.med(b):8.3f} {u}   "
            f"RATIO {statistics.median(rs):.3f}x (pairs {spread}; goal {goal or self.goal})"
        )

    def show(self, pairs):
        print(f"row {self.n}: {self.title}")
        for args in pairs:
            print(self.line(*args), flush=True)

    def show_cpu(self, pairs):
        """The same pairs in CPU seconds (user + system of each process tree), for a loaded machine."""
        for a, b, label_a, label_b in pairs:
            rs = self.ratios(f"{a}-cpu", f"{b}-cpu")
            if rs:
                print(
                    f"    cpu: {label_a} {self.med(a + '-cpu'):.3f} s   {label_b} {self.med(b + '-cpu'):.3f} s   "
                    f"ratio {statistics.median(rs):.3f}x (pairs {min(rs):.3f}-{max(rs):.3f})",
                    flush=True,
                )


def same_document(a: str, b: str) -> bool:
    """The two scan documents are equal but for the fields that say how the scan went."""

    def load(p):
        with open(p, "rb") as fh:
            doc = json.load(fh)
        for k in ("seconds", "cache_hits"):
            doc.pop(k, None)
            doc.get("stats", {}).pop(k, None)
        return doc

    return load(a) == load(b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--base", default=None, help="an older checkout, measured too (before figures)")
    ap.add_argument("--rows", default="1,2,3,4,5,6,7")
    ap.add_argument("--corpus", default=os.path.join(ROOT, ".cache", "corpus"))
    ap.add_argument("--work", default=os.path.join(ROOT, ".cache", "bench_scan"))
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args()
    rows = {int(r) for r in args.rows.split(",")}
    from conftest import find_cuobjdump

    cuobjdump = find_cuobjdump()
    x = os.path.join(args.corpus, "x")
    torch_lib = os.path.join(x, "torch", "lib", "libtorch_cuda.so")
    cublaslt = os.path.join(x, "nvidia", "cu13", "lib", "libcublasLt.so.13")
    contenders = [("now", fi(ROOT))] + ([("base", fi(os.path.abspath(args.base)))] if args.base else [])
    load = os.getloadavg()
    print(
        f"cores {os.cpu_count()}, jobs {args.jobs}, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, "
        f"{args.pairs} pairs per row, cuobjdump: {cuobjdump}",
        flush=True,
    )
    env = dict(os.environ, FATBIN_INSPECT_JOBS=str(args.jobs), FATBIN_INSPECT_PROGRESS="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("FATBIN_INSPECT_CACHE_DIR", None)
    n = args.pairs
    os.makedirs(args.work, exist_ok=True)

    wheels = [w for pre in SIX for w in sorted(glob.glob(os.path.join(args.corpus, pre + "*.whl")))[:1]]
    tree = None
    if rows & {1, 2, 3, 7}:
        if len(wheels) < len(SIX):
            print(f"missing wheels: need {', '.join(SIX)}", file=sys.stderr)
            return 2
        tree = bench_scan.extract(wheels, args.work)
        total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tree) for f in fs)
        print(f"tree: {len(wheels)} wheels extracted, {total / 2**30:.1f} GiB", flush=True)

    def scan_cmd(tool, cache, out, *paths):
        e = dict(env, FATBIN_INSPECT_CACHE_DIR=cache) if cache else dict(env)
        extra = ["--no-cache"] if cache is None else []
        return tool("scan", "--format", "json", "-o", out, *extra, *paths), e

    def out_file(name):
        return os.path.join(args.work, name)

    if rows & {1, 2}:
        r1 = Row(1, "warm scan --format json -o FILE of the tree (cache filled) vs the floor", "<= 1.5")
        r2 = Row(
            2, "cold scan --format json of the tree vs cuobjdump -lelf -lptx on every ELF file", "<= 0.08"
        )
        files = list(bench_scan.elf_files(tree))
        for i in range(n):
            if cuobjdump:
                warm(tree)
                t0, cpu0 = time.monotonic(), children_cpu()
                with ThreadPoolExecutor(args.jobs) as pool:
                    list(
                        pool.map(
                            lambda p: subprocess.run([*cuobjdump_args(cuobjdump), p], capture_output=True),
                            files,
                        )
                    )
                r2.add("cuobjdump", time.monotonic() - t0)
                r2.add("cuobjdump-cpu", children_cpu() - cpu0)
            for who, tool in turn(contenders, i):
                cache = os.path.join(args.work, f"cache-{who}")
                shutil.rmtree(cache, ignore_errors=True)
                cold_json, warm_json = out_file(f"cold-{who}.json"), out_file(f"warm-{who}.json")
                cmd, e = scan_cmd(tool, cache, cold_json, tree)
                cold = timed(cmd, e, [tree])
                cmd, e = scan_cmd(tool, cache, warm_json, tree)
                warm_run = timed(cmd, e, [tree])
                floor = timed([*FLOOR, tree, cold_json, out_file("floor.json")], env, [tree])
                for row, side, run in ((r2, who, cold), (r1, who, warm_run), (r1, f"floor-{who}", floor)):
                    row.add(side, run.secs)
                    row.add(f"{side}-cpu", run.cpu)
                if not same_document(cold_json, warm_json):
                    print(f"    {who}: the warm document differs from the cold one", flush=True)
        r1.title += f" ({sum(len(fs) for _, _, fs in os.walk(tree))} files)"
        r1.show([(who, f"floor-{who}", f"{who:5} warm", "floor", None) for who, _ in contenders])
        r1.show_cpu([(who, f"floor-{who}", f"{who:5} warm", "floor") for who, _ in contenders])
        r2.title += f" ({len(files)} ELF files)"
        r2.show([(who, "cuobjdump", f"{who:5} cold", "cuobjdump", None) for who, _ in contenders])
        r2.show_cpu([(who, "cuobjdump", f"{who:5} cold", "cuobjdump") for who, _ in contenders])

    if 3 in rows:
        r3 = Row(
            3,
            "scan --format json of the six .whl (no cache) vs inflating their candidate members once",
            "<= 0.8",
        )
        inflate = [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {os.path.join(ROOT, 'scripts')!r}); import bench_scan; "
            f"[bench_scan.inflate_candidates(w) for w in {wheels!r}]",
        ]
        for i in range(n):
            r3.add("floor", timed(inflate, env, wheels)[0])
            for who, tool in turn(contenders, i):
                cmd, e = scan_cmd(tool, None, os.devnull, *wheels)
                r3.add(who, timed(cmd, e, wheels)[0])
        r3.show([(who, "floor", f"{who:5} scan", "inflate", None) for who, _ in contenders])

    def listing(row_n, lib, goal):
        if not (row_n in rows and os.path.exists(lib) and cuobjdump):
            return
        r = Row(row_n, f"listing {os.path.basename(lib)} (--format json) vs cuobjdump -lelf -lptx", goal)
        for i in range(n):
            r.add("cuobjdump", timed([cuobjdump, "-lelf", "-lptx", lib], env, [lib])[0])
            for who, tool in turn(contenders, i):
                r.add(who, timed(tool(lib, "--format", "json", "-o", os.devnull), env, [lib])[0])
        r.show([(who, "cuobjdump", f"{who:5} list", "cuobjdump", None) for who, _ in contenders])

    listing(4, cublaslt, "<= 0.12")

    if 5 in rows and os.path.exists(torch_lib):
        wall = Row(5, "--kernels --format json on libtorch_cuda.so vs cubloaty: wall", "<= 0.15")
        rss = Row(5, "the same: peak RSS of the process tree (+ memory files)", "<= 0.2", "MB")
        cub = [
            sys.executable,
            "-m",
            "cubloaty",
            torch_lib,
            "--format",
            "json",
            "--top",
            "100000000",
            "--mangled",
        ]
        for i in range(n):
            s, m, _, cpu = timed(cub, env, [torch_lib])
            wall.add("cubloaty", s)
            wall.add("cubloaty-cpu", cpu)
            rss.add("cubloaty", m)
            for who, tool in turn(contenders, i):
                s, m, _, cpu = timed(
                    tool(torch_lib, "--kernels", "--format", "json", "-o", os.devnull), env, [torch_lib]
                )
                wall.add(who, s)
                wall.add(f"{who}-cpu", cpu)
                rss.add(who, m)
        wall.show([(who, "cubloaty", f"{who:5} wall", "cubloaty", None) for who, _ in contenders])
        # (a contended host stretches the CPU seconds too: where ours grow more than the peer's,
        # the wall ratio moved with the host, not the code)
        wall.show_cpu([(who, "cubloaty", who, "cubloaty") for who, _ in contenders])
        print(rss.title)
        for who, _ in contenders:
            print(rss.line(who, "cubloaty", f"{who:5} RSS ", "cubloaty"), flush=True)
        # each process's RSS counts the pages it shares with the others whole (the workers are
        # forked from the listing process): the same peak as proportional memory, one untimed
        # run of each side, so a reader sees what the sum of RSS counts twice
        warm(torch_lib)
        cub_pss = bench_scan.peak_pss(cub, env) / 2**20
        for who, tool in contenders:
            warm(torch_lib)
            pss = (
                bench_scan.peak_pss(tool(torch_lib, "--kernels", "--format", "json", "-o", os.devnull), env)
                / 2**20
            )
            print(
                f"    {who:5} PSS  {pss:8.3f} MB   cubloaty {cub_pss:8.3f} MB   ratio {pss / cub_pss:.3f}x "
                "(one untimed run each: shared pages counted once; the goal is on RSS)",
                flush=True,
            )

    listing(6, torch_lib, "<= 0.025")

    if 7 in rows:
        copy = os.path.join(args.work, "tree-copy")
        if not os.path.exists(os.path.join(copy, ".complete")):
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(tree, copy, symlinks=True)
            open(os.path.join(copy, ".complete"), "w").close()
        r7 = Row(
            7,
            "peak RSS of the largest process of scan --format json (no cache): tree, tree + a copy",
            "< 300 MB; flat",
            "MB",
        )
        for i in range(n):
            for who, tool in turn(contenders, i):
                for tag, paths in (("1", [tree]), ("2", [tree, copy])):
                    cmd, e = scan_cmd(tool, None, os.devnull, *paths)
                    _s, total, largest, _ = timed(cmd, e, paths)
                    r7.add(f"{who}-{tag}", largest)
                    r7.add(f"{who}-{tag}-all", total)
        print(f"row 7: {r7.title}")
        for who, _ in contenders:
            one = r7.samples.get(f"{who}-1", [])
            print(
                f"    {who:5} largest process {r7.med(who + '-1'):.0f} MB (pairs {min(one):.0f}-{max(one):.0f}; "
                f"goal < 300 MB), all processes {r7.med(who + '-1-all'):.0f} MB"
            )
            print(r7.line(f"{who}-2", f"{who}-1", f"{who:5} tree+copy", "tree", "flat: 1.0"), flush=True)
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
