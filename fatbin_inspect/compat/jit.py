"""What a JIT costs (docs/compatibility.md R-JIT-COST): the host CPU seconds the driver spends
compiling the PTX it picks, and the SASS its JIT cache must then hold.

Pure: a ``FileVerdict`` in, numbers out, with the constants of ``data/jit_model.json``. Each
counted fatbin that loads PTX keeps the image R-SEL chose: its size after decompression and, when
``check`` read that PTX (``judging.ptx_shapes``), its counts (``formats.ptx.shape``).
The model was fitted by ``scripts/measure_jit.py`` on NVIDIA's ptxas (the compiler the driver's
JIT embeds) over real PTX of 14 libraries, left out one library at a time (its errors are in the
data): seconds grow with instructions, not bytes (a kernel with long mangled parameter names
has more bytes per instruction), and faster than linearly with the size of one function (ptxas
optimises a function as a whole), so a module of many small kernels costs less than one of few
large ones; where only entry headers were read (``scan``, ``gate``) the bytes stand in. The driver compiles one module (fatbin) at a time, on one thread, so the
seconds add up over images.

The cache (R-JIT-ENV, [S3 §5.2.2]): ``CUDA_CACHE_DISABLE=1`` keeps nothing, and a cache smaller
than the SASS it must hold (``CUDA_CACHE_MAXSIZE``: default 1 GiB, 256 MiB on embedded
(Tegra) platforms, at most 4 GiB) evicts what it cannot hold: then the compilation repeats at
every start of the program instead of once per driver version.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from fatbin_inspect.compat import data
from fatbin_inspect.compat.verdict import FatbinVerdict, FileVerdict
from fatbin_inspect.errors import UsageError
from fatbin_inspect.formats.model import KIND_PTX, PtxShape

CACHE_DEFAULT = 1 << 30  # CUDA_CACHE_MAXSIZE default, desktop and server [S3 §5.2.2]
CACHE_DEFAULT_EMBEDDED = 256 << 20  # embedded (Tegra) platforms
CACHE_MAX = 4 << 30  # the largest CUDA_CACHE_MAXSIZE the driver honours
_TRUE = ("1", "true", "yes", "on")
_STACK_RULES = ("R-DRV", "R-GPU", "R-FWD")  # the file never gets as far as loading a module


@dataclass(frozen=True)
class CacheSettings:
    """The deployment's JIT cache, from ``--env`` (or this machine's environment, for doctor)."""

    disabled: bool = False  # CUDA_CACHE_DISABLE=1
    maxsize: int | None = None  # CUDA_CACHE_MAXSIZE in bytes; None: the driver's default
    path: str | None = None  # CUDA_CACHE_PATH; None: the default folder

    def limit(self, embedded: bool = False) -> int:
        """The bytes the cache holds: the given size (capped at 4 GiB), else the default."""
        if self.maxsize is not None:
            return min(self.maxsize, CACHE_MAX)
        return CACHE_DEFAULT_EMBEDDED if embedded else CACHE_DEFAULT


DEFAULT_CACHE = CacheSettings()


def cache_settings(env: Mapping[str, str]) -> CacheSettings:
    """``CUDA_CACHE_DISABLE``, ``CUDA_CACHE_MAXSIZE`` (bytes, a plain integer as the driver reads
    it) and ``CUDA_CACHE_PATH`` of an environment; a size that is not a number is a usage error
    naming the variable."""
    raw = env.get("CUDA_CACHE_MAXSIZE")
    size = None
    if raw is not None and raw.strip():
        text = raw.strip()
        if not text.isdigit() or len(text) > 20:
            raise UsageError(f"CUDA_CACHE_MAXSIZE={raw!r}: expected a size in bytes, e.g. 4294967296")
        size = int(text)
    disabled = (env.get("CUDA_CACHE_DISABLE") or "").strip().lower() in _TRUE
    return CacheSettings(disabled, size, env.get("CUDA_CACHE_PATH") or None)


@dataclass(frozen=True)
class JitCost:
    """The JIT of one file (or the sum over a distribution's files) on one target."""

    ptx_bytes: int  # PTX text the driver compiles: the chosen images only, uncompressed
    images: int  # PTX images compiled (one per fatbin that loads PTX)
    estimate_s: float  # host CPU seconds of that compilation (one core)
    cache_bytes: int  # SASS the JIT cache must hold afterwards
    family: str  # the model family the target was estimated with ("sm_120")
    forced: bool = False  # CUDA_FORCE_PTX_JIT=1 made the driver ignore the cubins
    cache_limit: int = CACHE_DEFAULT  # bytes the deployment's cache holds
    cache_disabled: bool = False  # CUDA_CACHE_DISABLE=1

    @property
    def repeats(self) -> str | None:
        """Why the compilation is paid at every start, not once: None when the cache keeps it."""
        if self.cache_disabled:
            return "CUDA_CACHE_DISABLE=1: nothing is cached"
        if self.cache_bytes > self.cache_limit:
            return (
                f"the JIT cache ({size_text(self.cache_limit, binary=True)}) is smaller than "
                f"the {size_text(self.cache_bytes)} it must hold"
            )
        return None


@cache
def model() -> dict:
    return data.load("jit_model")


def family_of(cc: tuple[int, int]) -> str:
    """The measured family nearest below the target (sm_86 -> sm_80, sm_121 -> sm_120); a target
    older than every family takes the oldest."""
    fams = sorted(model()["families"], key=lambda f: int(f[3:]))
    sm = cc[0] * 10 + cc[1]
    below = [f for f in fams if int(f[3:]) <= sm]
    return below[-1] if below else fams[0]


def _power(row: Mapping[str, Any], counts: Mapping[str, int]) -> float:
    """``c + a * prod(count ** exponent)`` of one row of the model."""
    return row["c"] + row["a"] * math.prod(max(counts[k], 1) ** e for k, e in row["exponents"].items())


def per_image(size: int, family: str, shape: PtxShape | None = None) -> tuple[float, float]:
    """(seconds, cache bytes) of compiling one PTX image, times the family's scale: from the
    counts of its PTX when known (``shape``), else from its ``size`` in bytes."""
    m = model()
    scale = m["families"][family]
    name, counts = ("shape", dataclasses.asdict(shape)) if shape is not None else ("bytes", {"bytes": size})
    return (
        _power(m["seconds"][name], counts) * scale["seconds"],
        _power(m["cache_bytes"][name], counts) * scale["cache_bytes"],
    )


def jit_fatbins(v: FileVerdict) -> list[FatbinVerdict]:
    """The counted fatbins whose chosen image is PTX: the modules the driver compiles."""
    if v.verdict not in ("jit", "fail") or v.rule in _STACK_RULES:
        return []
    return [
        f
        for f in v.fatbins
        if f.ignored is None and f.verdict == "jit" and f.chosen is not None and f.chosen.kind == KIND_PTX
    ]


def cost(v: FileVerdict, settings: CacheSettings = DEFAULT_CACHE) -> JitCost | None:
    """The JIT of ``v`` (None: the driver compiles nothing for this file on its target)."""
    fbs = jit_fatbins(v)
    if not fbs:
        return None
    family = family_of(v.target.cc)
    seconds = cache_bytes = 0.0
    ptx = 0
    for f in fbs:
        chosen = f.chosen
        assert chosen is not None  # (jit_fatbins keeps only fatbins with a chosen PTX image)
        size = chosen.size if chosen.size is not None else 0
        s, c = per_image(size, family, chosen.shape)
        ptx += size
        seconds += s
        cache_bytes += c
    return JitCost(
        ptx_bytes=ptx,
        images=len(fbs),
        estimate_s=round(seconds, 3),
        cache_bytes=int(cache_bytes),
        family=family,
        forced=v.target.force_ptx_jit,
        cache_limit=settings.limit(v.target.gpu.tegra),
        cache_disabled=settings.disabled,
    )


def total(costs: Iterable[JitCost]) -> JitCost | None:
    """The sum over several files on one target (a distribution of a scan; the cache is shared)."""
    cs = list(costs)
    if not cs:
        return None
    return JitCost(
        ptx_bytes=sum(c.ptx_bytes for c in cs),
        images=sum(c.images for c in cs),
        estimate_s=round(sum(c.estimate_s for c in cs), 3),
        cache_bytes=sum(c.cache_bytes for c in cs),
        family=cs[0].family,
        forced=any(c.forced for c in cs),
        cache_limit=cs[0].cache_limit,
        cache_disabled=cs[0].cache_disabled,
    )


def seconds_text(s: float) -> str:
    """'~25 s', '~4 min', '~1.5 h': an estimate, so two digits at most."""
    if s < 1:
        return "under 1 s"
    if s < 90:
        return f"~{s:.0f} s"
    if s < 90 * 60:
        return f"~{s / 60:.0f} min"
    return f"~{s / 3600:.1f} h"


def size_text(n: float, binary: bool = False) -> str:
    """'8 MB', '1.2 GB', '640 KB' (decimal units, as an estimate deserves); ``binary``: '1 GiB',
    '256 MiB' (cache limits, which NVIDIA gives in powers of two)."""
    units = (
        (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))
        if binary
        else (("GB", 1e9), ("MB", 1e6), ("KB", 1e3))
    )
    for unit, scale in units:
        if n >= scale:
            v = n / scale
            return f"{v:.1f} {unit}" if v < 10 else f"{v:.0f} {unit}"
    return f"{int(n)} B"


def phrase(c: JitCost) -> str:
    """The table's one phrase: 'jit: ~25 s of compilation, 8 MB of cache' and, when the cache
    cannot keep it, at every start."""
    return f"jit: {cost_text(c)}"


def cost_text(c: JitCost) -> str:
    """The phrase without its 'jit: ' (where the line already says jit)."""
    images = "1 PTX image" if c.images == 1 else f"{c.images} PTX images"
    text = f"{seconds_text(c.estimate_s)} of compilation, {size_text(c.cache_bytes)} of cache ({images})"
    why = c.repeats
    return f"{text}; repeated at every start: {why}" if why else text


def measured() -> str:
    """Where the constants come from: 'ptxas 13.0.88 on AMD EPYC, 2026-12-07'."""
    m = model()["measured"]
    return f"ptxas {m['ptxas']} on {m['cpu']}, {m['date']}"
