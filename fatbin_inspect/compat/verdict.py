"""The verdict records the engine returns (``compat.engine``) and the small predicates over them
that R-FILE and R-UNIT share.

A file's verdict is not its worst fatbin (docs/compatibility.md §4, R-FILE): a failing fatbin made
only for other GPUs ("specialised elsewhere", kinds ``KINDS``) is set aside; any other failing
fatbin is a *gap* and fails the file. ``FatbinVerdict`` keeps the fatbin offset and the chosen
entry (with its offset), and each ``EntryVerdict`` says whether that one image alone would load,
so ``verify`` can compare these predictions with real driver loads. Sentences about them are
``compat.describe``'s; decisions are ``compat.engine``'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from fatbin_inspect.compat import data
from fatbin_inspect.compat.data import CC
from fatbin_inspect.compat.runtime import RuntimeNeed
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.formats.model import PtxShape

SEVERITY = {"no-device-code": 0, "link-time": 0, "native": 1, "jit": 2, "fail": 3}
KINDS = {
    "i": "code for a higher compute capability",
    "ii": "architecture-, family- or Tegra-specific code for other GPUs",
    "iii": "code for an older generation that a general cubin of the unit replaces here",
}


@dataclass(frozen=True)
class ErrorRef:
    code: int
    name: str  # runtime API name, e.g. cudaErrorNoKernelImageForDevice


@dataclass(frozen=True)
class Chosen:
    arch: str  # sm_86, compute_90
    kind: str  # sass | ptx
    ptx_isa: str | None
    offset: int | None = None  # entry header offset (per-fatbin choice)
    size: int | None = None  # the image's bytes after decompression (per-fatbin choice; compat.jit)
    shape: PtxShape | None = None  # what its PTX holds, when check read it (judging.ptx_shapes)


class EntryVerdict(NamedTuple):
    """What one image alone would give (a named tuple, not a dataclass: ``check`` makes one per
    entry per target, 17,000 for libtorch_cuda.so on 5 GPUs, at a third of the cost)."""

    offset: int
    arch: str
    verdict: str  # native | jit | fail: what this image alone would give
    rule: str
    reason: str
    error: ErrorRef | None


@dataclass(frozen=True)
class Decision:
    """What a fatbin or a whole file gives on one target."""

    verdict: str  # native | jit | fail | no-device-code | link-time
    error: ErrorRef | None
    chosen: Chosen | None
    rule: str  # the deciding rule
    rules: tuple[str, ...]  # every rule that took part, deciding rule first
    reason: str
    confidence: str
    missing_kernels: tuple[str, ...]  # kernels other images have that the loaded one lacks


@dataclass(frozen=True)
class FatbinVerdict(Decision):
    offset: int
    section: str | None
    ignored: str | None  # why this fatbin does not count, or None
    entries: tuple[EntryVerdict, ...]
    # a failing fatbin made for other GPUs: the kinds (i/ii/iii) of its images; () = loads, or a gap
    elsewhere: tuple[str, ...] = ()
    general_native: bool = False  # loads a cubin natively that is not architecture-specific
    archs: tuple[str, ...] = ()  # the archs of its SASS and PTX images
    kernels: tuple[str, ...] | None = None  # every kernel of its images (None: not decoded)
    specialised: bool = False  # set by the file: failing, and specialised elsewhere (else a gap)
    narrow: bool = False  # every image is for one architecture number (sm_100 + compute_100)
    generation: bool = False  # holds code for the target's major, minor at most the target's


@dataclass(frozen=True)
class FatbinGroup:
    """Failing fatbins of one file on one target that share a fate: specialised elsewhere, or gaps."""

    count: int
    archs: tuple[tuple[str, int], ...]  # (arch, fatbins holding it), most frequent first
    kinds: tuple[tuple[str, int], ...] = ()  # (i | ii | iii, fatbins) for specialised ones
    kernels: tuple[str, ...] | None = None  # kernels only there (None: payloads not decoded)
    error: ErrorRef | None = None  # what a launch of one of them gives (209 wins)


@dataclass(frozen=True)
class FileVerdict(Decision):
    path: str
    target: Target
    counts: dict[str, int]  # native / jit / fail fatbins (ignored ones not counted)
    fatbins: tuple[FatbinVerdict, ...]
    runtime: RuntimeNeed | None
    notes: tuple[str, ...] = ()
    advice: tuple[str, ...] = ()
    coverage: str = "full"  # full | partial | none (R-FILE)
    specialised: FatbinGroup | None = None  # failing fatbins set aside: made for other GPUs
    gaps: FatbinGroup | None = None  # failing fatbins that fail the file
    kernels_analysed: bool = False  # kernel names were decoded (--kernels)
    link_archs: tuple[str, ...] = ()  # link-time inputs: the archs they can link code for
    # R-HOST: what the device code gives on a host that can load the file (None: the host fits)
    device: FileVerdict | None = None

    @property
    def elsewhere(self) -> bool:
        """Nothing loads and every counted fatbin is made for other GPUs, before the unit's guards."""
        counted = [f for f in self.fatbins if counts_toward(f)]
        return (
            self.verdict == "fail"
            and self.rule not in ("R-DRV", "R-GPU")
            and bool(counted)
            and all(f.verdict == "fail" and f.elsewhere for f in counted)
        )

    def set_aside_in(self, unit_general: bool, unit_reach: CC | None) -> bool:
        """R-UNIT: nothing loads and every counted fatbin is specialised elsewhere in a unit (a
        distribution) where another file loads a general cubin natively (``unit_general``) and
        some file targets the GPU's generation, reaching ``unit_reach``: ``specialised_in``."""
        return self.elsewhere and all(
            specialised_in(f, unit_general, unit_reach) for f in self.fatbins if counts_toward(f)
        )


# R-UNIT's reach: another file of a distribution that targets the generation vouches for a broad
# file whatever its own code reaches (a separate build for older GPUs is the distribution's choice;
# a static component's older code inside one file is not the library's)
ANY_REACH: CC = (999, 9)


def error_ref(code: int | None) -> ErrorRef | None:
    if code is None:
        return None
    row = data.error_by_number(code)
    return ErrorRef(code, row["runtime_api_name"] if row else f"error {code}")


def counts_toward(v: FatbinVerdict) -> bool:
    """The fatbin can make a launch fail: not ignored, and with device code."""
    return v.ignored is None and v.verdict != "no-device-code"


def specialised_in(v: FatbinVerdict, unit_general: bool, unit_reach: CC | None) -> bool:
    """A failing fatbin is specialised elsewhere when each image is (i), (ii) or (iii), with two
    guards from the unit (file, or distribution): (iii) only while the unit loads a general cubin
    natively on the target (``unit_general``); (i) only while the fatbin is narrow, one
    architecture number, or the unit targets the target's generation with code that reaches the
    fatbin's oldest architecture (``unit_reach``: ``generation_reach``, or ``ANY_REACH``).
    docs/compatibility.md §4: broad code for newer GPUs in a build that dropped the generation is
    a gap, and so it is when only older code (a statically linked component's sm_75 and sm_80
    beside the library's own sm_86 to sm_120) still targets the generation."""
    return (
        bool(v.elsewhere)
        and ("iii" not in v.elsewhere or unit_general)
        and ("i" not in v.elsewhere or v.narrow or (unit_reach is not None and unit_reach >= oldest(v)))
    )


def generation_reach(fatbins: Sequence[FatbinVerdict]) -> CC | None:
    """The newest architecture of the counted fatbins that hold code built for the target's major
    (``sm_X*`` or ``compute_X*``, minor at most the target's); None: the unit targets the
    target's generation nowhere (guard of (i))."""
    return max((newest(v) for v in fatbins if v.generation and counts_toward(v)), default=None)


def newest(v: FatbinVerdict) -> CC:
    """The highest compute capability a fatbin's SASS and PTX images are built for."""
    return max((arch_cc(a) for a in v.archs), default=(0, 0))


def oldest(v: FatbinVerdict) -> CC:
    """The lowest compute capability a fatbin's SASS and PTX images are built for."""
    return min((arch_cc(a) for a in v.archs), default=(0, 0))


@cache  # called for every fatbin of a file on every target (``generation_reach``): few distinct names
def arch_cc(arch: str) -> CC:
    """``sm_86`` -> (8, 6), ``compute_100`` and ``sm_100a`` -> (10, 0)."""
    n = _arch_number(arch.partition("_")[2])
    return n // 10, n % 10


def arch_key(arch: str) -> tuple[bool, int, str]:
    """Sort key of an arch name: SASS before PTX, then by number (sm_90 < sm_100 < sm_100a)."""
    head, _, tail = arch.partition("_")
    return (head != "sm", _arch_number(tail), tail)


def _arch_number(tail: str) -> int:
    """The number of an arch name's part after ``_``: ``100a`` -> 100 (0: none)."""
    return int("".join(ch for ch in tail if ch.isdigit()) or 0)


def arch_counts(vs: Sequence[FatbinVerdict]) -> tuple[tuple[str, int], ...]:
    """(arch, fatbins holding it), most frequent first."""
    archs = Counter(a for v in vs for a in v.archs)
    return tuple(sorted(archs.items(), key=lambda kv: (-kv[1], arch_key(kv[0]))))
