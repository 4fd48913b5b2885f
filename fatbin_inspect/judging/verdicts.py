"""Judging records on targets: each file's runtime (R-RT), the engine's verdict per target
(R-FILE), and the roll-ups of a distribution's files (R-UNIT, R-VARIANT)."""

from __future__ import annotations

import os
import zipfile

from fatbin_inspect.compat import runtime
from fatbin_inspect.compat.engine import evaluate
from fatbin_inspect.inventory import member_path
from fatbin_inspect.judging.inputs import iter_reports

ARCHIVE_FORMATS = ("zip", "ar", "tar", "conda", "oci")


def wheel_runtime(path: str):
    return runtime.from_wheel(path) if zipfile.is_zipfile(path) else None


def judge_paths(
    paths,
    targets,
    unreadable: list,
    opts,
    kept: list | None = None,
    note=None,
    progress=None,
    seen: list | None = None,
):
    """Verdicts per file and target as the records come; unreadable records go to ``unreadable``
    (and to ``note``, which tells on stderr; None: silent, for the library), and every judged
    record to ``kept`` when it is a list. A wheel's metadata names the runtime of its members
    (wheels inside folders too)."""
    wheels: dict[str, object] = {}  # container path -> the runtime its wheel metadata names
    for report in iter_reports(paths, opts, progress):
        if seen is not None:  # every record's path: the output may be none of them
            seen.append(report.path)
        if report.error is not None:  # a damaged file is never called fine: exit 2 and FBI008
            if note is not None:
                note(report)
            unreadable.append(report)
            if not report.fatbins:
                continue
        if report.format in ARCHIVE_FORMATS and not report.fatbins:
            continue  # the archive's members carry the verdicts
        container = report.path.split("!", 1)[0]
        if container not in wheels:
            wheels[container] = wheel_runtime(container) if os.path.isfile(container) else None
        rt = runtime.for_file(report, wheels[container])
        if kept is not None:
            kept.append(report)
        yield from (evaluate(report, t, rt) for t in targets)


def _wheel_runtimes(paths) -> dict:
    return {p: runtime.from_wheel(p) for p in paths if os.path.isfile(p) and zipfile.is_zipfile(p)}


def judge_record(r, targets, wheels) -> list:
    """Engine verdicts of one record, as ``check`` gives them (archives: per member)."""
    if (r.error is not None and not r.fatbins) or (r.format in ARCHIVE_FORMATS and not r.fatbins):
        return []
    rt = runtime.for_file(r, wheels.get(member_path.container(r.path)))
    return [evaluate(r, t, rt) for t in targets]


def judge_reports(paths, reports, targets):
    """Engine verdicts per (file, target), as ``check`` gives them (archives: per member)."""
    wheels = _wheel_runtimes(paths)
    return [v for r in reports for v in judge_record(r, targets, wheels)]


def list_wheel_runtimes(paths) -> dict:
    return _wheel_runtimes(paths)


def _scan_wheel_runtime(path: str):
    return runtime.from_wheel(path) if path.endswith(".whl") and zipfile.is_zipfile(path) else None


def distribution_verdicts(reports, targets, env_runtime):
    """Per-file engine verdicts (R-FILE, with R-RT's runtime) as coverage ``Verdict`` records, the
    roll-up of a row's files (R-UNIT, R-VARIANT by ``env_runtime``), and the engine's verdicts
    themselves (path -> one per target)."""
    from fatbin_inspect.compat import units
    from fatbin_inspect.scanning.coverage import verdict_of

    wheels: dict = {}
    engine_vs = {}
    for r in reports:
        top = r.path.split("!", 1)[0]
        if "!" in r.path and top not in wheels:
            wheels[top] = _scan_wheel_runtime(top)
        rt = runtime.for_file(r, wheels.get(top))
        engine_vs[r.path] = [evaluate(r, t, rt) for t in targets]

    def roll_up(paths):
        out = []
        for i in range(len(targets)):
            u = units.unit_verdict([(p, engine_vs[p][i]) for p in paths if p in engine_vs], env_runtime)
            out.append(verdict_of(u, u.path))
        return out

    return {p: [verdict_of(v, p) for v in vs] for p, vs in engine_vs.items()}, roll_up, engine_vs
