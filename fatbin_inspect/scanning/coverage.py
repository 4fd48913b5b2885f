"""The coverage matrix: one row per distribution (or folder), one column per architecture.

A column is a base SM number (``sm_90`` and ``sm_90a`` share column 90: the suffix is kept in the
cell's ``arches``). A cell is ``sass`` (a cubin for that SM exists), ``ptx`` (only PTX for that SM:
the driver must JIT it), or ``none``. LTO-IR never runs as is and fills no cell. Rows keep their
files as child rows, so a renderer can expand them. Pure data: no I/O, no rendering.

``build`` takes full ``FileReport`` records or ``FileSummary`` records (what a file contributes to
the matrix, nothing more): a warm scan loads summaries from the cache instead of unpickling every
entry of a 24,000-fatbin library.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, Fatbin, FileError, FileReport

if TYPE_CHECKING:  # the engine (which compat.jit imports) is loaded only when there are verdicts
    from fatbin_inspect.compat.jit import JitCost
    from fatbin_inspect.compat.units import UnitVerdict
    from fatbin_inspect.compat.verdict import FileVerdict

SASS, PTX, NONE = "sass", "ptx", "none"
VERDICT_ORDER = {"fail": 3, "jit": 2, "native": 1, "no-device-code": 0}


@dataclass(frozen=True)
class Cell:
    state: str  # sass | ptx | none
    arches: tuple[str, ...] = ()  # "sm_90", "sm_90a", "compute_90" ...
    fatbins: int = 0  # fatbins of the row holding code of this state for the SM (0: not counted)
    of: int = 0  # fatbins of the row with SASS or PTX at all


@dataclass(frozen=True)
class Verdict:
    """Worst engine verdict of a row for one target, with the file that decided it."""

    verdict: str  # native | jit | fail | no-device-code | link-time
    error: str | None = None  # "209 cudaErrorNoKernelImageForDevice"
    rule: str | None = None
    reason: str | None = None
    path: str | None = None
    coverage: str | None = None  # full | partial | none (R-FILE for a file, R-UNIT for a row)
    set_aside: tuple[str, ...] = ()  # a row's files made for other GPUs (R-UNIT)
    variants: tuple[str, ...] = ()  # the alternative builds that decided (R-VARIANT)
    jit: JitCost | None = None  # R-JIT-COST: a file's JIT, a row's summed over its files
    device: Verdict | None = None  # R-HOST: what the deciding file's device code gives elsewhere


# the verdict on a target of a file that is not installed there: a wheel from a package index
# is judged on the targets of its host CPU only, another wheel of its release on the others
NOT_INSTALLED = Verdict("no-device-code", reason="not installed on this target's host CPU")


@dataclass(frozen=True)
class Row:
    name: str  # "torch 2.14.1", a folder, or a file path for child rows
    kind: str  # distribution | folder | file
    cells: dict[int, Cell]
    files: int
    errors: int
    verdicts: tuple[Verdict, ...] = ()  # one per target, in target order
    children: tuple[Row, ...] = ()

    def newest_ptx_upto(self, sm: int) -> str | None:
        """The highest ``compute_XY`` in the row with XY <= ``sm`` (what the driver could JIT)."""
        best = None
        for col, c in self.cells.items():
            for a in c.arches:
                if a.startswith("compute_") and col <= sm and (best is None or col > best[0]):
                    best = (col, a)
        return best[1] if best else None


@dataclass(frozen=True)
class Coverage:
    columns: tuple[int, ...]  # SM numbers present anywhere, ascending
    rows: tuple[Row, ...]  # distributions first (by name), then folders
    targets: tuple[str, ...] = ()  # labels of the targets the verdicts refer to


@dataclass(frozen=True)
class FileSummary:
    """What one file contributes to the matrix: ``arches`` holds the distinct ``(kind, sm, arch)``
    of its SASS and PTX entries (sorted), e.g. ``("sass", 90, "sm_90a")``."""

    path: str
    format: str
    size: int
    arches: tuple[tuple[str, int, str], ...] = ()
    error: FileError | None = None
    distribution: str | None = field(default=None, compare=False)
    package: str | None = None  # ``name version`` of the package holding it (FileReport.package)
    fatbins: int = 0  # fatbins with SASS or PTX (the denominator of a cell's share)
    counts: tuple[tuple[str, int, int], ...] = ()  # (kind, sm, fatbins holding that kind for sm)
    contents: tuple[int, int] | None = None  # FileReport.contents (an image's files and bytes)


def summarize(report: FileReport | FileSummary) -> FileSummary:
    """The ``FileSummary`` of a full record (its ``distribution`` carried over)."""
    if isinstance(report, FileSummary):
        return report
    return summary_of(report, tally(report.fatbins))


Code = tuple[str, int, str]  # (kind, sm, arch) of a SASS or PTX entry


class Tally(NamedTuple):
    """What ``tally`` counts over some fatbins."""

    seen: frozenset[Code]
    per: dict[tuple[str, int], int]  # fatbins per (kind, sm)
    coded: int  # fatbins with code


def tally(fatbins: Iterable[Fatbin]) -> Tally:
    """What ``summarize`` counts over some of a file's fatbins (``merged`` adds them up)."""
    return tally_codes(codes(fb) for fb in fatbins)


def codes(fb: Fatbin) -> frozenset[Code]:
    """The ``(kind, sm, arch)`` of a fatbin's SASS and PTX entries."""
    return frozenset((e.kind, e.sm, e.arch) for e in fb.entries if e.kind in (KIND_SASS, KIND_PTX))


def tally_codes(fatbin_codes: Iterable[frozenset[Code]]) -> Tally:
    """``tally`` from each fatbin's ``codes``."""
    seen: set[Code] = set()
    per: dict[tuple[str, int], int] = {}
    coded = 0
    for here in fatbin_codes:
        seen |= here
        coded += bool(here)
        for key in {(k, sm) for k, sm, _a in here}:
            per[key] = per.get(key, 0) + 1
    return Tally(frozenset(seen), per, coded)


def merged(tallies: Iterable[Tally]) -> Tally:
    seen: set[Code] = set()
    per: dict[tuple[str, int], int] = {}
    coded = 0
    for s, p, c in tallies:
        seen |= s
        coded += c
        for key, n in p.items():
            per[key] = per.get(key, 0) + n
    return Tally(frozenset(seen), per, coded)


def summary_of(report: FileReport, counted: Tally) -> FileSummary:
    """The ``FileSummary`` of ``report`` with its fatbins ``counted`` (``tally``)."""
    seen, per, coded = counted
    return FileSummary(
        report.path,
        report.format,
        report.size,
        tuple(sorted(seen)),
        report.error,
        report.distribution,
        report.package.label if report.package is not None else None,
        coded,
        tuple(sorted((k, sm, n) for (k, sm), n in per.items())),
        report.contents,
    )


def folder_of(path: str) -> str:
    """The folder a file is reported under: its directory, inside an archive too (``A.tar!usr/lib``)."""
    head, sep, member = path.rpartition("!")
    if sep:
        d = member.rsplit("/", 1)[0] if "/" in member else ""
        return f"{head}!{d}" if d else head
    return os.path.dirname(path) or "."


def _arches(report: FileReport | FileSummary) -> dict[int, set[tuple[str, str]]]:
    out: dict[int, set[tuple[str, str]]] = {}
    for kind, sm, arch in summarize(report).arches:
        out.setdefault(sm, set()).add((kind, arch))
    return out


def _cells(
    arches: dict[int, set[tuple[str, str]]], counts: dict[tuple[str, int], int], of: int
) -> dict[int, Cell]:
    """``counts``: fatbins per (kind, SM), ``of``: fatbins with code (both 0 when not counted)."""
    cells = {}
    for sm, items in arches.items():
        sass = sorted(a for k, a in items if k == KIND_SASS)
        ptx = sorted(a for k, a in items if k == KIND_PTX)
        kind = KIND_SASS if sass else KIND_PTX
        n = counts.get((kind, sm), 0)
        cells[sm] = Cell(SASS if sass else PTX, tuple(sass + ptx), n if of else 0, of if n else 0)
    return cells


def _counts(report: FileReport | FileSummary) -> tuple[dict[tuple[str, int], int], int]:
    s = summarize(report)
    return {(k, sm): n for k, sm, n in s.counts}, s.fatbins if s.counts else 0


def _worst(verdicts: Sequence[Verdict]) -> Verdict:
    return max(verdicts, key=lambda v: VERDICT_ORDER.get(v.verdict, 0))


def _row_jit(row_vs: tuple[Verdict, ...], children: Sequence[Row]) -> tuple[Verdict, ...]:
    """The JIT of a distribution: the sum over its files (one cache holds it all)."""
    if not row_vs:
        return row_vs
    from fatbin_inspect.compat.jit import total

    out = []
    for i, v in enumerate(row_vs):
        jits = [c.verdicts[i].jit for c in children if len(c.verdicts) > i]
        out.append(dataclasses.replace(v, jit=total(j for j in jits if j)))
    return tuple(out)


Record = FileReport | FileSummary


def _group(reports: Iterable[Record]) -> list[tuple[tuple[int, str], list[Record]]]:
    """Records by row, distributions first (by name), then folders: ``((order, name), records)``."""
    groups: dict[tuple[int, str], list[Record]] = {}
    for r in reports:
        key = (0, r.distribution) if r.distribution else (1, folder_of(r.path))
        groups.setdefault(key, []).append(r)
    return sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1].lower()))


def _row(
    order: int,
    name: str,
    members: list[Record],
    verdicts: dict[str, Sequence[Verdict]] | None,
    targets: Sequence[str],
    units: Callable[[Sequence[str]], Sequence[Verdict]] | None,
) -> Row:
    """One distribution's or folder's row, its files as child rows."""
    merged: dict[int, set] = {}
    counted: dict[tuple[str, int], int] = {}
    total, complete = 0, True  # shares only when every file of the row was counted
    children = []
    for r in sorted(members, key=lambda r: r.path):
        arches = _arches(r)
        for sm, items in arches.items():
            merged.setdefault(sm, set()).update(items)
        counts, of = _counts(r)
        complete &= bool(of) or not arches
        total += of
        for key, n in counts.items():
            counted[key] = counted.get(key, 0) + n
        vs = tuple(verdicts.get(r.path, ())) if verdicts else ()
        children.append(Row(r.path, "file", _cells(arches, counts, of), 1, int(r.error is not None), vs))
    return Row(
        name,
        "distribution" if order == 0 else "folder",
        _cells(merged, counted, total if complete else 0),
        len(members),
        sum(c.errors for c in children),
        _row_jit(_row_verdicts(children, targets, units), children),
        tuple(children),
    )


def _row_verdicts(
    children: list[Row], targets: Sequence[str], units: Callable[[Sequence[str]], Sequence[Verdict]] | None
) -> tuple[Verdict, ...]:
    """A row's per-target verdicts: ``units`` of its files (R-UNIT/R-VARIANT), else its worst file's."""
    if units is not None and targets:
        return tuple(units([c.name for c in children]))
    return tuple(
        _worst([c.verdicts[i] for c in children if len(c.verdicts) > i]) for i in range(len(targets))
    )


def build(
    reports: Iterable[Record],
    verdicts: dict[str, Sequence[Verdict]] | None = None,
    targets: Sequence[str] = (),
    units: Callable[[Sequence[str]], Sequence[Verdict]] | None = None,
) -> Coverage:
    """``verdicts`` maps a report path to its per-target verdicts (same order as ``targets``);
    ``units(paths)`` gives a row's per-target verdicts (R-UNIT/R-VARIANT), else its worst file's."""
    rows = [
        _row(order, name, members, verdicts, targets, units) for (order, name), members in _group(reports)
    ]
    columns = {sm for row in rows for sm in row.cells}
    return Coverage(tuple(sorted(columns)), tuple(rows), tuple(targets))


def describe(row: Row, sm: int) -> str:
    """Facts for one target SM: ``no sm_120 SASS, compute_90 PTX only``."""
    cell = row.cells.get(sm)
    if cell is not None and cell.state == SASS:
        return f"sm_{sm} SASS"
    parts = [f"no sm_{sm} SASS"]
    ptx = row.newest_ptx_upto(sm)
    parts.append(f"{ptx} PTX only" if ptx else "no PTX to JIT")
    return ", ".join(parts)


def verdict_of(file_verdict: FileVerdict | UnitVerdict, path: str | None = None) -> Verdict:
    """A coverage ``Verdict`` from the engine's ``FileVerdict`` or ``UnitVerdict``; with the
    file's JIT (R-JIT-COST) when it is a ``FileVerdict``."""
    from fatbin_inspect.compat.jit import cost
    from fatbin_inspect.compat.verdict import FileVerdict

    device = getattr(file_verdict, "device", None)
    ref = file_verdict.error
    err = None if ref is None else f"{ref.code} {ref.name}"
    return Verdict(
        file_verdict.verdict,
        err,
        getattr(file_verdict, "rule", None),
        getattr(file_verdict, "reason", None),
        path,
        getattr(file_verdict, "coverage", None),
        tuple(getattr(file_verdict, "set_aside", ())),
        tuple(getattr(file_verdict, "variants", ())),
        cost(file_verdict) if isinstance(file_verdict, FileVerdict) else None,
        verdict_of(device, path) if device is not None else None,
    )
