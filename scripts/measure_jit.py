#!/usr/bin/env python3
"""Measure NVIDIA's ptxas on real PTX and fit the JIT cost model of ``data/jit_model.json``.

The driver's JIT is the same compiler as ``ptxas`` and runs on the host CPU, so its cost can be
measured without a GPU. PTX is taken from the corpus wheels of 14 libraries (``SOURCES``;
``scripts/fetch_corpus.sh``) with the project's own extractor (``fatbin-inspect extract --kind
ptx``) and counted with the project's own ``formats.ptx.shape`` (what ``check`` counts in the PTX
it would compile). Per library, ``--per-library`` images (default 10) are sampled at evenly spaced
ranks of their instruction count, among images of 50 to 100,000 instructions (larger ones take
minutes each on a shared machine); each is compiled once by ptxas (``--ptxas``, default
``/usr/local/bin/ptxas``, 13.0) for sm_120 (sm_121 for compute_121 PTX), and the child's CPU time
(user + sys from ``os.wait4``, not wall time: the machine is shared) and cubin bytes are written
to ``tests/data/jit_measurements.csv`` with the counts. PTX whose ``.version`` is newer than that
ptxas is compiled with its ``.version`` lowered to the newest it knows (flag ``isa``; none of it
used instructions the older ISA lacks, or ptxas would refuse it). PTX of relocatable device code
(``.visible``/``.weak``/``.extern .func``, or an unresolved extern function or variable) is compiled
with ``-c`` (flag ``-c``): the runtime JIT-links such modules, each compiled whole, where a
whole-program compile would drop every function no kernel of the module calls.

The fit (``--fit``, no ptxas needed: it reads the CSV) is per image ``seconds = c + a * x ** b``
with ``x`` the instruction count (``check``, which reads the PTX it would compile) or the
uncompressed bytes (``scan`` and ``gate``, which read entry headers only), ``c`` the median of
images under 1,000 instructions, ``a`` and ``b`` least squares on logs over the larger ones; the
same for the cubin bytes the JIT cache must hold. It is validated leave-one-library-out: fitted on
13 libraries, the 14th's sampled images predicted and summed, ``predicted / measured`` per library
(the issue's goal: within 2x for every library left out), beside the previous model's ratio on the
same images. Other families (sm_80, sm_90, sm_100) scale the sm_120 fit by their ratio on the same
PTX, measured with ptxas 13.5.37 on 2026-12-01 (``FAMILY_SCALE``).

    python scripts/measure_jit.py                 # extract, sample, compile, fit (resumes the CSV)
    python scripts/measure_jit.py --fit           # fit the CSV again -> data/jit_model.json
    python scripts/measure_jit.py --validate      # issue 27's check on a PTX-only corpus library
    python scripts/measure_jit.py --validate --big

``--validate`` judges cupy-cuda11x's ``_generator_api`` (``--big``: and ``cub``; CUDA 11.8 builds:
compute_90 PTX, no SASS past sm_90) and ctranslate2 4.8.5's library (compute_86 PTX, SASS up to
sm_86) on a B200 and an RTX 5090 with ``check``'s own path, then
compiles exactly the PTX the engine chose with ptxas and compares ``estimate_s`` and
``cache_bytes`` with what ptxas took and wrote (2x is the issue's bound), and ``ptx_bytes`` with
what ``cuobjdump -xptx`` extracts for that arch (1%).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import glob
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fatbin_inspect.formats.model import PtxShape  # noqa: E402  (the checkout's package)
from fatbin_inspect.formats.ptx import shape  # noqa: E402

CORPUS = Path(os.environ.get("FATBIN_INSPECT_CORPUS", ROOT / ".cache" / "corpus"))
WORK = Path(os.environ.get("FATBIN_INSPECT_JIT_WORK", ROOT / ".cache" / "jit-ptx"))  # extracted PTX
MODEL = ROOT / "fatbin_inspect" / "data" / "jit_model.json"
CSV = ROOT / "tests" / "data" / "jit_measurements.csv"
PTXAS = "/usr/local/bin/ptxas"

# PTX sources: (wheel glob in the corpus, library name)
SOURCES = [
    ("bitsandbytes-0.50.2-*.whl", "bitsandbytes"),
    ("ctranslate2-4.8.5-*.whl", "ctranslate2"),
    ("nvidia_cublas_cu12-*.whl", "cublas-cu12"),
    ("nvidia_cufft-*.whl", "cufft"),
    ("cupy_cuda11x-*.whl", "cupy-cuda11x"),
    ("cupy_cuda12x-*.whl", "cupy-cuda12x"),
    ("nvidia_curand-*.whl", "curand"),
    ("jax_cuda12_plugin-*.whl", "jax-cuda12-plugin"),
    ("nvidia_nccl_cu13-*.whl", "nccl"),
    ("nvidia_nvshmem_cu13-*.whl", "nvshmem"),
    ("onnxruntime_gpu-*.whl", "onnxruntime-gpu"),
    ("spconv_cu120-*.whl", "spconv"),
    ("torchvision-*.whl", "torchvision"),
    ("xformers-*.whl", "xformers"),
]
MIN_INSTRUCTIONS, MAX_INSTRUCTIONS = 50, 100_000  # sampled images; larger ones take minutes each
SMALL = 1_000  # images of this many instructions and more give the exponents
TINY = 200  # images under this many give the floor c (what any module costs: ~0.02 s, ~11 KB)
SASS = "sm_120"  # the family measured; compute_121 PTX is compiled for sm_121 (same family)
# The other families against sm_120 on the same PTX (seconds, cubin bytes): the totals of the
# 2026-12-01 run (ptxas 13.5.37, 2 cores of an AMD EPYC), each family's vs_sm_90 over sm_120's.
FAMILY_SCALE = {
    "sm_80": (0.813, 0.757),
    "sm_90": (0.936, 0.752),
    "sm_100": (0.861, 0.962),
    "sm_120": (1.0, 1.0),
}
# The model before issue 56 (sm_120 row of data/jit_model.json schema 1): seconds = c + a * bytes
OLD_SECONDS = (0.03, 3.38466e-06)
EXTRA = ("branches", "calls", "registers")  # counted here, not by the package: they did not help
FIELDS = [
    "library",
    "image",
    "target",
    "sass",
    "flags",
    *PtxShape.__dataclass_fields__,
    *EXTRA,
    "seconds",
    "cubin_bytes",
]
_TARGET = re.compile(rb"^[ \t]*\.target\s+(\w+)", re.M)
_VERSION = re.compile(rb"^([ \t]*\.version\s+)(\d+\.\d+)", re.M)
_REGS = re.compile(rb"\.reg\s[^<;\n]*<(\d{1,7})>")
_LINKED = re.compile(rb"^[ \t]*\.(?:visible|weak|extern)[ \t]+\.func", re.M)


class Image(NamedTuple):
    library: str
    path: Path
    target: str
    shape: PtxShape
    extra: dict[str, int]  # EXTRA's counts


def extra_counts(text: bytes) -> dict[str, int]:
    """Counts measured beside ``PtxShape``'s: ``bra`` and ``call`` opcodes (after a blank), and
    the virtual registers ``.reg`` declares. A fit with either beside the instructions did no
    better left out one library at a time (2.20x, 2.32x worst against 2.23x for instructions
    alone, the largest function's 1.88x: 2026-12-07)."""
    text = text.split(b"\0", 1)[0]

    def opcode(word: bytes) -> int:
        return sum(text.count(blank + word) for blank in (b" ", b"\t", b"\n"))

    return {
        "branches": opcode(b"bra"),
        "calls": opcode(b"call"),
        "registers": sum(int(n) for n in _REGS.findall(text)),
    }


class Power(NamedTuple):
    """``y = c + a * x1 ** e1 * x2 ** e2 ...`` over the named counts of an image."""

    c: float
    a: float
    exponents: dict[str, float]  # count (a column of the CSV) -> its exponent

    def __call__(self, row: dict) -> float:
        return self.c + self.a * math.prod(max(row[k], 1) ** e for k, e in self.exponents.items())

    def as_json(self) -> dict:
        return {"c": self.c, "a": self.a, "exponents": self.exponents}


# The counts each model reads: from the PTX (check), from the entry header's size (scan, gate)
MODELS = {"shape": ("instructions", "largest"), "bytes": ("bytes",)}
CACHE_MODELS = {"shape": ("instructions",), "bytes": ("bytes",)}


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def ptxas_version(ptxas: str) -> str:
    out = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else "?"


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


def images() -> list[Image]:
    """Every PTX image of every source in the corpus (extracted once into .cache/jit-ptx)."""
    found = []
    for pattern, name in SOURCES:
        out = WORK / name
        if not any(out.glob("*.ptx")):
            wheel = next(iter(sorted(CORPUS.glob(pattern))), None)
            if wheel is None:
                print(f"{name}: no {pattern} in {CORPUS} (scripts/fetch_corpus.sh)", file=sys.stderr)
                continue
            extract(str(wheel), out)
        for p in sorted(out.glob("*.ptx")):
            text = p.read_bytes()
            t = _TARGET.search(text)
            found.append(Image(name, p, t.group(1).decode() if t else "", shape(text), extra_counts(text)))
    return found


def sample(found: Iterable[Image], per_library: int) -> list[Image]:
    """Per library, ``per_library`` images at evenly spaced ranks of their instruction count
    (all when fewer), among those of MIN..MAX instructions whose PTX sm_120/121 can compile."""
    by: dict[str, list[Image]] = {}
    for im in found:
        m = re.fullmatch(r"sm_(\d+)", im.target)
        if m and int(m.group(1)) <= 121 and MIN_INSTRUCTIONS <= im.shape.instructions <= MAX_INSTRUCTIONS:
            by.setdefault(im.library, []).append(im)
    picked = []
    for ims in by.values():
        ims.sort(key=lambda im: (im.shape.instructions, im.path.name))
        n = len(ims)
        picked += (
            ims
            if n <= per_library
            else [ims[round(i * (n - 1) / (per_library - 1))] for i in range(per_library)]
        )
    return picked


class Compile(NamedTuple):
    seconds: float  # user + sys of the ptxas child
    cubin_bytes: int
    flags: str


def _run(ptxas: str, ptx: Path, sass: str, extra: list[str]) -> tuple[float, int | None, str]:
    """One ptxas run: (CPU seconds of the child, cubin bytes or None, stderr)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.cubin"
        proc = subprocess.Popen(
            [ptxas, f"-arch={sass}", *extra, str(ptx), "-o", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        err = proc.stderr.read().decode("utf-8", "replace")
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait
        ok = proc.returncode == 0 and out.exists()
        return usage.ru_utime + usage.ru_stime, out.stat().st_size if ok else None, err


def relocatable(path: Path) -> bool:
    """PTX of relocatable device code (``-rdc``): it declares functions other modules see."""
    return _LINKED.search(path.read_bytes()) is not None


def compile_once(ptxas: str, im: Image) -> Compile | None:
    """ptxas on one image (``-c`` for relocatable code), with the fallbacks of the docstring; None
    when it still refuses."""
    sass = "sm_121" if im.target == "sm_121" else SASS
    path, flags, extra = im.path, [], []
    if relocatable(im.path):
        flags, extra = ["-c"], ["-c"]
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(3):
            seconds, size, err = _run(ptxas, path, sass, extra)
            if size is not None:
                return Compile(round(seconds, 3), size, " ".join(flags))
            newest = re.search(r"current version is '(\d+\.\d+)'", err)
            if newest and "isa" not in flags:
                lowered = Path(tmp) / im.path.name
                lowered.write_bytes(
                    _VERSION.sub(rb"\g<1>" + newest.group(1).encode(), path.read_bytes(), count=1)
                )
                path, flags = lowered, [*flags, "isa"]
            elif "Unresolved extern" in err and "-c" not in extra:
                extra, flags = ["-c"], [*flags, "-c"]
            else:
                print(f"  ptxas refused {im.path.name}: {err.strip()[:160]}", file=sys.stderr)
                return None
    return None


def read_csv(path: Path = CSV) -> list[dict]:
    """The measurements: one row per compiled image, numbers as numbers."""
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k in (*PtxShape.__dataclass_fields__, *EXTRA, "cubin_bytes"):
            r[k] = int(r.get(k) or 0)  # (a count the CSV does not have yet: measure() adds it)
        r["seconds"] = float(r["seconds"])
    return rows


def measure(args: argparse.Namespace) -> None:
    if not shutil.which(args.ptxas):
        raise SystemExit(f"no ptxas at {args.ptxas} (--ptxas)")
    picked = sample(images(), args.per_library)
    by_name = {(im.library, im.path.name): im for im in picked}
    rows = [
        r
        for r in read_csv()
        if (r["library"], r["image"]) in by_name  # only the sample's, relocatable code compiled with -c
        and ("-c" in r["flags"].split() or not relocatable(WORK / r["library"] / r["image"]))
    ]
    for r in rows:  # the counts are the package's of today (a counting change needs no ptxas run)
        im = by_name[(r["library"], r["image"])]
        r.update(dataclasses.asdict(im.shape), **im.extra)
    done = {(r["library"], r["image"]) for r in rows}
    todo = [im for im in picked if (im.library, im.path.name) not in done]
    todo.sort(key=lambda im: im.shape.instructions)
    print(f"{len(rows)} compiles in {CSV.name}, {len(todo)} to run", flush=True)
    for im in todo:
        got = compile_once(args.ptxas, im)
        if got is None:
            continue
        row = {
            "library": im.library,
            "image": im.path.name,
            "target": im.target,
            "sass": "sm_121" if im.target == "sm_121" else SASS,
            "flags": got.flags,
            **dataclasses.asdict(im.shape),
            **im.extra,
            "seconds": got.seconds,
            "cubin_bytes": got.cubin_bytes,
        }
        rows.append(row)
        print(
            f"{im.library:18} {im.shape.instructions:7} instructions {got.seconds:7.2f} s {got.flags}",
            flush=True,
        )
        write_csv(rows)  # after each compile: an interrupted run resumes
    write_csv(rows)
    fit_model(rows, args.ptxas)


def write_csv(rows: list[dict]) -> None:
    rows = sorted(rows, key=lambda r: (r["library"], r["instructions"], r["image"]))
    CSV.parent.mkdir(parents=True, exist_ok=True)
    with CSV.open("w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows({k: r[k] for k in FIELDS} for r in rows)


def fit_power(rows: list[dict], features: tuple[str, ...], key: str) -> Power:
    """``key = c + a * prod(feature ** e)`` over ``rows``: ``c`` the median of the images under
    TINY instructions, ``log a`` and the exponents least squares on logs over those of SMALL and more (their
    ``key - c``), ``a`` then scaled by the mean of the residuals' exponentials (Duan's smearing:
    a fit on logs predicts the geometric mean, and a library's cost is a sum)."""
    small = sorted(r[key] for r in rows if r["instructions"] < TINY)
    c = small[len(small) // 2] if small else 0.0
    big = [
        ([1.0, *(math.log(max(r[f], 1)) for f in features)], math.log(r[key] - c))
        for r in rows
        if r["instructions"] >= SMALL and r[key] > c
    ]
    if len(big) <= len(features) + 2:
        raise SystemExit(f"too few images of {SMALL}+ instructions to fit {key} on {features}")
    coef = _least_squares([x for x, _ in big], [y for _, y in big])
    smear = sum(math.exp(y - sum(k * v for k, v in zip(coef, x))) for x, y in big) / len(big)
    exps = {f: _g(e) for f, e in zip(features, coef[1:])}
    return Power(_g(c), _g(math.exp(coef[0]) * smear), exps)


def _least_squares(xs: list[list[float]], ys: list[float]) -> list[float]:
    """The coefficients minimising the squared error of ``x . coef`` against ``y`` (the normal
    equations, solved by Gaussian elimination: a few columns, no numpy needed)."""
    n = len(xs[0])
    m = [
        [sum(x[i] * x[j] for x in xs) for j in range(n)] + [sum(x[i] * y for x, y in zip(xs, ys))]
        for i in range(n)
    ]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [a - f * b for a, b in zip(m[r], m[col])]
    return [m[i][n] / m[i][i] for i in range(n)]


def _g(x: float) -> float:
    return float(f"{x:.6g}")


def by_library(rows: list[dict], predict: Callable[[dict], float], key: str = "seconds") -> dict[str, float]:
    """Per library: the sum of the predictions over its images / the sum measured."""
    out = {}
    for lib in sorted({r["library"] for r in rows}):
        mine = [r for r in rows if r["library"] == lib]
        out[lib] = round(sum(predict(r) for r in mine) / sum(r[key] for r in mine), 3)
    return out


def leave_one_out(rows: list[dict], features: tuple[str, ...], key: str = "seconds") -> dict[str, float]:
    """Per library: fitted on the other libraries, its predicted / measured sum."""
    out = {}
    for lib in sorted({r["library"] for r in rows}):
        f = fit_power([r for r in rows if r["library"] != lib], features, key)
        out.update(by_library([r for r in rows if r["library"] == lib], f, key))
    return out


def worst(ratios: dict[str, float]) -> float:
    """The largest factor off, either way."""
    return max(max(v, 1 / v) for v in ratios.values())


def fit_model(rows: list[dict], ptxas: str | None) -> dict:
    """The fit of ``rows`` (the CSV) with its leave-one-library-out errors, into data/jit_model.json."""
    libs = sorted({r["library"] for r in rows})
    old = {"schema": 1}
    if MODEL.exists():
        old = json.loads(MODEL.read_text())
    measured = old.get("measured", {}) if old.get("schema") == 2 and ptxas is None else {}
    model: dict = {
        "schema": 2,
        "measured": {
            "date": measured.get("date") or datetime.date.today().isoformat(),
            "cpu": measured.get("cpu") or cpu_name(),
            "cpus": measured.get("cpus") or os.cpu_count(),
            "ptxas": measured.get("ptxas") or (ptxas_version(ptxas) if ptxas else "?"),
            "sass": SASS,
            "script": "scripts/measure_jit.py",
            "data": "tests/data/jit_measurements.csv",
            "libraries": libs,
            "compiles": len(rows),
            "sample": f"per library up to 10 PTX images at evenly spaced ranks of their instruction count, "
            f"{MIN_INSTRUCTIONS}-{MAX_INSTRUCTIONS} instructions; CPU seconds (user+sys) of the ptxas child",
        },
        "formula": "per PTX image: y = c + a * prod(count ** exponent) over the exponents' counts: "
        "'shape' where check read the PTX (formats.ptx.shape: seconds from instructions and the largest "
        "function's, cache bytes from instructions), 'bytes' where only the entry header's size is known "
        "(scan, gate); seconds are ptxas's user+sys on one core, cache_bytes the cubin it writes; times "
        "the family's scale (families: seconds, cache_bytes against sm_120 on the same PTX)",
        "families": {f: {"seconds": s, "cache_bytes": c} for f, (s, c) in FAMILY_SCALE.items()},
    }
    model["seconds"] = {name: fit_power(rows, fs, "seconds").as_json() for name, fs in MODELS.items()}
    model["cache_bytes"] = {
        name: fit_power(rows, fs, "cubin_bytes").as_json() for name, fs in CACHE_MODELS.items()
    }
    lolo = {name: leave_one_out(rows, fs) for name, fs in MODELS.items()}
    lolo["old_model"] = by_library(rows, lambda r: OLD_SECONDS[0] + OLD_SECONDS[1] * r["bytes"])
    model["leave_one_library_out"] = {
        "what": "seconds: sum predicted / sum measured over the library's sampled images, fitted on the "
        "other libraries (old_model: the schema 1 model's sm_120 row, bytes only, on the same images)",
        **lolo,
    }
    model["note"] = (
        f"Fitted on {len(rows)} ptxas {model['measured']['ptxas']} compiles ({SASS}) of PTX from {len(libs)} "
        f"libraries; left out one library at a time, the estimate of that library's seconds is off by "
        f"at most {worst(lolo['shape']):.2f}x from the PTX's counts "
        f"({worst(lolo['bytes']):.2f}x from bytes alone; the previous model {worst(lolo['old_model']):.2f}x). "
        f"ptxas is single-threaded, as is the driver's JIT of one module; another CPU scales the seconds."
    )
    MODEL.write_text(json.dumps(model, indent=2) + "\n")
    for name, ratios in lolo.items():
        print(f"{name:13} worst {worst(ratios):.2f}x  " + " ".join(f"{k}={v}" for k, v in ratios.items()))
    return model


# issue 27's check: corpus libraries whose only code for B200 and RTX 5090 is compute_90 PTX
# (CUDA 11.8 builds: SASS up to sm_90); cupy-cuda11x is one of the fit's libraries since issue 56
VALIDATE = [
    ("cupy_cuda11x-*.whl", "cupy/random/_generator_api.cpython-311-x86_64-linux-gnu.so"),
    # an inference library, every PTX image (compute_86; issue 56's 3.4x): 34 images, 13 MB
    ("ctranslate2-4.8.5-*.whl", "ctranslate2.libs/libctranslate2-a7a60d30.so.4.8.5"),
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


def validate(args: argparse.Namespace) -> None:
    """Engine vs ptxas (seconds, cubin bytes: 2x) and cuobjdump -xptx (PTX bytes: 1%)."""
    import zipfile

    import fatbin_inspect as fi
    from fatbin_inspect.compat import jit

    if not shutil.which(args.ptxas):
        raise SystemExit(f"no ptxas at {args.ptxas} (--ptxas)")
    version = ptxas_version(args.ptxas)
    ok = True
    figures: dict[str, dict] = {}
    for pattern, member in VALIDATE[: None if args.big else 2]:
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
                got, size, err = _run(args.ptxas, out / w["file"], sass, [])
                if size is None:
                    raise SystemExit(f"ptxas refused {w['file']}: {err.strip()[:160]}")
                seconds += got
                cubins += size
            line = (
                f"{Path(member).name} on {gpu} ({sass}): {cost.images} PTX image(s) {', '.join(chosen)}; "
                f"estimate_s {cost.estimate_s:.1f} vs ptxas {version} {seconds:.1f} s user+sys "
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
        "what": "scripts/measure_jit.py --validate: a library whose only code for the target is "
        "compute_90 PTX, judged by check's path (instruction counts); estimate vs ptxas user+sys on this CPU",
        "date": datetime.date.today().isoformat(),
        "cpu": cpu_name(),
        "results": {**model.get("validated", {}).get("results", {}), **figures},
    }
    MODEL.write_text(json.dumps(model, indent=2) + "\n")
    print("within the bounds (2x, 1%)" if ok else "OUTSIDE the bounds")
    raise SystemExit(0 if ok else 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[1])
    ap.add_argument("--per-library", type=int, default=10, help="PTX images sampled per library")
    ap.add_argument("--ptxas", default=PTXAS, help="the ptxas measured (default: %(default)s)")
    ap.add_argument("--fit", action="store_true", help="fit tests/data/jit_measurements.csv again (no ptxas)")
    ap.add_argument("--validate", action="store_true", help="issue 27's check instead of a fit")
    ap.add_argument("--big", action="store_true", help="--validate also cupy's cub (25 MB of PTX, minutes)")
    args = ap.parse_args()
    if args.validate:
        validate(args)
    elif args.fit:
        fit_model(read_csv(), None)
    else:
        measure(args)


if __name__ == "__main__":
    main()
