"""``check`` verdicts -> plain dicts: the JSON contract of ``check.schema.json`` (schema_version 1).

The names of the issue's contract (targets: gpu/cc/tegra/driver/driver_cuda/max_ptx_isa; results:
path/target/verdict/error/chosen/rule/reason/fatbins) are fixed; fields are only ever added.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fatbin_inspect.compat.describe import coverage_line, device_line
from fatbin_inspect.compat.jit import DEFAULT_CACHE, CacheSettings, JitCost, cost, measured, phrase
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.compat.verdict import (
    Chosen,
    EntryVerdict,
    ErrorRef,
    FatbinGroup,
    FatbinVerdict,
    FileVerdict,
)
from fatbin_inspect.formats.records import as_dict
from fatbin_inspect.render.jsondump import SCHEMA_VERSION, tool

MISSING_KERNELS_LISTED = 200  # names listed per result; the count is always complete


def target_dict(t: Target) -> dict[str, Any]:
    return {
        "gpu": t.gpu.name,
        "cc": f"{t.cc[0]}.{t.cc[1]}",
        "tegra": t.gpu.tegra,
        "driver": t.driver.version,
        "driver_cuda": t.driver.cuda,
        "max_ptx_isa": t.driver.max_ptx_isa,
        "driver_branch": t.driver.branch,
        "driver_assumed": t.driver.assumed,
        "architecture": t.gpu.architecture,
        "matched": list(t.gpu.matched),
        "confidence": t.gpu.confidence,
        "env": {"CUDA_FORCE_PTX_JIT": t.force_ptx_jit, "CUDA_DISABLE_PTX_JIT": t.disable_ptx_jit},
        "hosts": list(t.hosts),
        "host_arch": t.host_arch,
        "driver_platform": t.driver.platform,
        "compat": None
        if t.compat is None
        else {"package": t.compat.package, "cuda": t.compat.cuda, "branch": t.compat.driver.branch},
    }


def error_dict(e: ErrorRef | None) -> dict[str, Any] | None:
    return None if e is None else as_dict(e)


def chosen_dict(c: Chosen | None) -> dict[str, Any] | None:
    """The image chosen; its offset only where one fatbin chose it (a file's choice has none), its
    size and PTX shape (for ``compat.jit``) not written."""
    if c is None:
        return None
    return as_dict(c, omit=("size", "shape") if c.offset is not None else ("offset", "size", "shape"))


def entry_verdict_dict(e: EntryVerdict) -> dict[str, Any]:
    return as_dict(e, convert={"error": error_dict})


def fatbin_verdict_dict(v: FatbinVerdict) -> dict[str, Any]:
    return {
        "offset": v.offset,
        "section": v.section,
        "verdict": v.verdict,
        "error": error_dict(v.error),
        "chosen": chosen_dict(v.chosen),
        "rule": v.rule,
        "rules": list(v.rules),
        "reason": v.reason,
        "confidence": v.confidence,
        "ignored": v.ignored,
        "specialised": v.specialised,
        "elsewhere": list(v.elsewhere),
        "archs": list(v.archs),
        "missing_kernels": list(v.missing_kernels),
        "entries": [entry_verdict_dict(e) for e in v.entries],
    }


def group_dict(g: FatbinGroup | None) -> dict[str, Any] | None:
    """Specialised fatbins or gaps: counts by arch and kind; kernels only there when decoded."""
    if g is None:
        return None
    return {
        "count": g.count,
        "archs": dict(g.archs),
        "kinds": dict(g.kinds),
        "error": error_dict(g.error),
        "kernels_count": None if g.kernels is None else len(g.kernels),
        "kernels": None if g.kernels is None else list(g.kernels[:MISSING_KERNELS_LISTED]),
    }


def jit_dict(c: JitCost | None) -> dict[str, Any] | None:
    """R-JIT-COST: what the driver's JIT costs (None: nothing is compiled)."""
    if c is None:
        return None
    return as_dict(c, extra={"repeats": c.repeats, "summary": phrase(c), "model": measured()})


def result_dict(
    v: FileVerdict, target_index: int, per_fatbin: bool = False, cache: CacheSettings = DEFAULT_CACHE
) -> dict[str, Any]:
    """One result; ``cache``: the deployment's JIT cache (``--env CUDA_CACHE_*``)."""
    d: dict[str, Any] = {
        "path": v.path,
        "target": target_index,
        "verdict": v.verdict,
        "error": error_dict(v.error),
        "chosen": chosen_dict(v.chosen),
        "rule": v.rule,
        "reason": v.reason,
        "fatbins": dict(v.counts),
        "rules": list(v.rules),
        "confidence": v.confidence,
        "runtime_known": v.runtime is not None,
        "runtime": None
        if v.runtime is None
        else {"version": v.runtime.version, "source": v.runtime.source, "confidence": v.runtime.confidence},
        "missing_kernels_count": len(v.missing_kernels),
        "missing_kernels": list(v.missing_kernels[:MISSING_KERNELS_LISTED]),
        "notes": list(v.notes),
        "advice": list(v.advice),
        "coverage": v.coverage,
        "coverage_summary": coverage_line(v),
        "specialised": group_dict(v.specialised),
        "gaps": group_dict(v.gaps),
        "kernels_analysed": v.kernels_analysed,
        "link_archs": list(v.link_archs),
        "jit": jit_dict(cost(v, cache)),
    }
    if v.device is not None:
        d["device"] = device_dict(v.device)
    if per_fatbin:
        d["fatbin_verdicts"] = [fatbin_verdict_dict(f) for f in v.fatbins]
    return d


def device_dict(d: FileVerdict) -> dict[str, Any]:
    """R-HOST's device answer: what the file's device code gives on a host that can load it."""
    return {
        "verdict": d.verdict,
        "error": error_dict(d.error),
        "chosen": chosen_dict(d.chosen),
        "rule": d.rule,
        "rules": list(d.rules),
        "reason": d.reason,
        "confidence": d.confidence,
        "fatbins": dict(d.counts),
        "coverage": d.coverage,
        "coverage_summary": coverage_line(d),
        "specialised": group_dict(d.specialised),
        "gaps": group_dict(d.gaps),
        "notes": list(d.notes),
        "summary": device_line(d),
    }


def check_document(
    targets: Sequence[Target],
    verdicts: Sequence[FileVerdict],
    per_fatbin: bool = False,
    errors: Sequence[dict[str, Any]] = (),
    cache: CacheSettings = DEFAULT_CACHE,
) -> dict[str, Any]:
    index = {t: i for i, t in enumerate(targets)}
    results: list[dict[str, Any]] = [result_dict(v, index[v.target], per_fatbin, cache) for v in verdicts]
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": tool(),
        "targets": [target_dict(t) for t in targets],
        "results": results,
        "errors": list(errors),
    }
