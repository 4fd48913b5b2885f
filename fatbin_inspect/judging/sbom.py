"""What a software bill of materials holds (docs/sbom.md): the packages the inputs hold, each with
its CUDA files, and per file its SHA-256, its runtime (R-RT) and its verdict per target (R-FILE;
a package's is the roll-up of its files, R-UNIT and R-VARIANT), or, for ``gate``, its findings.
``render.cyclonedx`` writes it; this module decides which package a file belongs to.

A file's package is, in this order: the package its own metadata names (``FileReport.package``:
a conda package's ``info/index.json``, an image's RECORD or ``conda-meta``); the distribution the
scan attributed it to (a ``*.dist-info`` RECORD, a wheel's name, or a prefix's
``conda-meta/NAME-VERSION-BUILD.json``, which makes it a conda package); the innermost wheel
of its path (``dist/x-1.0-py3-none-any.whl!x/lib.so``). The records must have been read with
``inventory.options.Options(digests=True)`` for their hashes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from fatbin_inspect.compat.runtime import RuntimeNeed
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.compat.verdict import FileVerdict
from fatbin_inspect.containers.wheel import canonicalize_name, wheel_name
from fatbin_inspect.formats.model import ARCHIVE_FORMATS, FileReport
from fatbin_inspect.inventory import member_path
from fatbin_inspect.judging.verdicts import WheelRuntimes, judge, runtime_of
from fatbin_inspect.release.findings import Finding, FindingsReport
from fatbin_inspect.scanning.coverage import Verdict, verdict_of


@dataclass(frozen=True)
class SbomFile:
    """One CUDA file (a record with device code, or one that could not be read)."""

    report: FileReport
    runtime: RuntimeNeed | None = None
    verdicts: tuple[Verdict, ...] = ()  # one per ``Sbom.targets`` (scan, list)
    checked: tuple[str, ...] = ()  # gate: the targets the file was checked on
    findings: tuple[Finding, ...] = ()  # gate: the file's findings


@dataclass(frozen=True)
class SbomPackage:
    """A distribution or package: a PyPI (``pypi``) or conda (``conda``) package URL's parts."""

    purl_type: str  # pypi | conda | deb | rpm
    name: str  # PEP 503 name for PyPI, the conda name as written
    version: str
    qualifiers: tuple[tuple[str, str], ...] = ()  # conda: build, subdir
    files: tuple[SbomFile, ...] = ()
    verdicts: tuple[Verdict, ...] = ()  # the roll-up of its files, one per target
    sha256: str | None = None  # of the package's own file (a wheel, a .conda) when it was an input


@dataclass(frozen=True)
class Sbom:
    command: str  # scan | list | gate
    targets: tuple[str, ...]  # target labels, in order
    packages: tuple[SbomPackage, ...]
    files: tuple[SbomFile, ...]  # CUDA files no package claims
    outcome: str | None = None  # gate: "pass" or "fail" at its fail level


PackageKey = tuple[str, str, str, tuple[tuple[str, str], ...]]  # purl type, name, version, qualifiers


def _conda_meta(folder: str, name: str, version: str, seen: dict[str, list[str]]) -> str | None:
    """The build string of ``conda-meta/NAME-VERSION-BUILD.json`` in ``folder``, if there is one."""
    meta = os.path.join(folder, "conda-meta")
    if meta not in seen:
        try:
            seen[meta] = sorted(os.listdir(meta)) if os.path.isdir(meta) else []
        except OSError:
            seen[meta] = []
    head = f"{name}-{version}-"
    for f in seen[meta]:
        if f.startswith(head) and f.endswith(".json"):
            return f[len(head) : -len(".json")]
    return None


def _prefix_build(path: str, name: str, version: str, seen: dict[str, list[str]]) -> str | None:
    """The build string when a conda prefix above ``path`` (a file on disk) lists ``name version``."""
    d = os.path.dirname(os.path.abspath(path))
    while True:
        build = _conda_meta(d, name, version, seen)
        if build is not None:
            return build
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def package_key(report: FileReport, seen: dict[str, list[str]] | None = None) -> PackageKey | None:
    """The package ``report`` belongs to (see the module docstring); None: no package claims it."""
    p = report.package
    if p is not None:
        if p.kind == "conda":
            quals = tuple((k, v) for k, v in (("build", p.build), ("subdir", p.subdir)) if v)
            return "conda", p.name, p.version, quals
        if p.kind in ("deb", "rpm"):  # system packages (containers.packagedb); purl: epoch apart
            epoch, _, version = p.version.rpartition(":") if p.kind == "rpm" else ("", "", p.version)
            return p.kind, p.name, version, (("epoch", epoch),) if epoch else ()
        return "pypi", canonicalize_name(p.name), p.version, ()
    if report.distribution:
        name, _, version = report.distribution.partition(" ")
        if not member_path.is_member(report.path):
            build = _prefix_build(report.path, name, version, {} if seen is None else seen)
            if build is not None:
                return "conda", name, version, (("build", build),)
        return "pypi", canonicalize_name(name), version, ()
    parts = member_path.split(report.path)
    for part in reversed(parts[:-1]):
        if part.lower().endswith(".whl"):
            dist = wheel_name(os.path.basename(part))
            if dist is not None:
                return "pypi", canonicalize_name(dist.name), dist.version, ()
    return None


def _own_key(report: FileReport) -> PackageKey | None:
    """The package a container record *is* (a wheel, a conda package), for its hash."""
    if report.format in ("conda",) and report.package is not None:
        return package_key(report)
    last = member_path.split(report.path)[-1]
    if report.format == "zip" and last.lower().endswith(".whl"):
        dist = wheel_name(os.path.basename(last))
        if dist is not None:
            return "pypi", canonicalize_name(dist.name), dist.version, ()
    return None


def build(
    command: str,
    reports: Iterable[FileReport],
    targets: Sequence[Target] = (),
    engine_verdicts: Mapping[str, Sequence[FileVerdict]] | None = None,
    roll_up: Callable[[list[str]], list[Verdict]] | None = None,
    findings: FindingsReport | None = None,
    outcome: str | None = None,
) -> Sbom:
    """The SBOM of ``reports``. ``engine_verdicts`` (path -> one per target) and ``roll_up`` (a
    package's paths -> its verdicts) are the scan's own (``judging.verdicts.distribution_verdicts``);
    without them the records are judged here. ``findings``: the gate's report (its ``targets`` are
    the SBOM's, each file's checks and findings go to its component)."""
    wheels = WheelRuntimes()
    reports = list(reports)
    if engine_verdicts is None:
        engine_verdicts = (
            {r.path: got for r in reports if (got := judge(r, targets, wheels))} if targets else {}
        )
    if targets and roll_up is None:
        roll_up = _unit_roll_up(targets, engine_verdicts)
    checked, found = _by_path(findings)
    groups, own, loose = _grouped(reports, targets, engine_verdicts, wheels, checked, found)
    packages = []
    for key in sorted(groups):
        files = groups[key]
        verdicts = tuple(roll_up([f.report.path for f in files])) if roll_up is not None else ()
        packages.append(SbomPackage(*key, tuple(files), verdicts, own.get(key)))
    labels = findings.targets if findings is not None else tuple(t.label for t in targets)
    return Sbom(command, tuple(labels), tuple(packages), tuple(loose), outcome)


def _unit_roll_up(
    targets: Sequence[Target], engine_verdicts: Mapping[str, Sequence[FileVerdict]]
) -> Callable[[list[str]], list[Verdict]]:
    """A package's verdicts from its files' (R-UNIT), when the caller gave no roll-up."""
    from fatbin_inspect.compat import units

    def roll_up(paths: list[str]) -> list[Verdict]:
        out = []
        for i in range(len(targets)):
            u = units.unit_verdict([(p, engine_verdicts[p][i]) for p in paths if p in engine_verdicts])
            out.append(verdict_of(u, u.path))
        return out

    return roll_up


def _by_path(findings: FindingsReport | None) -> tuple[dict[str, list[str]], dict[str, list[Finding]]]:
    """The gate's checked targets and its findings, by file."""
    checked: dict[str, list[str]] = {}
    found: dict[str, list[Finding]] = {}
    if findings is not None:
        for c in findings.checks:
            if c.target is not None:
                checked.setdefault(c.path, []).append(c.target)
        for hit in findings.findings:
            found.setdefault(hit.path, []).append(hit)
    return checked, found


def _grouped(
    reports: Sequence[FileReport],
    targets: Sequence[Target],
    engine_verdicts: Mapping[str, Sequence[FileVerdict]],
    wheels: WheelRuntimes,
    checked: Mapping[str, list[str]],
    found: Mapping[str, list[Finding]],
) -> tuple[dict[PackageKey, list[SbomFile]], dict[PackageKey, str], list[SbomFile]]:
    """(files by package, each package's own archive digest, files of no package)."""
    seen: dict[str, list[str]] = {}
    groups: dict[PackageKey, list[SbomFile]] = {}
    own: dict[PackageKey, str] = {}
    loose: list[SbomFile] = []
    for r in reports:
        if not _component(r, own):
            continue
        vs: Sequence[FileVerdict] = engine_verdicts.get(r.path, ())
        rt = vs[0].runtime if vs else (runtime_of(r, wheels) if r.fatbins else None)
        item = SbomFile(
            r,
            rt,
            _aligned(vs, targets, r.path),
            tuple(checked.get(r.path, ())),
            tuple(found.get(r.path, ())),
        )
        key = package_key(r, seen)
        if key is None:
            loose.append(item)
        else:
            groups.setdefault(key, []).append(item)
    return groups, own, loose


def _aligned(vs: Sequence[FileVerdict], targets: Sequence[Target], path: str) -> tuple[Verdict, ...]:
    """A file's verdicts, one per target: a file judged on some targets only (a wheel from an
    index, on its host CPU's) is not installed on the others (``coverage.NOT_INSTALLED``)."""
    if len(vs) == len(targets):
        return tuple(verdict_of(v, path) for v in vs)
    from fatbin_inspect.scanning.coverage import NOT_INSTALLED

    by_target = {id(v.target): v for v in vs}
    return tuple(verdict_of(by_target[id(t)], path) if id(t) in by_target else NOT_INSTALLED for t in targets)


def _component(r: FileReport, own: dict[PackageKey, str]) -> bool:
    """Whether a record is a file component: device code or an error. An archive without its
    own device code gives its package its digest instead (kept in ``own``)."""
    if r.format in ARCHIVE_FORMATS and not r.fatbins:
        key = _own_key(r)
        if key is not None and r.sha256 is not None:
            own[key] = r.sha256
        return r.error is not None
    return bool(r.fatbins or r.error)
