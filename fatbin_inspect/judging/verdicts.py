"""Judging records on targets, the one path every command and the API take: each file's runtime
(R-RT, with the wheel's metadata for its members), the engine's verdict per target (R-FILE), and
the roll-ups of a distribution's files (R-UNIT, R-VARIANT). ``check``, ``list --gpu``, ``scan``,
``gate`` and ``fatbin_inspect.check()`` all call ``judge``; ``is_wheel`` is the one wheel test."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from fatbin_inspect.compat import runtime
from fatbin_inspect.compat.engine import evaluate
from fatbin_inspect.compat.runtime import RuntimeNeed
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.compat.verdict import FatbinVerdict, FileVerdict
from fatbin_inspect.formats.model import ARCHIVE_FORMATS, FileReport
from fatbin_inspect.inventory import member_path
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.judging.inputs import Progress, iter_reports
from fatbin_inspect.judging.ptx_shapes import with_ptx_shapes

if TYPE_CHECKING:
    from fatbin_inspect.judging.index_inputs import WheelFacts
    from fatbin_inspect.scanning.coverage import Verdict


def is_wheel(path: str) -> bool:
    """A file on disk named ``*.whl`` that is a zip archive: its METADATA speaks for its members."""
    return path.lower().endswith(".whl") and os.path.isfile(path) and zipfile.is_zipfile(path)


def wheel_runtime(path: str) -> RuntimeNeed | None:
    """The runtime a wheel's ``Requires-Dist`` names (None for anything but a readable wheel, on
    disk or read from an index in this process)."""
    if not is_wheel(path):
        facts = _remote_facts(path)
        return metadata_runtime(facts.metadata) if facts is not None and facts.metadata else None
    from fatbin_inspect.containers.wheel import read_wheel_metadata

    text = read_wheel_metadata(path)
    return metadata_runtime(text) if text is not None else None


def metadata_runtime(metadata: str) -> RuntimeNeed | None:
    """The runtime a METADATA text's ``Requires-Dist`` names (R-RT 4)."""
    from fatbin_inspect.containers.wheel import declared_requirements

    return runtime.from_requirements(declared_requirements(metadata))


class WheelRuntimes(dict[str, RuntimeNeed | None]):
    """Container path -> the runtime its wheel metadata names, each wheel read once when first
    asked; and the file names of each folder (on disk or in a wheel), listed once, for R-RT 5's
    "a cudart beside it"."""

    def __missing__(self, path: str) -> RuntimeNeed | None:
        self[path] = found = wheel_runtime(path)
        return found

    def beside(self, record_path: str) -> list[str]:
        """The names of the files in the folder that holds ``record_path``."""
        folders = self.__dict__.setdefault("folders", {})
        parts = member_path.split(record_path)
        if len(parts) == 1:
            key = os.path.dirname(record_path) or "."
            if key not in folders:
                try:
                    folders[key] = os.listdir(key)
                except OSError:
                    folders[key] = []
            return folders[key]
        container, member = parts[0], parts[-1]
        if len(parts) != 2:
            return []
        if container not in folders:
            folders[container] = (
                _wheel_folders(container) if is_wheel(container) else _remote_folders(container)
            )
        return folders[container].get(member.rpartition("/")[0], [])


def _wheel_folders(path: str) -> dict[str, list[str]]:
    try:
        with zipfile.ZipFile(path) as zf:
            return _folders(zf.namelist())
    except (OSError, zipfile.BadZipFile):
        return {}


def _folders(names: Iterable[str]) -> dict[str, list[str]]:
    """Member names by their folder."""
    out: dict[str, list[str]] = {}
    for name in names:
        folder, _, base = name.rpartition("/")
        out.setdefault(folder, []).append(base)
    return out


def _remote_folders(path: str) -> dict[str, list[str]]:
    """The folders of a wheel read from an index in this process ({} for anything else)."""
    facts = _remote_facts(path)
    return _folders(facts.names) if facts is not None else {}


def _remote_facts(path: str) -> WheelFacts | None:
    """What a wheel read from an index in this process says; such a wheel is named by its URL,
    so a local path is not looked up (and the index client is not imported for it)."""
    if "://" not in path:
        return None
    from fatbin_inspect.judging.index_inputs import facts_of

    return facts_of(path)


def _distribution_name(report: FileReport) -> str | None:
    if report.distribution:
        return report.distribution.split(" ", 1)[0]
    if report.package is not None:
        return report.package.name
    if member_path.is_member(report.path):
        from fatbin_inspect.containers.wheel import wheel_name

        dist = wheel_name(os.path.basename(member_path.container(report.path)))
        return dist.name if dist else None
    return None


def judged(report: FileReport) -> bool:
    """Whether a record gets verdicts: not an unreadable one without fatbins, not an archive
    (its members carry the verdicts)."""
    if not report.fatbins:
        return report.error is None and report.format not in ARCHIVE_FORMATS
    return True


def runtime_of(report: FileReport, wheels: WheelRuntimes) -> RuntimeNeed | None:
    """R-RT for one record: its own evidence, else its wheel's requirement (``runtime.for_file``),
    else what its distribution declares around it (R-RT 5: install folder, name, a cudart
    beside it). None: not known, and the verdict says so (the toolkit that built its cubins is
    no evidence of a runtime: a driver-API library links none)."""
    wheel = wheels[member_path.container(report.path)] if member_path.is_member(report.path) else None
    found = runtime.for_file(report, wheel)
    if found is not None or not report.fatbins:
        return found
    return runtime.from_context(report.path, _distribution_name(report), wheels.beside(report.path))


def judge(report: FileReport, targets: Sequence[Target], wheels: WheelRuntimes) -> list[FileVerdict]:
    """The engine's verdicts of one record, one per target ([] for records not ``judged``)."""
    if not judged(report):
        return []
    rt = runtime_of(report, wheels)
    return name_gap_kernels(report, [evaluate(report, t, rt) for t in targets])


def name_gap_kernels(report: FileReport, verdicts: list[FileVerdict]) -> list[FileVerdict]:
    """The verdicts of a file on disk whose gaps were judged from their headers alone, with the
    kernels those fatbins hold named in the reason (``compat.gap_kernels``): their payloads are
    decoded once for every target (``inventory.payloads.kernel_names``). A member of a wheel (a
    zip) is read alone; one deeper in archives only when its payloads were decoded (``--kernels``)."""
    from fatbin_inspect.compat import gap_kernels
    from fatbin_inspect.inventory.payloads import kernel_names

    wanted = {f.offset for v in verdicts for f in _unnamed_gaps(v)}
    kernels_at = kernel_names(report, wanted) if wanted else None
    if kernels_at is None:
        return verdicts
    return [gap_kernels.named(v, kernels_at) for v in verdicts]


def _unnamed_gaps(v: FileVerdict) -> list[FatbinVerdict]:
    """The gap fatbins of ``v`` whose kernels are not known yet."""
    from fatbin_inspect.compat import gap_kernels

    gaps = gap_kernels.gap_fatbins(v)
    return gaps if gaps and gap_kernels.decoded_names(gaps) is None else []


def judge_paths(
    paths: Iterable[str],
    targets: Sequence[Target],
    unreadable: list[FileReport],
    opts: Options,
    kept: list[FileReport] | None = None,
    note: Callable[[FileReport], None] | None = None,
    progress: Progress | None = None,
    seen: list[str] | None = None,
) -> Iterator[FileVerdict]:
    """Verdicts per file and target as the records come, the PTX a JIT would compile counted
    (``judging.ptx_shapes``); unreadable records go to ``unreadable``
    (and to ``note``, which tells on stderr; None: silent, for the library), and every judged
    record to ``kept`` when it is a list; ``seen`` gets every record's path."""
    wheels = WheelRuntimes()
    for report, on in _with_index_inputs(paths, targets, opts, progress):
        if seen is not None:  # every record's path: the output may be none of them
            seen.append(report.path)
        if report.error is not None:  # a damaged file is never called fine: exit 2 and FBI008
            if note is not None:
                note(report)
            unreadable.append(report)
        if not judged(report):
            continue
        if kept is not None:
            kept.append(report)
        yield from with_ptx_shapes(report, judge(report, on, wheels))


def _with_index_inputs(
    paths: Iterable[str], targets: Sequence[Target], opts: Options, progress: Progress | None
) -> Iterator[tuple[FileReport, Sequence[Target]]]:
    """Each record with the targets it is judged on: the files' on every target; a package
    from the index (``judging.index_inputs``) once per host CPU among the targets, each wheel
    on the targets of its CPU."""
    from fatbin_inspect.containers.index import is_index_input

    paths = list(paths)
    packages = [p for p in paths if is_index_input(p)]
    local = [p for p in paths if not is_index_input(p)]
    yield from ((r, targets) for r in iter_reports(local, opts, progress))
    if not packages:  # files only: the index client is not even imported
        return
    from fatbin_inspect.judging import index_inputs

    groups = index_inputs.judge_groups(targets)
    for path in packages:
        for fetched in index_inputs.fetch_all(path, opts, list(groups)):
            yield from ((r, groups[fetched.platform.arch]) for r in fetched.records)


class DistributionVerdicts(NamedTuple):
    per_file: dict[str, Sequence[Verdict]]  # path -> one coverage verdict per target
    roll_up: Callable[[Sequence[str]], list[Verdict]]  # the files of a row -> its verdict per target
    engine: dict[str, list[FileVerdict]]  # path -> the engine's verdict per target


def distribution_verdicts(
    reports: Sequence[FileReport],
    targets: Sequence[Target],
    env_runtime: tuple[int, ...] | None,
    on: Mapping[str, Sequence[Target]] | None = None,
) -> DistributionVerdicts:
    """Per-file engine verdicts as coverage ``Verdict`` records, the roll-up of a row's files
    (R-UNIT, R-VARIANT by ``env_runtime``), and the engine's verdicts themselves (path -> one per
    target it was judged on). ``on``: the targets a record is judged on where not all (a wheel
    from an index is judged on the targets of its host CPU only); on the others its file is
    not installed, and the row's verdict there is its other files'."""
    from fatbin_inspect.compat import units
    from fatbin_inspect.scanning.coverage import NOT_INSTALLED, verdict_of

    wheels = WheelRuntimes()
    aligned: dict[str, list[FileVerdict | None]] = {}
    for r in reports:
        mine = on.get(r.path, targets) if on else targets
        vs = judge(r, mine, wheels)
        if vs:
            by_target = {id(t): v for t, v in zip(mine, vs, strict=True)}
            aligned[r.path] = [by_target.get(id(t)) for t in targets]

    def roll_up(paths: Sequence[str]) -> list[Verdict]:
        out = []
        for i in range(len(targets)):
            files = [(p, v) for p in paths if p in aligned and (v := aligned[p][i]) is not None]
            u = units.unit_verdict(files, env_runtime)
            out.append(verdict_of(u, u.path))
        return out

    per_file: dict[str, Sequence[Verdict]] = {
        p: [verdict_of(v, p) if v else NOT_INSTALLED for v in vs] for p, vs in aligned.items()
    }
    engine_vs = {p: [v for v in vs if v is not None] for p, vs in aligned.items()}
    return DistributionVerdicts(per_file, roll_up, engine_vs)
