"""The library API: what ``list``, ``check``, ``scan`` and ``gate`` compute, as records, for people who
test their own wheels in pytest. Re-exported at the package root (``fatbin_inspect.check(...)``).

Same options, same answers as the command line: each function reads the inputs with the options
its command uses and calls the same code, so ``check(paths, gpus=["H100"])`` gives the verdicts
behind ``fatbin-inspect check PATHS --gpu H100 --format json``. Nothing is printed; an unreadable
input is a record with ``error`` set (``check`` and ``gate`` report it like the CLI: FBI008, and
``check`` never calls a damaged file fine). ``auto`` as a GPU or driver probes this machine.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fatbin_inspect.compat.targets import Target
from fatbin_inspect.compat.verdict import FileVerdict
from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.release.findings import FindingsReport
from fatbin_inspect.release.policy import Policy
from fatbin_inspect.scanning import ScanResult
from fatbin_inspect.scanning.coverage import Coverage

PathArg = str | os.PathLike[str]


def _paths(paths: PathArg | Iterable[PathArg]) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths]


def targets(
    gpus: str | Sequence[str] = (),
    driver: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    fleet: PathArg | Iterable[PathArg] = (),
) -> tuple[Target, ...]:
    """``--gpu`` / ``--driver`` / ``--env`` / ``--targets`` as the engine's targets (``auto``
    probes this machine; ``fleet``: doctor reports, fleet TOML, folders or patterns of them)."""
    from fatbin_inspect.judging.fleet import resolve_all

    queries = [gpus] if isinstance(gpus, str) else list(gpus)
    files = [] if not fleet else _paths(fleet)
    return resolve_all(queries, driver, dict(env or {}), files)


def inspect(
    path: PathArg | Iterable[PathArg],
    *,
    kernels: bool = False,
    details: bool = False,
    scan_hidden: bool = True,
) -> list[FileReport]:
    """The records of ``fatbin-inspect list PATH`` (``--kernels``, ``--details``, ``--no-scan``): one
    per file and archive member, with its fatbins and entries."""
    from fatbin_inspect.inventory.options import Options
    from fatbin_inspect.judging.inputs import iter_reports

    opts = Options(kernels=kernels, details=details or kernels, scan_hidden=scan_hidden)
    return list(iter_reports(_paths(path), opts))


def check(
    paths: PathArg | Iterable[PathArg],
    gpus: str | Sequence[str] = (),
    driver: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    kernels: bool = False,
    fleet: PathArg | Iterable[PathArg] = (),
) -> list[FileVerdict]:
    """The verdicts of ``fatbin-inspect check PATHS --gpu ... --driver ...``: one per file and
    target, ``.verdict`` being native, jit, fail, link-time or no-device-code. ``driver`` None is
    the newest branch the data confirms, as on the command line."""
    from fatbin_inspect.judging.inputs import verdict_options
    from fatbin_inspect.judging.verdicts import judge_paths

    unreadable: list[FileReport] = []
    return list(
        judge_paths(
            _paths(paths), targets(gpus, driver, env, fleet=fleet), unreadable, verdict_options(kernels)
        )
    )


def scan(
    paths: PathArg | Iterable[PathArg] = (),
    gpus: str | Sequence[str] = (),
    driver: str | None = None,
    *,
    jobs: int = 1,
    cache_dir: str | None = None,
    fleet: PathArg | Iterable[PathArg] = (),
) -> tuple[ScanResult, Coverage]:
    """``fatbin-inspect scan PATHS [--gpu ...]``: the records of every file with device code (no
    paths: this interpreter's site-packages), and the coverage matrix by distribution, with a
    verdict per target when ``gpus`` are given. No cache unless ``cache_dir`` is given."""
    from fatbin_inspect.judging.scan_run import inventory_fields, run_scan
    from fatbin_inspect.scanning import ScanOptions

    ts = targets(gpus, driver, fleet=fleet) if gpus or fleet else ()
    inv = inventory_fields(kernels=False, targets=bool(ts))
    run = run_scan(_paths(paths), ScanOptions(inventory=inv, jobs=jobs, cache_dir=cache_dir), ts)
    return run.result, run.coverage


def gate(
    paths: PathArg | Iterable[PathArg],
    policy: Policy | tuple[Policy, Mapping[str, Any]] | str | None = None,
    **flags: Any,
) -> FindingsReport:
    """The findings of ``fatbin-inspect gate PATHS``. ``policy``: a ``Policy``, what
    ``release.policy.load()`` returns, a pyproject.toml/TOML path, or None for the nearest
    pyproject.toml; ``flags`` are the command line's (``require="sm_80,sm_90"``, ``gpus=...``,
    ``driver=`` (or ``min_driver=``), ``fleet=`` target files,
    ``fail_on=...``) and win over the file, as there; ``cache_dir=``: the scan cache's folder
    (none unless given, as ``scan()``). ``.findings`` are the FBI rule hits;
    ``release.findings.fails(report.findings, level)`` is the gate's exit decision."""
    from fatbin_inspect.judging.gate_run import run_gate
    from fatbin_inspect.release import policy as policy_mod

    if "driver" in flags:  # the name check() and scan() use: the gate's oldest driver
        flags["min_driver"] = flags.pop("driver")
    fleet = flags.pop("fleet", ())
    cache_dir = flags.pop("cache_dir", None)
    given: Mapping[str, Any]
    if isinstance(policy, Policy):
        given = policy_mod.normalize({k: v for k, v in flags.items() if v is not None}, "flags")
        pol = dataclasses.replace(policy, **given)
    elif isinstance(policy, tuple):
        pol, given = policy
    else:
        pol, given = policy_mod.load(policy, flags)
    return run_gate(_paths(paths), pol, given, _paths(fleet) if fleet else (), cache_dir=cache_dir)[0]
