#!/usr/bin/env python3
"""Every row of issue 15's table, each a ratio measured in one run (pairs alternated, median of
``--pairs`` pairs, default 3), with the peer's figure beside it; optionally a third contender
(``--base DIR``: a checkout of an older fatbin-inspect, run the same way) for "today" figures.

    python scripts/bench_table.py [--pairs 3] [--base /tmp/old-checkout] [--rows 1,2,3] [--jobs N]

Rows (goal in brackets):
  1 scan --format json of the six extracted wheels, cold, vs cuobjdump -lelf -lptx per ELF file [<= 0.10]
  2 the same scan warm vs cold                                                     [<= 0.05]
  3 --kernels --format json on libtorch_cuda.so: peak RSS vs cubloaty               [<= 0.5]
  4 listing libcublasLt.so.13 vs cuobjdump -lelf -lptx                              [<= 0.20]
  5 check libtorch_cuda.so against 5 GPUs vs 1 GPU                                  [<= 1.2]
  6 check libtorch_cuda.so (1 GPU, JSON) vs its JSON listing                         [<= 2]
  7 list / check of the 536 MB torch wheel vs inflating its candidate members once  [<= 1.2]
  8 peak RSS of the scan (workers included) over the tree and over the tree twice (a copy beside it)
Every command is a child process (interpreter start included) writing to /dev/null (or a file
whose bytes are then checked); peak RSS is the whole process tree's, sampled every 20 ms; the
page cache is warmed before each command. The wheels are extracted into --work, never into the
repository. The machine's load hits both sides of a pair alike; say how loaded it was.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.dont_write_bytecode = True  # no scripts/__pycache__ left behind (tests read every file there)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import bench_scan  # noqa: E402  (extract, run_measured, inflate_candidates, elf_files)

X = os.path.join(ROOT, ".cache", "corpus", "x")
TORCH_LIB = os.path.join(X, "torch", "lib", "libtorch_cuda.so")
CUBLASLT = os.path.join(X, "nvidia", "cu13", "lib", "libcublasLt.so.13")
SIX = bench_scan.WHEELS
GPUS5 = ["H100", "RTX 5090", "A100", "RTX 4090", "B200"]


# the least a warm rescan can cost: start the interpreter, lstat every file (os.scandir, as the
# scan walks), nothing else: no cache to read, no document to write
STAT_FLOOR = [
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
    "walk(sys.argv[1])\n",
]


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


def timed(cmd, env=None, warm_paths=(), before=None):
    """(seconds, peak tree RSS in MB) of one child process."""
    warm(*warm_paths)
    if before:
        before()
    secs, peak, _rc = bench_scan.run_measured(cmd, env)
    return secs, peak / 2**20


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
    def __init__(self, n, title, goal, unit="time"):
        self.n, self.title, self.goal, self.unit = n, title, goal, unit
        self.samples: dict[str, list] = {}

    def add(self, who, value):
        self.samples.setdefault(who, []).append(value)

    def med(self, who):
        v = self.samples.get(who)
        return statistics.median(v) if v else None

    def ratio(self, a, b):
        """Median of the per-pair ratios a/b."""
        va, vb = self.samples.get(a), self.samples.get(b)
        if not va or not vb:
            return None
        return statistics.median(x / y for x, y in zip(va, vb, strict=False))

    def show(self, ours, peer, peer_name, base=None):
        u = "s" if self.unit == "time" else "MB"
        print(f"row {self.n}: {self.title}")
        for who in (ours, base):
            if who and self.samples.get(who):
                print(
                    f"    {who:5} {self.med(who):9.2f} {u}   {peer_name} {self.med(peer):9.2f} {u}   "
                    f"RATIO {self.ratio(who, peer):.3f}x (goal {self.goal})",
                    flush=True,
                )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--base", default=None, help="an older checkout, measured too (today's figures)")
    ap.add_argument("--rows", default="1,2,3,4,5,6,7,8")
    ap.add_argument("--corpus", default=os.path.join(ROOT, ".cache", "corpus"))
    ap.add_argument("--work", default=os.path.join(ROOT, ".cache", "bench_scan"))
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args()
    rows = {int(r) for r in args.rows.split(",")}
    from conftest import find_cuobjdump

    cuobjdump = find_cuobjdump()
    ours = fi(ROOT)
    base = fi(os.path.abspath(args.base)) if args.base else None
    contenders = [("now", ours)] + ([("today", base)] if base else [])
    load = os.getloadavg()
    print(
        f"cores {os.cpu_count()}, jobs {args.jobs}, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, "
        f"{args.pairs} pairs per row, cuobjdump: {cuobjdump}",
        flush=True,
    )
    env = dict(os.environ, FATBIN_INSPECT_JOBS=str(args.jobs), FATBIN_INSPECT_PROGRESS="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    n = args.pairs

    wheels = [w for pre in SIX for w in sorted(glob.glob(os.path.join(args.corpus, pre + "*.whl")))[:1]]
    tree = None
    if rows & {1, 2, 8}:
        if len(wheels) < len(SIX):
            print(f"missing wheels: need {', '.join(SIX)}", file=sys.stderr)
            return 2
        tree = bench_scan.extract(wheels, args.work)
        total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tree) for f in fs)
        print(f"tree: {len(wheels)} wheels extracted, {total / 2**30:.1f} GiB", flush=True)

    def scan_cmd(tool, cache, *paths):
        e = dict(env, FATBIN_INSPECT_CACHE_DIR=cache) if cache else dict(env)
        extra = ["--no-cache"] if cache is None else []
        return tool("scan", "--format", "json", "-o", os.devnull, *extra, *paths), e

    if 1 in rows or 2 in rows:
        r1 = Row(
            1,
            "scan --format json of the six extracted wheels, cold, vs cuobjdump -lelf -lptx per ELF file",
            "<= 0.10",
        )
        r2 = Row(2, "the same scan warm (cache filled, nothing changed) vs cold", "<= 0.05")
        files = list(bench_scan.elf_files(tree))
        for _ in range(n):
            if cuobjdump and 1 in rows:
                from concurrent.futures import ThreadPoolExecutor

                warm(tree)
                t0 = time.monotonic()
                with ThreadPoolExecutor(args.jobs) as pool:
                    list(
                        pool.map(
                            lambda p: subprocess.run([cuobjdump, "-lelf", "-lptx", p], capture_output=True),
                            files,
                        )
                    )
                r1.add("cuobjdump", time.monotonic() - t0)
            for who, tool in contenders:
                cache = os.path.join(args.work, f"cache-{who}")
                shutil.rmtree(cache, ignore_errors=True)
                cmd, e = scan_cmd(tool, cache, tree)
                cold, _ = timed(cmd, e, [tree])
                r1.add(who, cold)
                r2.add(f"{who}-cold", cold)
                warm_s, _ = timed(cmd, e, [tree])
                r2.add(f"{who}-warm", warm_s)
            r2.add("floor", timed(STAT_FLOOR + [tree], env, [tree])[0])
        if 1 in rows and cuobjdump:
            r1.show("now", "cuobjdump", "cuobjdump", "today" if base else None)
        r2.title += f" ({len(files)} ELF files)"
        print(
            f"row 2: {r2.title}\n    now   warm {r2.med('now-warm'):.2f} s   cold {r2.med('now-cold'):.2f} s   "
            f"RATIO {r2.ratio('now-warm', 'now-cold'):.3f}x (goal {r2.goal})\n"
            f"    floor: this interpreter started, one lstat per file of the tree and nothing else "
            f"{r2.med('floor'):.3f} s = {r2.ratio('floor', 'now-cold'):.3f}x of the cold scan; "
            f"the warm scan is {r2.ratio('now-warm', 'floor'):.2f}x the floor",
            flush=True,
        )
        if base:
            print(
                f"    today warm {r2.med('today-warm'):.2f} s   cold {r2.med('today-cold'):.2f} s   "
                f"ratio {r2.ratio('today-warm', 'today-cold'):.3f}x",
                flush=True,
            )

    if 3 in rows and os.path.exists(TORCH_LIB):
        r3 = Row(3, "--kernels --format json on libtorch_cuda.so: peak RSS vs cubloaty", "<= 0.5", "MB")
        cub = [
            sys.executable,
            "-m",
            "cubloaty",
            TORCH_LIB,
            "--format",
            "json",
            "--top",
            "100000000",
            "--mangled",
        ]
        secs3 = {}
        for _ in range(n):
            s, m = timed(cub, env, [TORCH_LIB])
            r3.add("cubloaty", m)
            secs3.setdefault("cubloaty", []).append(s)
            for who, tool in contenders:
                s, m = timed(
                    tool(TORCH_LIB, "--kernels", "--format", "json", "-o", os.devnull), env, [TORCH_LIB]
                )
                r3.add(who, m)
                secs3.setdefault(who, []).append(s)
        r3.show("now", "cubloaty", "cubloaty", "today" if base else None)
        print(
            "    wall: " + ", ".join(f"{k} {statistics.median(v):.2f} s" for k, v in secs3.items()),
            flush=True,
        )

    if 4 in rows and os.path.exists(CUBLASLT) and cuobjdump:
        r4 = Row(4, "listing libcublasLt.so.13 (--format json) vs cuobjdump -lelf -lptx", "<= 0.20")
        for _ in range(n):
            r4.add("cuobjdump", timed([cuobjdump, "-lelf", "-lptx", CUBLASLT], env, [CUBLASLT])[0])
            for who, tool in contenders:
                r4.add(who, timed(tool(CUBLASLT, "--format", "json", "-o", os.devnull), env, [CUBLASLT])[0])
        r4.show("now", "cuobjdump", "cuobjdump", "today" if base else None)

    if rows & {5, 6} and os.path.exists(TORCH_LIB):
        r5 = Row(5, "check libtorch_cuda.so against 5 GPUs vs 1 GPU (JSON)", "<= 1.2")
        r6 = Row(6, "check libtorch_cuda.so (1 GPU, no --kernels, JSON) vs its JSON listing", "<= 2")
        five = [a for g in GPUS5 for a in ("--gpu", g)]
        for _ in range(n):
            for who, tool in contenders:
                one = timed(
                    tool("check", TORCH_LIB, "--gpu", "H100", "--format", "json", "-o", os.devnull),
                    env,
                    [TORCH_LIB],
                )[0]
                many = timed(
                    tool("check", TORCH_LIB, *five, "--format", "json", "-o", os.devnull), env, [TORCH_LIB]
                )[0]
                lst = timed(tool(TORCH_LIB, "--format", "json", "-o", os.devnull), env, [TORCH_LIB])[0]
                r5.add(f"{who}-5", many)
                r5.add(f"{who}-1", one)
                r6.add(f"{who}-check", one)
                r6.add(f"{who}-list", lst)
        for who, _ in contenders:
            label = "now  " if who == "now" else "today"
            print(
                f"row 5: {r5.title}\n    {label} 5 GPUs {r5.med(who + '-5'):.2f} s   1 GPU {r5.med(who + '-1'):.2f} s   "
                f"RATIO {r5.ratio(who + '-5', who + '-1'):.3f}x (goal {r5.goal})"
            )
            print(
                f"row 6: {r6.title}\n    {label} check {r6.med(who + '-check'):.2f} s   list {r6.med(who + '-list'):.2f} s   "
                f"RATIO {r6.ratio(who + '-check', who + '-list'):.3f}x (goal {r6.goal})",
                flush=True,
            )

    if 7 in rows:
        whl = next(iter(sorted(glob.glob(os.path.join(args.corpus, "torch-2.14.1-*.whl")))), None)
        if whl:
            r7 = Row(
                7,
                f"list / check of {os.path.basename(whl)} ({os.path.getsize(whl) >> 20} MB) vs inflating its candidate members once",
                "<= 1.2",
            )
            floor_cmd = [
                sys.executable,
                "-c",
                f"import sys; sys.path.insert(0, {os.path.join(ROOT, 'scripts')!r}); import bench_scan; "
                f"bench_scan.inflate_candidates({whl!r})",
            ]
            for _ in range(n):
                r7.add("floor", timed(floor_cmd, env, [whl])[0])
                for who, tool in contenders:
                    r7.add(
                        f"{who}-list", timed(tool(whl, "--format", "json", "-o", os.devnull), env, [whl])[0]
                    )
                    r7.add(
                        f"{who}-check",
                        timed(
                            tool("check", whl, "--gpu", "H100", "--format", "json", "-o", os.devnull),
                            env,
                            [whl],
                        )[0],
                    )
            print(f"row 7: {r7.title}\n    inflate floor (serial) {r7.med('floor'):.2f} s")
            for who, _ in contenders:
                print(
                    f"    {who:5} list {r7.med(who + '-list'):.2f} s RATIO {r7.ratio(who + '-list', 'floor'):.3f}x   "
                    f"check {r7.med(who + '-check'):.2f} s RATIO {r7.ratio(who + '-check', 'floor'):.3f}x (goal {r7.goal})",
                    flush=True,
                )

    if 8 in rows:
        copy = os.path.join(args.work, "tree-copy")
        if not os.path.exists(os.path.join(copy, ".complete")):
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(tree, copy, symlinks=True)
            open(os.path.join(copy, ".complete"), "w").close()
        r8 = Row(
            8,
            "peak RSS of scan --format json (workers included): the tree, then the tree and a copy of it",
            "flat",
            "MB",
        )
        for _ in range(n):
            for who, tool in contenders:
                for tag, paths in (("1", [tree]), ("2", [tree, copy])):
                    cmd, e = scan_cmd(tool, None, *paths)
                    warm(*paths)
                    _s, total, largest, _rc = bench_scan.run_measured_each(cmd, e)
                    r8.add(f"{who}-{tag}", total / 2**20)
                    r8.add(f"{who}-{tag}-one", largest / 2**20)
        print(f"row 8: {r8.title}")
        for who, _ in contenders:
            print(
                f"    {who:5} tree {r8.med(who + '-1'):.0f} MB   tree twice {r8.med(who + '-2'):.0f} MB   "
                f"RATIO {r8.ratio(who + '-2', who + '-1'):.2f}x (flat: 1.0); largest process "
                f"{r8.med(who + '-1-one'):.0f} MB and {r8.med(who + '-2-one'):.0f} MB "
                f"RATIO {r8.ratio(who + '-2-one', who + '-1-one'):.2f}x",
                flush=True,
            )
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
