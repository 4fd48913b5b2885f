"""``releases NAME``: each release of a package on the index, judged per target before any is
installed, and the newest release that runs natively, and through the JIT, on each target.

A release's cell for a target is the roll-up of the wheel pip would install on that target's
host (``index_inputs``: one wheel per host CPU) over its files, as ``scan`` rolls up a
distribution (R-UNIT, R-VARIANT: ``verdicts.distribution_verdicts``); a release without a wheel
for the target's platform, or with only sdists, says so instead. Pre-releases and yanked
releases are left out, as pip leaves them out of a bare ``pip install NAME``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fatbin_inspect.containers.index.purl import Release
from fatbin_inspect.judging import index_inputs
from fatbin_inspect.judging.verdicts import distribution_verdicts

if TYPE_CHECKING:
    from fatbin_inspect.compat.targets import Target
    from fatbin_inspect.inventory.options import Options

# A release without device code for a target (a CPU build, a pure wheel for its CPU) runs, but
# not on the GPU: it never answers "runs natively" or "through JIT".
RUNS = ("native",)
STARTS = (*RUNS, "jit")


@dataclass(frozen=True)
class Cell:
    """One release on one target: ``verdict`` (native, jit, fail, no-device-code, link-time,
    or no-wheel, source-only, error: nothing judged), the deciding ``rule`` and a ``detail``
    (the CUDA error, or why nothing was judged), and the ``file`` judged."""

    verdict: str
    rule: str | None = None
    detail: str | None = None
    file: str | None = None


@dataclass(frozen=True)
class ReleaseRow:
    version: str
    cells: tuple[Cell, ...]  # one per target


@dataclass(frozen=True)
class ReleasesReport:
    """The rows, newest release first, and per target the newest release that runs natively
    (``newest_native``) and that starts at all, JIT included (``newest_jit``); None: none of
    the releases judged."""

    name: str
    targets: tuple[Target, ...]
    rows: tuple[ReleaseRow, ...]
    newest_native: tuple[str | None, ...]
    newest_jit: tuple[str | None, ...]
    skipped: int = 0  # releases older than --since or past --limit


def versions(files: Sequence[object], since: str | None, limit: int | None) -> tuple[list[str], int]:
    """The final, unyanked versions among ``files``, newest first, from ``since`` on, at most
    ``limit`` of them (the newest); and how many were left out."""
    from packaging.version import Version

    found = sorted(
        {f.version for f in files if not f.yanked and not f.version.is_prerelease},  # type: ignore[attr-defined]
        reverse=True,
    )
    kept = [v for v in found if since is None or v >= Version(since)]
    if limit is not None:
        kept = kept[:limit]
    return [str(v) for v in kept], len(found) - len(kept)


def releases(
    name: str,
    targets: Sequence[Target],
    opts: Options,
    since: str | None = None,
    limit: int | None = 10,
) -> ReleasesReport:
    """Every release of ``name`` (canonical) on the command's index, judged on ``targets``."""
    src = index_inputs.current()
    chosen, skipped = versions(src.files(name), since, limit)
    groups = index_inputs.judge_groups(targets)
    rows = []
    for version in chosen:
        cells: dict[int, Cell] = {}
        release = Release(name, version, f"pkg:pypi/{name}@{version}")
        for arch, on in groups.items():
            fetched = src.fetch(release, src.platform_for(arch), opts)
            for t, cell in zip(on, _cells(fetched, on)):
                cells[targets.index(t)] = cell
        rows.append(ReleaseRow(version, tuple(cells[i] for i in range(len(targets)))))
    native = tuple(_newest(rows, i, RUNS) for i in range(len(targets)))
    started = tuple(_newest(rows, i, STARTS) for i in range(len(targets)))
    return ReleasesReport(name, tuple(targets), tuple(rows), native, started, skipped)


def _cells(fetched: index_inputs.Fetched, targets: Sequence[Target]) -> list[Cell]:
    """The cells of one wheel (or of no wheel) on ``targets``."""
    if fetched.file is None:
        kind = "source-only" if fetched.source_only else "no-wheel"
        return [Cell(kind, detail=fetched.reason)] * len(targets)
    failed = next((r.error for r in fetched.records if r.error is not None), None)
    if failed is not None and not any(r.fatbins for r in fetched.records):
        return [Cell("error", detail=failed.message, file=fetched.file.filename)] * len(targets)
    judged = [r for r in fetched.records if r.fatbins]
    if not judged:
        return [Cell("no-device-code", file=fetched.file.filename)] * len(targets)
    _per_file, roll_up, _engine = distribution_verdicts(judged, targets, None)
    return [
        Cell(v.verdict, v.rule, v.error, fetched.file.filename) for v in roll_up([r.path for r in judged])
    ]


def _newest(rows: Sequence[ReleaseRow], i: int, wanted: tuple[str, ...]) -> str | None:
    return next((row.version for row in rows if row.cells[i].verdict in wanted), None)
