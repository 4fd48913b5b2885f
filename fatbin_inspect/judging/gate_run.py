"""The gate run: records of the inputs, their context, and the findings under a policy."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from fatbin_inspect.errors import UsageError
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.judging.needs import Needs
from fatbin_inspect.judging.torch import torch_reference

if TYPE_CHECKING:
    from fatbin_inspect.compat.runtime import RuntimeNeed
    from fatbin_inspect.compat.targets import Target
    from fatbin_inspect.formats.model import FileReport
    from fatbin_inspect.release.findings import FindingsReport
    from fatbin_inspect.release.gate import Context
    from fatbin_inspect.release.policy import Policy
    from fatbin_inspect.system.stack import LocalDevices

CUDA_NAMED = re.compile(r"(?i)(cuda|[_-]cu\d{2,3}\b|^nvidia[_-])")  # a wheel whose name says CUDA


class GateRun(NamedTuple):
    report: FindingsReport  # the findings, ``config`` naming the policy file
    reports: list[FileReport]  # every record read
    fail_on: str  # the policy's level: a finding at or above it fails the gate


def gate_context(
    paths: Sequence[str], reports: Sequence[FileReport], reference: FileReport | None
) -> Context:
    """What the gate needs besides the records: wheel requirements as runtimes (R-RT 4), the
    inputs that name CUDA (FBI015 when they hold no device code), torch's runtime (FBI017)."""
    from fatbin_inspect.compat import runtime
    from fatbin_inspect.inventory import member_path
    from fatbin_inspect.judging.verdicts import WheelRuntimes, runtime_of
    from fatbin_inspect.release.gate import Context

    wheels = {member_path.container(r.path) for r in reports} | {p for p in paths if os.path.isfile(p)}
    wheel_rts, named = _wheel_runtimes(sorted(wheels))
    torch_rt = runtime.for_file(reference) if reference is not None else None
    cache = WheelRuntimes(wheel_rts)
    runtimes = {r.path: runtime_of(r, cache) for r in reports if r.fatbins}
    return Context(wheel_rts, frozenset(named), torch_rt, runtimes)


def _wheel_runtimes(paths: list[str]) -> tuple[dict[str, RuntimeNeed], set[str]]:
    """The runtime each wheel's requirements name (R-RT 4), and the wheels that name CUDA (in
    their requirements or their name)."""
    from fatbin_inspect.judging.verdicts import is_wheel, wheel_runtime

    wheel_rts: dict[str, RuntimeNeed] = {}
    named: set[str] = set()
    for w in filter(is_wheel, paths):
        rt = wheel_runtime(w)
        if rt is not None:
            wheel_rts[w] = rt
        if rt is not None or CUDA_NAMED.search(os.path.basename(w)):
            named.add(w)
    return wheel_rts, named


def _fleet(
    target_files: Sequence[str], pol: Policy, warn: Callable[[str], None] | None
) -> tuple[Target, ...]:
    """The ``--targets`` files' targets (else the policy's), merged; () without either."""
    if not (target_files or pol.targets):
        return ()
    from fatbin_inspect.judging import fleet as fleet_mod

    say = warn or fleet_mod._ignore
    found = (
        [
            t
            for f in fleet_mod.target_paths(target_files)
            for t in fleet_mod.read_targets(f, pol.min_driver, say)
        ]
        if target_files
        else fleet_mod.policy_targets(pol.targets, pol.source, pol.min_driver, say)
    )
    if not found:
        raise UsageError("gate: --targets: no GPU in any of the files given")
    return fleet_mod.merge(found)


def _read(
    paths: Sequence[str],
    opts: Options,
    progress: Callable[[int, int, int], None] | None,
    cache_dir: str | None,
) -> list[FileReport]:
    """Every record of ``paths``, through the scan cache when ``cache_dir`` is given."""
    from fatbin_inspect.judging.inputs import RecordCache, iter_reports

    cache = RecordCache(cache_dir, opts) if cache_dir is not None else None
    try:
        return list(iter_reports(paths, opts, progress, cache))
    finally:
        if cache is not None:
            cache.close()


def run_gate(
    paths: Sequence[str],
    pol: Policy,
    given: Mapping[str, Any],
    target_files: Sequence[str] = (),
    match: str | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    warn: Callable[[str], None] | None = None,
    needs: Needs = Needs(),
    cache_dir: str | None = None,
) -> GateRun:
    """The findings and records of ``paths`` under ``pol`` with the command line's ``given`` flags
    on top of per-distribution overrides: what ``gate`` reports, and the library's ``gate()``;
    ``needs.digests``: the records carry their SHA-256 (the SBOM); ``cache_dir``: the scan
    cache's folder (None: no cache), where the records of unchanged files are kept
    (``judging.inputs.RecordCache``)."""
    from fatbin_inspect.containers.index import is_index_input
    from fatbin_inspect.system.stack import local_devices

    fleet = _fleet(target_files, pol, warn)
    _require_a_check(pol, match, fleet)
    opts = Options(probe_small=True, digests=needs.digests)
    packages = [p for p in paths if is_index_input(p)]
    files = _read([p for p in paths if p not in packages], opts, progress, cache_dir)
    local = local_devices(pol.gpus, pol.min_driver)
    judged = _judge_groups(
        _GateInputs(paths, files, packages, opts), _host_groups(packages, fleet), pol, given, match, local
    )
    read = list({r.path: r for r in judged.every}.values()) if packages else files
    return GateRun(dataclasses.replace(_merged(judged.parts), config=pol.source), read, pol.fail_on)


def _require_a_check(pol: Policy, match: str | None, fleet: Sequence[Target]) -> None:
    """Raise a ``UsageError`` when neither the command line nor the policy asks for a check."""
    if not (pol.require or pol.gpus or pol.forbid or match or pol.overrides or fleet):
        raise UsageError(
            "gate: nothing to check: give --require, --gpu, --targets, --forbid or --match, "
            "or a [tool.fatbin-inspect] policy"
        )


def _host_groups(packages: Sequence[str], fleet: Sequence[Target]) -> dict[str | None, Sequence[Target]]:
    """The fleet's targets by host CPU when packages come from an index (the wheel of each host
    CPU is judged on its nodes); else the whole fleet under ``None``."""
    if not packages:  # files only: the index client is not even imported
        return {None: fleet}
    from fatbin_inspect.judging import index_inputs

    return index_inputs.host_groups(fleet)


class _GateInputs(NamedTuple):
    paths: Sequence[str]  # the inputs as given
    files: list[FileReport]  # the records of the inputs that are not index packages
    packages: list[str]  # the inputs that name packages on an index
    opts: Options  # how the packages' wheels are read


class _Judged(NamedTuple):
    parts: list[FindingsReport]  # one gate report per host CPU group
    every: list[FileReport]  # the files' records, then every group's fetched records


def _judge_groups(
    inputs: _GateInputs,
    groups: Mapping[str | None, Sequence[Target]],
    pol: Policy,
    given: Mapping[str, Any],
    match: str | None,
    local: LocalDevices,
) -> _Judged:
    """The gate report of each host CPU group: the files' records plus the group's wheels
    fetched from the index, judged on the group's targets."""
    from fatbin_inspect.judging import index_inputs
    from fatbin_inspect.release.gate import gate

    parts: list[FindingsReport] = []
    every = list(inputs.files)
    for arch, on in groups.items():
        fetched = [
            r
            for p in inputs.packages
            for f in index_inputs.fetch_all(p, inputs.opts, [arch])
            for r in f.records
        ]
        every += fetched
        reports = inputs.files + fetched
        reference = torch_reference(match, reports) if match else None
        ctx = gate_context(inputs.paths, reports, reference)
        parts.append(gate(reports, pol, given, reference, tuple(on), local, ctx))
    return _Judged(parts, every)


def _merged(parts: list[FindingsReport]) -> FindingsReport:
    """One gate report of the reports of each host CPU's targets: findings, checks, targets,
    inputs and files each once, in order."""
    if len(parts) == 1:
        return parts[0]

    def once(field: str) -> tuple[Any, ...]:
        return tuple(dict.fromkeys(x for part in parts for x in getattr(part, field)))

    return dataclasses.replace(
        parts[0],
        findings=once("findings"),
        checks=once("checks"),
        targets=once("targets"),
        inputs=once("inputs"),
        files=tuple({r.path: r for part in parts for r in part.files}.values()),
        judged=tuple(x for part in parts for x in part.judged),
    )
