#!/usr/bin/env python3
"""Longer fuzz run of every parser (issue 7); the test suite runs a bounded version (tests/hostile/test_fuzz.py).

    python scripts/fuzz.py                       # 60 s per target, all targets
    python scripts/fuzz.py --seconds 300 --targets fatbin,cubin --save-crashes tests/regressions

Engine: atheris (coverage-guided libFuzzer; ``pip install atheris``) when importable, else
hypothesis driving the same byte mutations as the suite with a larger budget. Targets and seeds
are ``tests/fuzz_targets.py``: an ``InputError`` is a refused input, anything else is a crash.
Besides the parsers, ``names`` mutates hostile strings (``fuzz_targets.hostile_names``: terminal
escapes, CR/LF, rich markup, bidi overrides, non-UTF-8 bytes) used as file, member, identifier
and kernel names, and fails when one reaches the output raw; ``nested`` mutates nested archives
(``fuzz_targets.nested_archives``: zip/tar/tar.gz in each other, a small bomb) through the
inventory and its one budget per input.
Each target runs in its own process; its crash inputs are written to ``--save-crashes`` as
``TARGET__crash_<sha1>.bin`` (the name ``tests/hostile/test_regressions.py`` replays). At the end the
slowest and the largest input of each target are replayed in a fresh process that reports their
wall time and peak resident memory above an idle interpreter.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))


class Stats:
    """Inputs tried, distinct crashes, slowest and largest input; flushed to a JSON file."""

    def __init__(self, target: str, path: str, crash_dir: str):
        self.target, self.path, self.crash_dir = target, path, crash_dir
        self.tried, self.crashes = 0, {}
        self.slowest = (0.0, b"")
        self.largest = b""
        self._flushed = 0.0

    def run(self, fn, data: bytes) -> None:
        from fatbin_inspect.errors import InputError

        self.tried += 1
        t = time.perf_counter()
        try:
            fn(data)
        except InputError:
            pass
        except Exception as exc:  # a crash: keep one input per (type, place)
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            key = f"{type(exc).__name__} at {os.path.basename(tb.filename)}:{tb.lineno}"
            if key not in self.crashes:
                name = f"{self.target}__crash_{hashlib.sha1(data).hexdigest()[:12]}.bin"
                with open(os.path.join(self.crash_dir, name), "wb") as fh:
                    fh.write(data)
                self.crashes[key] = name
        dt = time.perf_counter() - t
        if dt > self.slowest[0]:
            self.slowest = (dt, data)
        if len(data) > len(self.largest):
            self.largest = data
        if time.monotonic() - self._flushed > 2:
            self.flush()

    def flush(self) -> None:
        self._flushed = time.monotonic()
        for kind, data in (("slowest", self.slowest[1]), ("largest", self.largest)):
            with open(f"{self.path}.{kind}", "wb") as fh:
                fh.write(data)
        with open(self.path, "w") as fh:
            json.dump(
                {
                    "target": self.target,
                    "tried": self.tried,
                    "crashes": self.crashes,
                    "slowest_s": self.slowest[0],
                    "slowest_bytes": len(self.slowest[1]),
                    "largest_bytes": len(self.largest),
                },
                fh,
            )


def child(target: str, seconds: float, stats_path: str, crash_dir: str, engine: str) -> None:
    import fuzz_targets as T

    stats = Stats(target, stats_path, crash_dir)
    fn = T.TARGETS[target]
    seeds = T.seeds(target)
    if engine == "atheris":
        import atheris

        with atheris.instrument_imports():
            import fatbin_inspect.inventory.reader  # noqa: F401  (instrument the parsers)
        corpus = tempfile.mkdtemp(prefix=f"fuzz-{target}-")
        for i, s in enumerate(seeds):
            with open(os.path.join(corpus, f"seed{i}"), "wb") as fh:
                fh.write(s)
        atheris.Setup(
            [
                sys.argv[0],
                f"-max_total_time={int(seconds)}",
                "-max_len=262144",
                "-rss_limit_mb=4096",
                "-print_final_stats=1",
                corpus,
            ],
            lambda d: stats.run(fn, d),
        )
        import atexit

        atexit.register(stats.flush)
        atheris.Fuzz()
        return
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from mutate import mutate

    deadline = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < deadline:
        rounds += 1

        @settings(max_examples=2000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(st.data())
        def batch(data):
            if time.monotonic() > deadline:
                return
            seed = seeds[data.draw(st.integers(0, len(seeds) - 1))]
            stats.run(
                fn, mutate(seed, lambda lo, hi: data.draw(st.integers(lo, hi)), data.draw(st.integers(1, 16)))
            )

        batch()
    stats.flush()


_REPLAY = """
import resource, sys, time
sys.path.insert(0, {tests!r})
import fuzz_targets as T
from fatbin_inspect.errors import InputError
data = open({path!r}, "rb").read()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
try:
    T.TARGETS[{target!r}](data)
except InputError:
    pass
dt = time.perf_counter() - t
print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base)
"""


def replay(target: str, path: str):
    """(seconds, extra peak RSS in KiB) of one input in a fresh interpreter."""
    code = _REPLAY.format(tests=os.path.join(ROOT, "tests"), path=path, target=target)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if out.returncode:
        return None, None
    dt, kb = out.stdout.split()
    return float(dt), int(kb)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60, help="per target")
    ap.add_argument("--targets", default="", help="comma-separated (default: all)")
    ap.add_argument("--engine", choices=["auto", "atheris", "hypothesis"], default="auto")
    ap.add_argument("--save-crashes", default=None, help="directory for crash inputs (default: a temp dir)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--stats", default=None, help=argparse.SUPPRESS)
    args, _rest = ap.parse_known_args()
    engine = args.engine
    if engine == "auto":
        try:
            import atheris  # noqa: F401

            engine = "atheris"
        except ImportError:
            engine = "hypothesis"
    crash_dir = args.save_crashes or tempfile.mkdtemp(prefix="fuzz-crashes-")
    os.makedirs(crash_dir, exist_ok=True)
    if args.child:
        child(args.child, args.seconds, args.stats, crash_dir, engine)
        return 0

    import fuzz_targets as T

    targets = [t for t in args.targets.split(",") if t] or list(T.TARGETS)
    work = tempfile.mkdtemp(prefix="fuzz-stats-")
    print(f"engine {engine}, {args.seconds:.0f} s per target, crashes -> {crash_dir}")
    total = 0
    rows = []
    for t in targets:
        stats_path = os.path.join(work, f"{t}.json")
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--child",
            t,
            "--seconds",
            str(args.seconds),
            "--stats",
            stats_path,
            "--save-crashes",
            crash_dir,
            "--engine",
            engine,
        ]
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=args.seconds + 600)
        if not os.path.exists(stats_path):
            print(f"{t}: the fuzzer process died before writing statistics (a native crash?)")
            continue
        with open(stats_path) as fh:
            st = json.load(fh)
        slow_t, slow_kb = replay(t, stats_path + ".slowest")
        big_t, big_kb = replay(t, stats_path + ".largest")
        total += st["tried"]
        rows.append((t, st, slow_t, slow_kb, big_t, big_kb))
        print(
            f"{t:10} tried {st['tried']:>8}  crashes {len(st['crashes'])}  "
            f"slowest {st['slowest_bytes']} B: {slow_t if slow_t is not None else float('nan'):.3f} s, "
            f"+{slow_kb} KiB RSS  largest {st['largest_bytes']} B: {big_t if big_t is not None else float('nan'):.3f} s, "
            f"+{big_kb} KiB RSS"
        )
        for key, name in st["crashes"].items():
            print(f"           crash {key}: {os.path.join(crash_dir, name)}")
    crashes = sum(len(r[1]["crashes"]) for r in rows)
    print(f"total: {total} inputs tried, {crashes} distinct crashes")
    return 1 if crashes else 0


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    sys.exit(main())
