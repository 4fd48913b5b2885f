"""``explain``: from an error number, name or pasted log text to the condition, the rule and the fix.

Matching order: a bare number (current, or the pre-CUDA-10.1 runtime number), an API name
(``cudaErrorNoKernelImageForDevice``, ``CUDA_ERROR_NO_BINARY_FOR_GPU``), then text: API names,
error strings, the topics of errors.json that are no error (TensorFlow's "CUDA kernels will be
jit-compiled from PTX, which could take 30 minutes or longer", JIT cache questions: R-JIT-COST,
whose explanation has no number) and framework wordings found anywhere in what the user pasted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from fatbin_inspect.compat import data

# What a user should look at, per rule family (ids of errors.json ``signals_rule``).
CHECKS: dict[str, tuple[str, ...]] = {
    "R-SASS": (
        "Which GPU runs it: nvidia-smi --query-gpu=name,compute_cap --format=csv",
        "Which cubins and PTX the binary carries: fatbin-inspect PATH",
        "A cubin runs only on its own major with an equal or higher minor; sm_XYa only on X.Y; "
        "Jetson/Tegra only on its exact SM",
        "Which release of a pip package still runs on this GPU, before installing it: "
        "fatbin-inspect releases NAME --gpu '<your GPU>' --driver <your driver> (newest native, newest through JIT)",
    ),
    "R-PTX-TARGET": (
        "Whether the binary carries PTX at all, and for which compute_XY: fatbin-inspect PATH",
        "PTX compiles only for its own CC or higher; compute_XYa only for X.Y",
    ),
    "R-PTX-ISA": (
        "The PTX ISA (.version) in the binary: fatbin-inspect PATH (column PTX ISA)",
        "The driver: nvidia-smi (the 'CUDA Version' it prints bounds the PTX ISA its JIT knows)",
        "Ship a cubin for the GPU, or upgrade the driver",
    ),
    "R-JIT-ENV": ("Whether CUDA_DISABLE_PTX_JIT / CUDA_DISABLE_JIT is set in the environment",),
    "R-DRV": (
        "The runtime the program needs (libcudart.so.N in ldd / the nvidia-cuda-runtime wheel)",
        "The driver: nvidia-smi; 11.x needs >= 450.80.02, 12.x >= 525.60.13, 13.x >= 580",
    ),
    "R-MVC": ("Which API was called; it is newer than the installed driver (minor-version compatibility)",),
    "R-FWD": (
        "Whether a cuda-compat package is first in LD_LIBRARY_PATH or ld.so.conf.d (fatbin-inspect doctor)",
        "Whether the GPU accepts forward compatibility: data center GPUs, select NGC Server Ready RTX "
        "SKUs and Jetson only (804 otherwise)",
        "Whether NVIDIA's forward-compatibility table marks the package compatible (C) with the kernel "
        "driver's branch; on Jetson, with the JetPack release (803 otherwise)",
    ),
    "R-JIT-COST": (
        "What the JIT costs for your GPU: fatbin-inspect check PATH --gpu '<your GPU>' prints 'jit: ~N s of "
        "compilation, M MB of cache'; --format json gives jit.estimate_s (host CPU seconds), jit.ptx_bytes "
        "and jit.cache_bytes (the SASS the cache must hold)",
        "This machine's JIT cache: fatbin-inspect doctor (CUDA_CACHE_DISABLE, whether CUDA_CACHE_PATH or "
        "~/.nv/ComputeCache is writable, CUDA_CACHE_MAXSIZE: default 1 GiB, 256 MiB on embedded platforms, at most 4 GiB)",
        "Whether it repeats at every start: check --env CUDA_CACHE_MAXSIZE=<bytes> or --env CUDA_CACHE_DISABLE=1 "
        "says so when the cache cannot keep the compiled code",
    ),
    "R-GPU": (
        "Whether the driver branch supports the GPU (new GPUs need new branches; Kepler ends at R470, "
        "Maxwell/Pascal/Volta at R580)",
        "CUDA_VISIBLE_DEVICES",
    ),
}
COMMANDS: dict[str, str] = {
    "R-SASS": "fatbin-inspect check PATH --gpu '<your GPU>' --driver <your driver>",
    "R-PTX-TARGET": "fatbin-inspect check PATH --gpu '<your GPU>' --driver <your driver>",
    "R-PTX-ISA": "fatbin-inspect check PATH --gpu '<your GPU>' --driver <your driver version>",
    "R-JIT-ENV": "fatbin-inspect check PATH --gpu '<your GPU>' --env CUDA_DISABLE_PTX_JIT=1",
    "R-DRV": "fatbin-inspect check PATH --gpu '<your GPU>' --driver <your driver version>",
    "R-GPU": "fatbin-inspect check PATH --gpu '<your GPU>' --driver <your driver version>",
    "R-FWD": "fatbin-inspect check PATH --gpu '<your GPU>' --driver <kernel driver> --compat <package CUDA>",
    "R-JIT-COST": "fatbin-inspect check PATH --gpu '<your GPU>' --env CUDA_CACHE_MAXSIZE=<bytes> --format json",
}
# Framework wordings that do not contain the CUDA string itself.
PHRASES: tuple[tuple[str, int], ...] = (
    ("driver on your system is too old", 35),
    ("is not compatible with the current pytorch installation", 209),
    ("no kernel image is available", 209),
    ("unsupported toolchain", 222),
)


@dataclass(frozen=True)
class Explanation:
    number: int | None  # None: a topic that is no error (R-JIT-COST)
    runtime_name: str | None
    driver_name: str | None
    message: str
    meaning: str
    signals: str  # errors.json signals_rule text
    rules: tuple[str, ...]  # rule ids named there
    phase: str
    checks: tuple[str, ...]
    command: str | None
    legacy_number: int | None = None
    matched_as: str = ""
    title: str | None = None  # a topic's title (number None)


def explain(query: str) -> Explanation | None:
    row, how = _find(query.strip())
    if row is None:
        return None
    rules = tuple(dict.fromkeys(re.findall(r"R-[A-Z]+(?:-[A-Z]+)*", row.get("signals_rule", ""))))
    if "title" in row:  # a topic: R-JIT-COST first (its checks and command)
        rules = tuple(sorted(rules, key=lambda r: r != "R-JIT-COST"))
    checks: list[str] = []
    command = None
    if row.get("fix"):
        checks.append(f"What to do: {row['fix']}")
    for r in rules:
        checks += CHECKS.get(r, ())
        command = command or COMMANDS.get(r)
    if "R-JIT-COST" in rules:
        from fatbin_inspect.compat import jit

        checks.append(f"How good the estimate is ({jit.measured()}): {jit.model()['note']}")
    return Explanation(
        row.get("number"),
        row.get("runtime_api_name"),
        row.get("driver_api_name"),
        row.get("runtime_error_string", ""),
        row.get("meaning", ""),
        row.get("signals_rule", ""),
        rules,
        row.get("typical_phase", ""),
        tuple(dict.fromkeys(checks)),
        command,
        row.get("legacy_runtime_number"),
        how,
        row.get("title"),
    )


_Hit = tuple[dict[str, Any] | None, str]  # the error row (None: not found) and how it was found


def _find(q: str) -> _Hit:
    """The error row a query names and how it was found: a number, then (in the text) an API
    name, a runtime message, a topic's phrase, one of ``PHRASES``, an error number."""
    if re.fullmatch(r"-?\d+", q):
        return _by_number(int(q))
    low = q.lower()
    for find in (_by_api_name, _by_message, _by_topic, _by_phrase, _by_number_in_text):
        hit, how = find(low)
        if how:
            return hit, how
    return None, ""


def _by_number(n: int) -> _Hit:
    hit = data.error_by_number(n)
    if hit:
        return hit, f"error number {n}"
    legacy = next((r for r in data.errors() if r.get("legacy_runtime_number") == n), None)
    return (legacy, f"pre-CUDA-10.1 runtime number {n}") if legacy else (None, "")


def _by_api_name(low: str) -> _Hit:
    for r in data.errors():
        for key in ("runtime_api_name", "driver_api_name"):
            if r.get(key) and r[key].lower() in low:
                return r, f"name {r[key]}"
    return None, ""


def _by_message(low: str) -> _Hit:
    """The longest runtime error string the text contains (error 0's excepted)."""
    best = max(
        (r for r in data.errors() if r.get("runtime_error_string") and r["number"] != 0 and _says(r, low)),
        key=lambda r: len(r["runtime_error_string"]),
        default=None,
    )
    return (best, f"message '{best['runtime_error_string']}'") if best else (None, "")


def _says(row: dict, low: str) -> bool:
    return row["runtime_error_string"].lower().rstrip(".") in low


def _by_topic(low: str) -> _Hit:
    for topic in data.load("errors").get("topics", ()):
        hit = next((p for p in topic["phrases"] if p in low), None)
        if hit:
            return {**topic, "runtime_error_string": topic["message"]}, f"phrase '{hit}'"
    return None, ""


def _by_phrase(low: str) -> _Hit:
    for phrase, n in PHRASES:
        if phrase in low:
            return data.error_by_number(n), f"phrase '{phrase}'"
    return None, ""


def _by_number_in_text(low: str) -> _Hit:
    m = re.search(r"\b(?:error|code|err)\D{0,3}(\d{1,3})\b", low)
    if m and data.error_by_number(int(m.group(1))):
        return data.error_by_number(int(m.group(1))), f"error number {m.group(1)} in the text"
    return None, ""
