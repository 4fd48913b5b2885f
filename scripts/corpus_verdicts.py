#!/usr/bin/env python3
"""Verdicts of every library with device code in the corpus wheels, on the issue's eight GPUs.

    nice python3 scripts/corpus_verdicts.py [.cache/corpus] [-o table.md] [--json out.json]

For each wheel (``*.whl`` in the folder and its ``win/``), each member with device code is judged
(R-RT runtime: linked or static cudart, else the wheel's requirements) on A100, H100, RTX 4090,
RTX 5090, B200, GB10, Jetson AGX Orin and GTX 1080 with driver R580, and for CUDA 12 (and older)
libraries also with R535; each wheel gets a distribution row (R-UNIT, R-VARIANT). A cell reads
``verdict/coverage``, with the CUDA error for a failure; every failure's reason follows the table.
Verdicts need only entry headers and small device-link cubins, as ``check`` without ``--kernels``.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fatbin_inspect.compat import runtime, units
from fatbin_inspect.compat.engine import evaluate
from fatbin_inspect.compat.targets import ANY_HOST, resolve_targets
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path
from fatbin_inspect.judging.verdicts import wheel_runtime

GPUS = ("A100", "H100", "RTX 4090", "RTX 5090", "B200", "GB10", "Jetson AGX Orin", "GTX 1080")
SHORT = ("A100", "H100", "4090", "5090", "B200", "GB10", "Orin", "1080")
OPTS = Options(probe_small=True)


def cell(v) -> str:
    if v.verdict == "fail":
        return f"fail {v.error.code if v.error else '?'}/{v.coverage}"
    return f"{v.verdict}/{v.coverage}"


def judge_wheel(path: str, targets_by_driver: dict) -> list[dict]:
    """Rows for one wheel: its members with device code, then the distribution."""
    wheel_rt = wheel_runtime(path)
    members = []
    for r in inspect_path(path, OPTS):
        if not r.fatbins or "!" not in r.path:
            continue
        members.append((r, runtime.for_file(r, wheel_rt)))
    rows = []
    per_driver: dict[str, list] = {d: [] for d in targets_by_driver}
    older = _cuda12_wheel(path, wheel_rt)
    for r, rt in members:
        drivers = ["580"] + (["535"] if (rt is not None and rt.major <= 12) or (rt is None and older) else [])
        row = {"library": r.path.split("!", 1)[1], "runtime": rt.version if rt else None, "cells": {}}
        for d in drivers:
            vs = [evaluate(r, t, rt) for t in targets_by_driver[d]]
            per_driver[d].append((r.path, vs))
            row["cells"][d] = [_cell(v, summary=_summary(v)) for v in vs]
        rows.append(row)
    if members:
        dist = {"library": f"[distribution] {os.path.basename(path)}", "runtime": None, "cells": {}}
        for d, files in per_driver.items():
            if not files or (d == "535" and len(files) < len(members)):
                continue
            us = [units.unit_verdict([(p, vs[i]) for p, vs in files]) for i in range(len(GPUS))]
            dist["cells"][d] = [
                _cell(
                    u,
                    summary=None,
                    set_aside=[p.rsplit("/", 1)[-1] for p in u.set_aside],
                    variants=[p.rsplit("/", 1)[-1] for p in u.variants],
                )
                for u in us
            ]
        rows.append(dist)
    return rows


def _cell(v, **extra) -> dict:
    """One table cell of a file's or a distribution's verdict (``extra``: the fields only one has)."""
    return {
        "verdict": v.verdict,
        "coverage": v.coverage,
        "error": v.error.code if v.error else None,
        "rule": v.rule,
        "reason": v.reason,
        **extra,
    }


def _cuda12_wheel(path: str, wheel_rt) -> bool:
    """A CUDA 12 (or older) wheel by its requirements or name (cu11/cu12, cuda11x/cuda12x)."""
    if wheel_rt is not None:
        return wheel_rt.major <= 12
    return re.search(r"(?i)(cu1[12]\b|cu1[12][_-]|cuda1[12]x)", os.path.basename(path)) is not None


def _summary(v) -> str | None:
    from fatbin_inspect.compat.describe import coverage_line

    return coverage_line(v)


def markdown(results: dict[str, list[dict]]) -> str:
    out = [
        "| wheel | library | runtime | driver | " + " | ".join(SHORT) + " |",
        "|---|---|---|---|" + "---|" * len(SHORT),
    ]
    reasons = []
    for wheel, rows in results.items():
        for row in rows:
            for d, cells in row["cells"].items():
                texts = []
                for gpu, c in zip(SHORT, cells, strict=False):
                    t = f"{c['verdict']}" + (f" {c['error']}" if c["error"] else "") + f"/{c['coverage']}"
                    if c["verdict"] == "fail":
                        reasons.append(
                            f"{len(reasons) + 1}. {row['library']} on {gpu} (R{d}): {c['rule']}: {c['reason']}"
                        )
                        t += f" [{len(reasons)}]"
                    texts.append(t)
                name = wheel.split("-")[0] + " " + wheel.split("-")[1]
                out.append(
                    f"| {name} | {row['library']} | {row['runtime'] or '-'} | {d} | "
                    + " | ".join(texts)
                    + " |"
                )
    return "\n".join([*out, "", "Failure reasons:", "", *reasons]) + "\n"


LETTER = {"native": "N", "jit": "J", "fail": "F", "link-time": "L", "no-device-code": "-"}
COVER = {"full": "f", "partial": "p", "none": "n"}


def failure_class(c: dict) -> str:
    """Why a cell fails, by the deciding rule: the classes the issue note lists."""
    if c["rule"] == "R-GPU":
        return "G"  # the driver branch does not enumerate the GPU (100)
    if c["rule"] == "R-DRV":
        return "D"  # the runtime needs a newer driver (35)
    if c["rule"] == "R-PTX-ISA":
        return "I"  # PTX newer than the driver's JIT (222)
    if c["rule"] == "R-SASS-TEGRA":
        return "T"  # desktop cubins never run on Tegra, no PTX that reaches 8.7
    return "A"  # no code for this GPU's generation (R-SASS-1 / R-PTX-TARGET), 209


def brief(results: dict[str, list[dict]]) -> str:
    """One line per library and driver: N/J/F/L verdict, f/p/n coverage, the failure class."""
    out = ["| library | drv | " + " | ".join(SHORT) + " |", "|---|---|" + "---|" * len(SHORT)]
    for wheel, rows in results.items():
        name = "-".join(wheel.split("-")[:2])
        for row in rows:
            lib = row["library"].replace("[distribution] " + wheel, f"**{name}** (distribution)")
            if not row["library"].startswith("[distribution]"):
                lib = f"{name}!{lib}"
            for d, cells in row["cells"].items():
                texts = []
                for c in cells:
                    t = LETTER.get(c["verdict"], "?") + (str(c["error"]) if c["error"] else "")
                    t += "/" + COVER.get(c["coverage"], "?")
                    if c["verdict"] == "fail":
                        t += " " + failure_class(c)
                    texts.append(t)
                out.append(f"| {lib} | {d} | " + " | ".join(texts) + " |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "corpus", nargs="?", default=os.path.join(os.path.dirname(__file__), "..", ".cache", "corpus")
    )
    ap.add_argument("-o", "--output", help="markdown table (default: stdout)")
    ap.add_argument("--json", help="also write the verdicts as JSON")
    ap.add_argument("--from-json", help="render a JSON written by --json instead of judging again")
    ap.add_argument("--only", action="append", default=[], help="wheel name prefix to include (repeat)")
    ap.add_argument("--brief", action="store_true", help="compact cells (N/J/F/L, f/p/n, failure class)")
    args = ap.parse_args(argv)
    wheels = sorted(
        glob.glob(os.path.join(args.corpus, "*.whl")) + glob.glob(os.path.join(args.corpus, "win", "*.whl"))
    )
    if args.only:
        wheels = [w for w in wheels if any(os.path.basename(w).startswith(p) for p in args.only)]
    # the device-code table: x86_64 wheels judged on Jetson and DGX Spark GPUs too (host "any":
    # no R-HOST, which would fail every cell of those columns)
    targets = {
        d: tuple(dataclasses.replace(t, host=ANY_HOST) for t in resolve_targets(list(GPUS), d))
        for d in ("580", "535")
    }
    results = {}
    if args.from_json:
        with open(args.from_json, encoding="utf-8") as fh:
            results = json.load(fh)
        wheels = []
    for w in wheels:
        print(f"judging {os.path.basename(w)}", file=sys.stderr, flush=True)
        rows = judge_wheel(w, targets)
        if rows:
            results[os.path.basename(w)] = rows
    text = brief(results) if args.brief else markdown(results)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
