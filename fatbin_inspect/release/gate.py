"""The release gate: inventory records + a policy -> findings, through the compatibility engine. Pure.

Each required arch becomes a target (a GPU of that compute capability, on the policy's minimum
driver or the newest one) and every fatbin of a file is judged by ``compat.engine``: a library is
one fatbin per translation unit, and one TU built without ``sm_120`` breaks its kernels on an RTX
5090 although the file as a whole "has sm_120". Fatbins the engine ignores (device-link output,
``__nv_relfatbin`` copies next to a linked ``.nv_fatbin``) do not count. ``--gpu`` targets are
judged the same way; FBI005 (arch-specific only) applies to required archs, not to named GPUs.
Here: the artifacts' collection, their variants and alternates, and the findings' grading; the
targets in ``requirements``, the rules in ``gate_rules``, ``--match torch`` in ``torch_match``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fatbin_inspect.compat import describe, engine, rules, units, verdict
from fatbin_inspect.compat import runtime as runtime_mod
from fatbin_inspect.compat.runtime import RuntimeNeed
from fatbin_inspect.compat.targets import NOT_PROBED, LocalDevices, Target, resolve_driver
from fatbin_inspect.formats.model import Fatbin, FileReport
from fatbin_inspect.inventory import member_path
from fatbin_inspect.release.findings import Check, Finding, FindingsReport, sort_key
from fatbin_inspect.release.gate_rules import (
    Emitter,
    check_driver_numbering,
    check_file_wide,
    check_requirement,
    check_runtime,
    check_torch_runtime,
)
from fatbin_inspect.release.policy import Policy, distribution_of
from fatbin_inspect.release.requirements import FILE_WIDE, Requirement, counted_fatbins, requirements
from fatbin_inspect.release.torch_match import is_torch, reference_archs


# --------------------------------------------------------------------------------- the gate
@dataclass(frozen=True)
class Context:
    """What the library layer read besides the records: runtimes from wheel metadata (R-RT 4),
    each record's runtime as ``judging.verdicts.runtime_of`` found it (R-RT 1-5: the one judging
    path; a record not in it falls back to ``runtime.for_file``), inputs that name CUDA (wheel
    name or requirements), and torch's CUDA runtime for ``--match torch``."""

    wheel_runtimes: Mapping[str, RuntimeNeed] = dataclasses.field(default_factory=dict)
    cuda_named: frozenset[str] = frozenset()
    torch_runtime: RuntimeNeed | None = None
    runtimes: Mapping[str, RuntimeNeed | None] = dataclasses.field(default_factory=dict)


@dataclass
class _Artifact:
    report: FileReport
    policy: Policy
    emit: Emitter
    fatbins: list[Fatbin]
    runtime: RuntimeNeed | None
    reqs: tuple[Requirement, ...] = ()
    verdicts: dict[str, verdict.FileVerdict] = dataclasses.field(default_factory=dict)


def gate(
    reports: Iterable[FileReport],
    policy: Policy,
    flags: Mapping[str, Any] | None = None,
    reference: FileReport | None = None,
    fleet: Sequence[Target] = (),
    local: LocalDevices = NOT_PROBED,
    context: Context = Context(),
) -> FindingsReport:
    """Findings for every artifact. ``flags`` are reapplied after per-distribution overrides;
    ``reference`` is torch's libtorch_cuda.so for ``--match torch`` (its archs become FBI009
    requirements, and torch's own files are not checked); ``fleet``: resolved ``--targets``, each
    judged on its own driver like a named GPU; ``local``: the probed GPUs and driver for ``auto``
    (``system.stack.local_devices``). Steps: collect the artifacts, judge each file on each
    requirement (R-FILE), set aside files made for other GPUs per distribution (R-UNIT), emit."""
    ref_archs = reference_archs(reference) if reference is not None else ()
    fleet_reqs = tuple(Requirement(t.label, t, None) for t in fleet)
    labels: list[str] = [
        r.label
        for r in requirements(policy.require, policy.gpus, policy.min_driver, ref_archs, local) + fleet_reqs
    ]
    reports = list(reports)
    arts, inputs, ignored = _collect(reports, policy, flags, reference, context)
    checks: list[Check] = []
    for art in arts:
        if art.fatbins:
            _judge_artifact(art, ref_archs, local, fleet_reqs)
    aside = _unit_set_aside(arts)
    alternates = _alternates(arts, context, local)
    findings: list[Finding] = []
    for art in arts:
        _emit_artifact(art, aside, local, context, reference)
        art.emit.out = [_as_alternate(f, alternates) for f in art.emit.out]
        checks.append(Check(art.report.path, FILE_WIDE, art.emit.dist))
        for req in art.reqs:
            checks.append(Check(art.report.path, req.label, art.emit.dist))
            labels.append(req.label)
        findings += art.emit.out
    findings += _nothing_to_check(reports, arts, ignored, policy, context)
    return FindingsReport(
        "gate",
        tuple(sorted(findings, key=sort_key)),
        tuple(checks),
        tuple(dict.fromkeys(labels)),
        tuple(inputs),
        judged=tuple((label, v) for art in arts for label, v in art.verdicts.items()),
    )


def _judge_artifact(
    art: _Artifact, ref_archs: tuple[str, ...], local: LocalDevices, fleet_reqs: tuple[Requirement, ...]
) -> None:
    """The artifact's requirements (its policy's, then the fleet's) and its verdict on each."""
    art.reqs = requirements(art.policy.require, art.policy.gpus, art.policy.min_driver, ref_archs, local)
    art.reqs += fleet_reqs
    art.verdicts = {r.label: engine.evaluate(art.report, r.target, stack=False) for r in art.reqs}


def _collect(
    reports: Iterable[FileReport],
    policy: Policy,
    flags: Mapping[str, Any] | None,
    reference: FileReport | None,
    context: Context,
) -> tuple[list[_Artifact], list[str], int]:
    arts: list[_Artifact] = []
    inputs: list[str] = []
    ignored = 0
    for report in reports:
        if not member_path.is_member(report.path):
            inputs.append(report.path)
        pol = policy.for_artifact(report.path, distribution_of(report), flags)
        if pol.ignored(report.path) or (reference is not None and is_torch(report, reference)):
            ignored += 1
            continue
        fatbins = counted_fatbins(report)
        if not fatbins and report.error is None:
            continue
        emit = Emitter(report, pol)
        if report.path in context.runtimes:
            rt = context.runtimes[report.path]
        else:
            rt = runtime_mod.for_file(report, context.wheel_runtimes.get(member_path.container(report.path)))
        arts.append(_Artifact(report, pol, emit, fatbins, rt))
    return arts, inputs, ignored


def _unit_set_aside(arts: Sequence[_Artifact]) -> set[tuple[str, str]]:
    """(path, requirement label) of files made only for other GPUs while another file of the same
    distribution runs there (R-UNIT). Loose files in a folder are release artifacts in their own
    right here (scan rows do treat a folder as a unit): a gate flags a Hopper-only executable."""
    out = set()
    for (_, label), members in _by_unit_and_label(arts).items():
        pairs = [(a.report.path, a.verdicts[label]) for a in _not_variants(members)]
        if len(pairs) >= 2 and any(v.verdict != "fail" or v.coverage == "partial" for _, v in pairs):
            out |= {(p, label) for p in units.set_aside(pairs)}
    return out


def _not_variants(members: Sequence[_Artifact]) -> list[_Artifact]:
    """The members that are no alternative build of another (those are R-VARIANT's: one of them
    is judged), not files set aside."""
    alone = {p for ps in units.variant_sets([a.report.path for a in members]) if len(ps) == 1 for p in ps}
    return [a for a in members if a.report.path in alone]


def _by_unit_and_label(arts: Sequence[_Artifact]) -> dict[tuple[str | None, str], list[_Artifact]]:
    """The artifacts of each distribution judged on each requirement label."""
    groups: dict[tuple[str | None, str], list[_Artifact]] = {}
    for art in arts:
        if art.emit.dist is None:
            continue
        for label in art.verdicts:
            groups.setdefault((art.emit.dist, label), []).append(art)
    return groups


def _alternates(
    arts: Sequence[_Artifact], context: Context, local: LocalDevices
) -> dict[tuple[str, str | None], str]:
    """R-VARIANT: within a distribution, alternative builds (``…_cuda126.so``/``…_cuda130.so``)
    count as one. For each requirement (and for the minimum driver's runtime check, label None)
    the variant the package would load — torch's CUDA with ``--match torch``, else the best — is
    judged; the others' findings there become notes. Maps (path, label) to the picked variant."""
    out: dict[tuple[str, str | None], str] = {}
    by_dist: dict[str, list[_Artifact]] = {}
    for a in arts:
        if a.emit.dist and a.verdicts:
            by_dist.setdefault(a.emit.dist, []).append(a)
    torch = units.parse_runtime(context.torch_runtime.version) if context.torch_runtime else None
    for members in by_dist.values():
        index = {a.report.path: a for a in members}
        for paths in units.variant_sets(list(index)):
            if len(paths) >= 2:
                out.update(_picked_variants(paths, index, torch))
                out.update(_runtime_alternates([index[p] for p in paths], local))
    return out


def _picked_variants(
    paths: Sequence[str], index: Mapping[str, _Artifact], torch: tuple[int, ...] | None
) -> dict[tuple[str, str | None], str]:
    """For each label all ``paths`` were judged on: the variant picked, for the others."""
    out: dict[tuple[str, str | None], str] = {}
    for label in index[paths[0]].verdicts:
        if all(label in index[p].verdicts for p in paths):
            picked, _ = units.pick_variant([(p, index[p].verdicts[label]) for p in paths], torch)
            out.update({(p, label): picked for p in paths if p != picked})
    return out


def _runtime_alternates(
    variants: Sequence[_Artifact], local: LocalDevices
) -> dict[tuple[str, str | None], str]:
    """Variants whose runtime the minimum driver cannot serve, when another variant's it can."""
    pol = variants[0].policy
    if not pol.min_driver or not variants[0].reqs:
        return {}
    target = dataclasses.replace(
        variants[0].reqs[0].target, driver=resolve_driver(pol.min_driver, local.driver)
    )
    ok = [a for a in variants if rules.driver_for_runtime(a.runtime, target).ok]
    if not ok:
        return {}
    ok_paths = {a.report.path for a in ok}
    return {(a.report.path, None): ok[-1].report.path for a in variants if a.report.path not in ok_paths}


def _as_alternate(f: Finding, alternates: dict[tuple[str, str | None], str]) -> Finding:
    picked = alternates.get((f.path, f.target))
    if (
        picked is None
        or f.severity == "note"
        or f.rule_id not in ("FBI001", "FBI002", "FBI003", "FBI004", "FBI016")
    ):
        return f
    name = picked.rsplit("!", 1)[-1].rsplit("/", 1)[-1]
    return dataclasses.replace(
        f,
        severity="note",
        message=f"{f.message} (an alternative build: {name} is the one loaded there, R-VARIANT)",
    )


def _emit_artifact(
    art: _Artifact,
    aside: set[tuple[str, str]],
    local: LocalDevices,
    context: Context,
    reference: FileReport | None,
) -> None:
    emit, report, pol = art.emit, art.report, art.policy
    if report.error is not None:
        emit("FBI008", "error", report.error.message, FILE_WIDE, None, report.error.offset)
    if not art.fatbins:
        return
    check_file_wide(emit, art.fatbins, pol)
    if art.reqs and pol.min_driver:
        target = dataclasses.replace(art.reqs[0].target, driver=resolve_driver(pol.min_driver, local.driver))
        check_runtime(emit, art.runtime, target)
        if art.runtime is None and report.format in engine.HOST_FORMATS:
            emit("FBI019", "warning", describe.RUNTIME_UNKNOWN, FILE_WIDE)
    if reference is not None:
        check_torch_runtime(emit, art.runtime, context.torch_runtime)
    for req in art.reqs:
        check_requirement(emit, art.verdicts[req.label], req, (report.path, req.label) in aside, art.fatbins)
        check_driver_numbering(emit, report, req)


def _nothing_to_check(
    reports: Sequence[FileReport], arts: Sequence[_Artifact], ignored: int, policy: Policy, context: Context
) -> list[Finding]:
    """FBI015: no artifact with device code, everything ignored, or a CUDA-named wheel without device code."""
    out = []
    with_code = {member_path.outermost(a.report.path) for a in arts if a.fatbins}
    for path in sorted(context.cuda_named - with_code):
        out.append(
            Finding(
                "FBI015", "error", "names CUDA in its name or requirements but holds no device code", path
            )
        )
    if not arts:
        why = (
            f"every artifact with device code was ignored ({ignored})"
            if ignored
            else "no artifact with device code was found in the inputs"
        )
        out.append(
            Finding("FBI015", "error", why, member_path.outermost(reports[0].path) if reports else ".")
        )
    return [
        dataclasses.replace(f, severity=sev)
        for f in out
        if (sev := policy.grade(f.rule_id, f.severity)) is not None
    ]
