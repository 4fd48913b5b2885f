#!/usr/bin/env python3
"""What a warm rescan costs at the least with this design, as a child process beside the floor of
issue 26's row 1 (start, lstat every file, write the document) and the real warm scan.

The "design floor" process does only what no warm scan here can skip: it imports click (the
command line), sqlite3 and zstandard (the cache), walks and lstats the tree as the floor does,
reads every cached key under the root in one query and compares it with the lstat, reads the
texts of the files with device code, unpacks them (libzstd verifies each frame's checksum) and
checks them as the cache does (ASCII, no ESC), and writes them with the document's frame. The
"imports" process only imports every module a warm scan imports (found by running one) and
exits: what the command line costs before it does anything. No judging, no
coverage, no record decoding, no options. Median of ``--runs``; the three alternate.

    python scripts/bench_warm_floor.py [--runs 5] [--work .cache/bench_scan]

Needs ``scripts/bench_table.py --rows 1`` run once (the tree, its cold document, a filled cache).
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.dont_write_bytecode = True

from bench_table import FLOOR  # noqa: E402

DESIGN_FLOOR = r"""
import os, sys, sqlite3, json
import click, zstandard
tree, db, out = sys.argv[1:4]
keys = {}
def walk(d):
    with os.scandir(d) as it:
        for e in it:
            if e.is_dir(follow_symlinks=False):
                walk(e.path)
            else:
                s = e.stat(follow_symlinks=False)
                keys[os.fsencode(e.path)] = (s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns)
walk(os.path.abspath(tree))
con = sqlite3.connect(db)
lo = os.fsencode(os.path.abspath(tree)) + b"/"
hi = lo[:-1] + b"0"
same = 0
for row in con.execute("SELECT path, dev, ino, size, mtime, ctime, summary FROM files WHERE path >= ? AND path < ?", (lo, hi)):
    same += keys.get(row[0]) is not None
dec = zstandard.ZstdDecompressor()
with open(out, "wb") as fh:
    fh.write(b'{\n  "files": [\n')
    for blob, at in con.execute("SELECT texts, texts_at FROM files WHERE path >= ? AND path < ? AND texts IS NOT NULL ORDER BY path", (lo, hi)):
        pos = 0
        for frame, size in json.loads(at):
            t = dec.decompress(blob[pos:pos + frame], max_output_size=size)
            pos += frame
            assert t.isascii() and b"\x1b" not in t
            fh.write(t)
            fh.write(b",\n")
    fh.write(b"]\n}\n")
"""


# a warm scan in-process, then the modules it imported beyond a bare interpreter's, one per line
MODULES_PROBE = r"""
import sys
bare = set(sys.modules)
from fatbin_inspect.cli.main import main
try:
    main(["scan", "--format", "json", "-o", sys.argv[1], sys.argv[2]])
except SystemExit:
    pass
print("\n".join(sorted(m for m in set(sys.modules) - bare if not m.startswith("__"))))
"""
IMPORTS = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"


def timed(cmd, env) -> float:
    t0 = time.monotonic()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", default=os.path.join(ROOT, ".cache", "bench_scan"))
    args = ap.parse_args()
    tree = os.path.join(args.work, "tree")
    cold = os.path.join(args.work, "cold-now.json")
    cache = os.path.join(args.work, "cache-now")
    sys.path.insert(0, ROOT)
    from fatbin_inspect.scanning.cache import CACHE_VERSION

    dbs = glob.glob(os.path.join(cache, f"scan-v{CACHE_VERSION}.sqlite3"))  # the one the scan reads
    if not (os.path.isdir(tree) and os.path.isfile(cold) and dbs):
        print("run scripts/bench_table.py --rows 1 first (tree, cold document, cache)", file=sys.stderr)
        return 2
    env = dict(os.environ, FATBIN_INSPECT_CACHE_DIR=cache, FATBIN_INSPECT_PROGRESS="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def out(name):  # each writes a file, as row 1 does (writing 35 MB is part of every side)
        return os.path.join(args.work, f"warm-floor-{name}.json")

    scan = [sys.executable, "-m", "fatbin_inspect", "scan", "--format", "json", "-o", out("scan"), tree]
    probe = [sys.executable, "-c", MODULES_PROBE, out("probe"), tree]
    modules = subprocess.run(probe, env=env, check=True, capture_output=True, text=True).stdout.split()
    sides = {
        "floor": [*FLOOR, tree, cold, out("floor")],
        "imports": [sys.executable, "-c", IMPORTS, *modules],
        "design floor": [sys.executable, "-c", DESIGN_FLOOR, tree, dbs[0], out("design")],
        "warm scan": scan,
    }
    times: dict[str, list[float]] = {k: [] for k in sides}
    for cmd in sides.values():  # once each, unmeasured: page cache, bytecode
        timed(cmd, env)
    for _ in range(args.runs):
        for name, cmd in sides.items():
            times[name].append(timed(cmd, env))
    f = statistics.median(times["floor"])
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"{name:13} {m:6.3f} s  ({min(ts):.3f}-{max(ts):.3f})  {m / f:5.2f}x the floor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
