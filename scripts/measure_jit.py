#!/usr/bin/env python3
"""Measure NVIDIA's ptxas on real PTX and fit the JIT cost model of ``data/jit_model.json``.

The driver's JIT is the same compiler as ``ptxas`` and runs on the host CPU, so its cost can be
measured without a GPU: PTX is taken from the corpus wheels (``scripts/fetch_corpus.sh``) and
the fixtures with the project's own extractor (``fatbin-inspect extract --kind ptx``), compiled
by the ptxas of the ``nvidia-cuda-nvcc`` wheels (13.x, and 12.x from ``nvidia-cuda-nvcc-cu12``)
for one SASS arch per target family, and the user+sys seconds of each run and the bytes of the
cubin it writes are recorded. Per image, ``seconds = c + a_f * ptx_bytes`` and likewise the
cubin bytes (``pooled``: ``c`` the floor of tiny images, ``a_f`` one rate times the family's
ratio to sm_90 on the same PTX), fitted on the PTX of some libraries and checked on the PTX of
the others (held out): the note of the data gives the held-out error. Richer features (entries,
instructions, registers, ``.maxntid``) are measured too and their fit reported, but ``check``
only reads the entry headers (uncompressed sizes), so the data keeps the bytes-only fit.

    pip install --target .cache/jit-tools/13 nvidia-cuda-nvcc
    pip install --target .cache/jit-tools/12 nvidia-cuda-nvcc-cu12
    python scripts/measure_jit.py                 # sample, fit, write data/jit_model.json
    python scripts/measure_jit.py --budget 60     # seconds of ptxas time per family
    python scripts/measure_jit.py --refit         # fit the last run's compiles again
    python scripts/measure_jit.py --validate      # issue 27's check on a PTX-only corpus library

``--validate`` judges cupy-cuda11x's ``_generator_api`` (``--big``: and ``cub``; CUDA 11.8 builds:
compute_90 PTX, no SASS past sm_90, never fitted on) on a B200 and an RTX 5090 with the engine,
then compiles exactly the PTX the engine chose with ptxas 13 and compares ``estimate_s`` and
``cache_bytes`` with what ptxas took and wrote (2x is the issue's bound), and ``ptx_bytes`` with
what ``cuobjdump -xptx`` extracts for that arch (1%).
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import math
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("FATBIN_INSPECT_CORPUS", ROOT / ".cache" / "corpus"))
if not CORPUS.is_dir() and Path("/work/main/.cache/corpus").is_dir():
    CORPUS = Path("/work/main/.cache/corpus")
TOOLS = ROOT / ".cache" / "jit-tools"
WORK = ROOT / ".cache" / "jit-ptx"
MODEL = ROOT / "fatbin_inspect" / "data" / "jit_model.json"

# (family, the SASS arch compiled for): one per generation whose SASS differs
FAMILIES = {"sm_80": "sm_80", "sm_90": "sm_90", "sm_100": "sm_100", "sm_120": "sm_120"}
# PTX sources: (wheel or file glob, name of the library in the report)
SOURCES = [
    ("bitsandbytes-0.50.2-*.whl", "bitsandbytes"),
    ("cupy_cuda11x-*.whl", "cupy-cuda11x"),
    ("cupy_cuda12x-*.whl", "cupy-cuda12x"),
    ("nvidia_cufft-*.whl", "cufft"),
    ("nvidia_curand-*.whl", "curand"),
    ("nvidia_nvshmem_cu13-*.whl", "nvshmem"),
    ("nvidia_cublas_cu12-*.whl", "cublas-cu12"),
    ("nvidia_nccl_cu13-*.whl", "nccl"),
    ("onnxruntime_gpu-*.whl", "onnxruntime-gpu"),
    ("torchvision-*.whl", "torchvision"),
]
FIXTURES = sorted(str(p) for p in (ROOT / "fixtures" / "bin").glob("t*"))
MAX_PTX = 3 << 20  # bytes: larger PTX takes minutes per compile (onnxruntime has 40 MB ones)
TINY = 4 << 10  # PTX below this measures the per-image floor (process start, ELF headers)
HELD_LIBRARIES = {"cupy-cuda11x", "cublas-cu12"}  # never fitted on; cupy-cuda11x is --validate's

_ENTRY = re.compile(rb"^[ \t]*(?:\.(?:visible|weak)[ \t]+)*\.entry\s", re.M)
_FUNC = re.compile(rb"^[ \t]*(?:\.(?:visible|weak|extern)[ \t]+)*\.func\s", re.M)
_REG = re.compile(rb"^\s*\.reg\s+\.\w+\s+%\w+<(\d+)>", re.M)
_MAXNTID = re.compile(rb"\.maxntid\s")
_INSTR = re.compile(rb"^\s*(?:@!?%\w+\s+)?[a-z][\w.:]*[^;\n]*;", re.M)
_TARGET = re.compile(rb"^\s*\.target\s+(?:sm|compute)_(\d+)([af]?)", re.M)


def ptxas_tools() -> dict[str, str]:
    """ptxas per major version: the wheels under .cache/jit-tools (or --tools), else PATH."""
    found = {}
    for p in sorted(glob.glob(str(TOOLS / "*" / "nvidia" / "**" / "bin" / "ptxas"), recursive=True)):
        found[_version(p).split(".")[0]] = p
    if not found and shutil.which("ptxas"):
        found[_version(shutil.which("ptxas")).split(".")[0]] = shutil.which("ptxas")
    return found


def _version(ptxas: str) -> str:
    out = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else "?"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def extract(source: str, out: Path, arch: str | None = None) -> list[dict]:
    """The project's extractor: ``fatbin-inspect extract --kind ptx``; the files it wrote."""
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "fatbin_inspect", "extract", source, "--kind", "ptx", "-d", str(out)]
    cmd += ["--arch", arch] if arch else []
    cmd += ["--format", "json", "-q", "--force"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode not in (0, 2):
        raise SystemExit(f"extract {source}: {r.stderr.strip()}")
    return json.loads(r.stdout)["written"] if r.stdout.strip() else []


def features(text: bytes) -> dict:
    """What the tool can see in PTX without compiling it."""
    t = _TARGET.search(text)
    return {
        "bytes": len(text),
        "entries": len(_ENTRY.findall(text)),
        "funcs": len(_FUNC.findall(text)),
        "instructions": len(_INSTR.findall(text)),
        "registers": sum(int(n) for n in _REG.findall(text)),
        "maxntid": len(_MAXNTID.findall(text)),
        "target": (int(t.group(1)), t.group(2).decode()) if t else None,
    }


def compiles_for(target: tuple[int, str] | None, sass: str) -> bool:
    """compute_XY PTX compiles for sm_ZW when XY <= ZW; a/f PTX only for its own arch/family."""
    if target is None:
        return False
    sm = int(sass[3:])
    cc, variant = target
    if variant == "a":
        return cc == sm
    if variant == "f":
        return cc // 10 == sm // 10 and cc <= sm
    return cc <= sm


def run_ptxas(ptxas: str, ptx: Path, sass: str) -> tuple[float, int] | None:
    """(user+sys seconds, cubin bytes) of one compile, or None when ptxas refuses the PTX."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.cubin"
        before = os.times()
        r = subprocess.run([ptxas, f"-arch={sass}", str(ptx), "-o", str(out)], capture_output=True)
        after = os.times()
        if r.returncode != 0 or not out.exists():
            return None
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        return cpu, out.stat().st_size


def collect(rng: random.Random, per_source: int) -> list[dict]:
    """PTX files from every source present: up to ``per_source`` a source, spread over sizes."""
    items = []
    sources = [(str(p), name) for pat, name in SOURCES for p in sorted(CORPUS.glob(pat))[:1]]
    sources += [(f, "fixtures") for f in FIXTURES]
    for src, name in sources:
        out = WORK / Path(src).name
        written = (
            [{"file": p.name} for p in sorted(out.glob("*.ptx"))]
            if out.is_dir() and any(out.glob("*.ptx"))
            else extract(src, out)
        )
        files = [out / w["file"] for w in written]
        files = [f for f in files if 0 < f.stat().st_size <= MAX_PTX]
        files.sort(key=lambda f: f.stat().st_size)
        if len(files) > per_source:  # spread over the sizes: quantiles plus a few at random
            step = len(files) / per_source
            files = [files[int(i * step)] for i in range(per_source - 1)] + [files[-1]]
        items += [{"source": name, "path": str(f)} for f in files]
    rng.shuffle(items)
    return items


def fit(rows: list[dict], key: str) -> dict:
    """``y = c + a * bytes ** b`` per image, with ``b = 1``: ``c`` the median of the tiny images
    (what a compile costs whatever its size), ``a`` the ratio of totals above it over the images
    of 16 KB and more (the estimator of a sum: a library's cost is its large images'). A fitted
    exponent (least squares on logs) was tried: on the few large images of a family it swung
    from 1.1 to 5 and did no better on held-out PTX."""
    tiny = sorted(r[key] for r in rows if r["bytes"] < TINY)
    c = tiny[len(tiny) // 2] if tiny else 0.0
    big = [r for r in rows if r["bytes"] >= 4 * TINY]
    a = max(sum(r[key] - c for r in big), 0.0) / sum(r["bytes"] for r in big) if big else 0.0
    return {"c": _g(c), "a": _g(a), "b": 1.0}


def pooled(rows: list[dict], key: str, ref: str = "sm_90") -> dict[str, dict]:
    """Per family ``c + a_f * bytes``, with ``a_f = a * r_f``: ``r_f`` how much longer (larger)
    family ``f`` takes than ``ref`` on the same PTX files (the ratio of totals over the files of
    16 KB and more compiled for both), ``a`` one rate fitted on every family's images divided by
    their ``r_f``. A family's own fit mixes the target with the libraries whose PTX it can take
    (only compute_120 PTX reaches sm_120 alone); the pairs separate the two."""
    by = {f: {r["path"]: r for r in rows if r["family"] == f} for f in FAMILIES}
    floors = {f: fit(list(by[f].values()), key)["c"] for f in FAMILIES if by[f]}
    scale = {}
    for f in floors:
        both = [p for p in by[f] if p in by[ref] and by[f][p]["bytes"] >= 4 * TINY]
        num = sum(by[f][p][key] - floors[f] for p in both)
        den = sum(by[ref][p][key] - floors[ref] for p in both)
        scale[f] = num / den if both and den > 0 and num > 0 else 1.0
    big = [r for r in rows if r["bytes"] >= 4 * TINY and r["family"] in floors]
    above = sum(max(r[key] - floors[r["family"]], 0.0) / scale[r["family"]] for r in big)
    a = above / sum(r["bytes"] for r in big) if big else 0.0
    return {
        f: {"c": floors[f], "a": _g(a * scale[f]), "b": 1.0, "vs_" + ref: round(scale[f], 3)} for f in floors
    }


def _g(x: float) -> float:
    return float(f"{x:.6g}")


def predict(f: dict, size: int) -> float:
    return f["c"] + f["a"] * size ** f["b"]


def fit_rich(rows: list[dict], key: str):
    """log y against log(1+feature) for every feature (images of 16 KB and more): what a model
    that decompressed and read the PTX could do; the data keeps the bytes-only one."""
    import numpy as np

    names = ["bytes", "entries", "funcs", "instructions", "registers", "maxntid"]
    x = np.array([[1.0] + [math.log1p(r[n]) for n in names] for r in rows])
    y = np.array([math.log(r[key]) for r in rows])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    return lambda r: math.exp(coef[0] + sum(c * math.log1p(r[n]) for c, n in zip(coef[1:], names)))


def ratios(pred, rows: list[dict], key: str) -> dict:
    """Held-out error: the factor between prediction and measurement (always >= 1)."""
    f = sorted(max(p / r[key], r[key] / p) for r in rows for p in [pred(r)])
    if not f:
        return {}
    return {
        "n": len(f),
        "median_factor": round(f[len(f) // 2], 3),
        "p90_factor": round(f[min(len(f) - 1, int(len(f) * 0.9))], 3),
        "max_factor": round(f[-1], 3),
    }


def measure(args) -> None:
    tools = ptxas_tools()
    if "13" not in tools:
        raise SystemExit("no ptxas 13: pip install --target .cache/jit-tools/13 nvidia-cuda-nvcc")
    rng = random.Random(27)
    items = collect(rng, args.per_source)
    for it in items:
        it.update(features(Path(it["path"]).read_bytes()))
    items.sort(key=lambda it: it["bytes"])  # the budget takes the small and middle ones first
    rows: list[dict] = []
    for family, sass in FAMILIES.items():
        spent = 0.0
        for it in items:
            if spent > args.budget:
                break
            if not compiles_for(it["target"], sass):
                continue
            got = run_ptxas(tools["13"], Path(it["path"]), sass)
            if got is None or got[0] <= 0:
                continue
            spent += got[0]
            row = {**it, "family": family, "ptxas": "13", "seconds": got[0], "cubin_bytes": got[1]}
            rows.append(row)
            if "12" in tools and len([r for r in rows if r["family"] == family]) % 4 == 1:
                old = run_ptxas(tools["12"], Path(it["path"]), sass)  # ptxas 12 on every fourth
                if old is not None and old[0] > 0:
                    spent += old[0]
                    rows.append({**row, "ptxas": "12", "seconds": old[0], "cubin_bytes": old[1]})
        print(f"{family}: {sum(r['family'] == family for r in rows)} compiles, {spent:.1f} s", flush=True)
    (WORK / "measurements.json").write_text(json.dumps(rows, indent=1))
    fit_model(rows, tools)


def fit_model(rows: list[dict], tools: dict[str, str]) -> None:
    """The per-family fits of ``rows`` (one per compile) into data/jit_model.json."""
    sources = sorted({r["source"] for r in rows if r["source"] != "fixtures"})
    # held out: whole libraries, and every third other PTX file (by a stable hash of its path)
    for r in rows:
        r["held"] = r["source"] in HELD_LIBRARIES or zlib.crc32(r["path"].encode()) % 3 == 0
    held = sorted(HELD_LIBRARIES & set(sources))
    model: dict = {
        "schema": 1,
        "measured": {
            "date": datetime.date.today().isoformat(),
            "cpu": cpu_name(),
            "cpus": os.cpu_count(),
            "ptxas": {major: _version(p) for major, p in sorted(tools.items())},
            "script": "scripts/measure_jit.py",
            "libraries": sources + ["fixtures"],
            "held_out": f"the libraries {', '.join(held)} and every third other PTX file",
        },
        "formula": "per PTX image: seconds = c + a * ptx_bytes ** b (user+sys of ptxas, one core; b = 1); "
        "cache_bytes likewise (the cubin ptxas writes); a is one rate for all families times the "
        "family's ratio to sm_90 on the same PTX (vs_sm_90)",
        "families": {},
    }
    train13 = [r for r in rows if r["ptxas"] == "13" and not r["held"]]
    fits = {key: pooled(train13, key) for key in ("seconds", "cubin_bytes")}
    for family in FAMILIES:
        fam = [r for r in rows if r["family"] == family and r["ptxas"] == "13"]
        train = [r for r in fam if not r["held"]]
        test = [r for r in fam if r["held"]]
        if len(train) < 3:
            continue
        entry: dict = {"sass": FAMILIES[family], "compiles": len(fam), "fitted_on": len(train)}
        for key, out in (("seconds", "seconds"), ("cubin_bytes", "cache_bytes")):
            f = fits[key][family]
            entry[out] = {**f, "held_out": ratios(lambda r, f=f: predict(f, r["bytes"]), test, key)}
            big = [r for r in test if r["bytes"] >= 64 << 10]
            entry[out]["held_out_over_64k"] = ratios(lambda r, f=f: predict(f, r["bytes"]), big, key)
            own = fit(train, key)  # the family's own fit, for comparison
            entry[out]["held_out_over_64k_own_fit"] = ratios(
                lambda r, f=own: predict(f, r["bytes"]), big, key
            )
            larger = [r for r in train if r["bytes"] >= 4 * TINY]
            if len(larger) >= 10:  # do entries, instructions, registers, .maxntid help? (on 64 KB+)
                entry[out]["held_out_over_64k_all_features"] = ratios(fit_rich(larger, key), big, key)
        old = [r for r in rows if r["family"] == family and r["ptxas"] == "12"]
        pairs = [(o, n) for o in old for n in fam if n["path"] == o["path"]]
        if pairs:
            entry["ptxas12_over_13"] = round(
                sum(o["seconds"] for o, _ in pairs) / sum(n["seconds"] for _, n in pairs), 3
            )
        entry["ptx_bytes_range"] = [min(r["bytes"] for r in fam), max(r["bytes"] for r in fam)]
        model["families"][family] = entry
    fams = model["families"]

    def err(f: str) -> str:
        over = fams[f]["seconds"]["held_out_over_64k"].get("median_factor")
        return f"{f} {fams[f]['seconds']['held_out'].get('median_factor')}x" + (
            f" ({over}x on images over 64 KB)" if over else ""
        )

    errs = ", ".join(map(err, fams))
    slower = ", ".join(f"{f} {e['ptxas12_over_13']}x" for f, e in fams.items() if "ptxas12_over_13" in e)
    model["note"] = (
        f"Fitted on {sum(e['fitted_on'] for e in fams.values())} ptxas {model['measured']['ptxas']['13']} "
        f"compiles of PTX from {len(sources)} corpus libraries and the fixtures; on PTX it was not "
        f"fitted on ({model['measured']['held_out']}) the seconds are off by a median factor of "
        f"{errs}; see held_out per family. ptxas is single-threaded, as is the driver's JIT of one "
        f"module; another CPU scales the seconds. ptxas {model['measured']['ptxas'].get('12', '12.x')} "
        f"takes {slower} as long as ptxas 13 on the same PTX."
    )
    MODEL.write_text(json.dumps(model, indent=2) + "\n")
    print(model["note"])


# issue 27's check: corpus libraries whose only code for B200 and RTX 5090 is compute_90 PTX
# (CUDA 11.8 builds: SASS up to sm_90); the model is never fitted on them (HELD_LIBRARIES)
VALIDATE = [
    ("cupy_cuda11x-*.whl", "cupy/random/_generator_api.cpython-311-x86_64-linux-gnu.so"),
    ("cupy_cuda11x-*.whl", "cupy/cuda/cub.cpython-311-x86_64-linux-gnu.so"),  # 25 MB of PTX (--big)
]
TARGETS = (("B200", "sm_100"), ("RTX 5090", "sm_120"))


def cuobjdumps() -> list[str]:
    """cuobjdump 13.x (CUOBJDUMP, PATH, the nvidia-cuda-cuobjdump wheel), then the 12.8 one in
    the triton wheel of the corpus: 13.x refuses any file holding sm_35 (cupy-cuda11x)."""
    out = [os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or ""]
    out += sorted(
        glob.glob(
            os.path.join(sys.prefix, "lib", "python3*", "site-packages", "nvidia", "*", "bin", "cuobjdump")
        )
    )
    wheel = next(iter(sorted(CORPUS.glob("triton-*.whl"))), None)
    if wheel is not None:
        import zipfile

        exe = WORK / "tools" / "cuobjdump-12.8"
        if not exe.exists():
            exe.parent.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(wheel) as z:
                exe.write_bytes(z.read("triton/backends/nvidia/bin/cuobjdump"))
            exe.chmod(0o755)
        out.append(str(exe))
    return [x for x in dict.fromkeys(out) if x]


def cuobjdump_ptx(lib: Path) -> dict[str, int] | None:
    """``cuobjdump -xptx all``: the PTX files it writes and their bytes, from the first cuobjdump
    that reads ``lib`` (None: none could)."""
    for exe in cuobjdumps():
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([exe, "-xptx", "all", str(lib)], cwd=tmp, capture_output=True)
            got = {p.name: p.stat().st_size for p in Path(tmp).glob("*.ptx")}
            if r.returncode == 0 and got:
                return got
    return None


def validate(args) -> None:
    """Engine vs ptxas (seconds, cubin bytes: 2x) and cuobjdump -xptx (PTX bytes: 1%)."""
    import zipfile

    sys.path.insert(0, str(ROOT))
    import fatbin_inspect as fi
    from fatbin_inspect.compat import jit

    tools = ptxas_tools()
    if "13" not in tools:
        raise SystemExit("needs ptxas 13 (see the docstring)")
    ok = True
    figures: dict[str, dict] = {}
    for pattern, member in VALIDATE[: None if args.big else 1]:
        wheel = next(iter(sorted(CORPUS.glob(pattern))), None)
        if wheel is None:
            raise SystemExit(f"needs {pattern} in {CORPUS} (scripts/fetch_corpus.sh)")
        lib = WORK / "validate" / Path(member).name
        lib.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as z:
            lib.write_bytes(z.read(member))
        cu = cuobjdump_ptx(lib)
        for gpu, sass in TARGETS:
            (v,) = fi.check(str(lib), gpus=[gpu])
            cost = jit.cost(v)
            if cost is None:
                raise SystemExit(f"{lib.name} on {gpu}: verdict {v.verdict}, nothing to JIT")
            chosen = sorted({f.chosen.arch for f in jit.jit_fatbins(v) if f.chosen is not None})
            out = WORK / "validate" / f"{lib.name}.{sass}"
            shutil.rmtree(out, ignore_errors=True)
            written = [w for arch in chosen for w in extract(str(lib), out, arch)]
            seconds = cubins = 0.0
            for w in written:
                got = run_ptxas(tools["13"], out / w["file"], sass)
                if got is None:
                    raise SystemExit(f"ptxas refused {w['file']}")
                seconds += got[0]
                cubins += got[1]
            line = (
                f"{Path(member).name} on {gpu} ({sass}): {cost.images} PTX image(s) {', '.join(chosen)}; "
                f"estimate_s {cost.estimate_s:.1f} vs ptxas {tools_version(tools)} {seconds:.1f} s user+sys "
                f"= {cost.estimate_s / seconds:.2f}x; cache_bytes {cost.cache_bytes:,} vs cubins "
                f"{int(cubins):,} = {cost.cache_bytes / cubins:.2f}x"
            )
            ok &= 0.5 <= cost.estimate_s / seconds <= 2 and 0.5 <= cost.cache_bytes / cubins <= 2
            if cu is not None:  # cuobjdump names compute_XY PTX sm_XY
                want = [".sm_" + a.split("_", 1)[1] + ".ptx" for a in chosen]
                total = sum(n for name, n in cu.items() if any(name.endswith(w) for w in want))
                line += f"; ptx_bytes {cost.ptx_bytes:,} vs cuobjdump -xptx {total:,} = {cost.ptx_bytes / total:.4f}x"
                ok &= abs(cost.ptx_bytes / total - 1) <= 0.01
            else:
                total = 0
            print(line, flush=True)
            figures[f"{Path(member).name} on {gpu}"] = {
                "sass": sass,
                "estimate_s": cost.estimate_s,
                "ptxas_s": round(seconds, 2),
                "cache_bytes": cost.cache_bytes,
                "cubin_bytes": int(cubins),
                "ptx_bytes": cost.ptx_bytes,
                "cuobjdump_ptx_bytes": total if cu is not None else None,
            }
    model = json.loads(MODEL.read_text())  # the figures go next to the fit they checked
    model["validated"] = {
        "what": "scripts/measure_jit.py --validate: libraries never fitted on, whose only code for the "
        "target is compute_90 PTX; estimate vs ptxas 13 user+sys on this CPU",
        "date": datetime.date.today().isoformat(),
        "cpu": cpu_name(),
        "results": {**model.get("validated", {}).get("results", {}), **figures},
    }
    MODEL.write_text(json.dumps(model, indent=2) + "\n")
    print("within the bounds (2x, 1%)" if ok else "OUTSIDE the bounds")
    raise SystemExit(0 if ok else 1)


def tools_version(tools: dict[str, str]) -> str:
    return _version(tools["13"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=50.0, help="ptxas CPU seconds per family")
    ap.add_argument("--per-source", type=int, default=10, help="PTX files per library at most")
    ap.add_argument("--validate", action="store_true", help="issue 27's check instead of a fit")
    ap.add_argument("--refit", action="store_true", help="fit the last run's compiles again (no ptxas)")
    ap.add_argument("--big", action="store_true", help="--validate also cupy's cub (25 MB of PTX, minutes)")
    args = ap.parse_args()
    if args.validate:
        validate(args)
    elif args.refit:  # the compiles of the last run, fitted again
        fit_model(json.loads((WORK / "measurements.json").read_text()), ptxas_tools())
    else:
        measure(args)


if __name__ == "__main__":
    main()
