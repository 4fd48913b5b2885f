"""The scan run: the records of the inputs, their verdicts per target and the coverage matrix —
what ``scan`` shows and the library's ``scan()`` returns (docs/format.md, "scan")."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fatbin_inspect.judging.needs import Needs

if TYPE_CHECKING:  # a warm scan without targets imports neither the engine nor the parsers
    from fatbin_inspect.compat.targets import Target
    from fatbin_inspect.compat.verdict import FileVerdict
    from fatbin_inspect.formats.model import FileReport
    from fatbin_inspect.judging import index_inputs
    from fatbin_inspect.scanning import ScanOptions, ScanResult
    from fatbin_inspect.scanning.coverage import Coverage, Verdict


@dataclass(frozen=True)
class ScanRun:
    result: ScanResult
    coverage: Coverage
    targets: tuple[Target, ...]
    # the engine's verdicts of each file with device code (one per target): the findings of the
    # HTML report, the SBOM's verdicts and FBI017 are made of them
    engine: Mapping[str, list[FileVerdict]]
    roll_up: Callable[[Sequence[str]], list[Verdict]] | None
    seconds: float  # wall time of the scan itself (the table's summary line says it)
    # the error records of packages asked of an index (missing release, sdist only, unreachable
    # index, hash mismatch): the command exits 2 for them, as ``check`` does
    unread_packages: tuple[FileReport, ...] = ()

    def engine_verdicts(self) -> list[FileVerdict]:
        return [v for vs in self.engine.values() for v in vs]

    def row_findings(self) -> list[FileVerdict]:
        """The engine verdicts that are findings: a file's failure (or JIT) counts only where its
        row fails (or needs JIT) too — R-UNIT sets aside the files made for other GPUs and
        R-VARIANT the builds for another runtime."""
        index = {t: i for i, t in enumerate(self.targets)}
        row_of = {c.name: row for row in self.coverage.rows for c in row.children}

        def counts(v: FileVerdict) -> bool:
            row = row_of.get(v.path)
            i = index[v.target]
            return row is not None and i < len(row.verdicts) and row.verdicts[i].verdict in ("fail", "jit")

        return [v for v in self.engine_verdicts() if counts(v)]

    def incomplete(self, strict: bool) -> bool:
        """The answer lacks files: no Dask worker could read some, or (``strict``) a file was
        unreadable or no regular file."""
        r = self.result
        return bool(r.unread) or (strict and bool(r.skipped or any(x.error for x in r.reports)))

    def fails(self, fail_on: str) -> bool:
        """A row's verdict fails the run at the --fail-on level (``judging.FAILING``)."""
        from fatbin_inspect.judging import FAILING

        bad = FAILING[fail_on]
        return any(v.verdict in bad for row in self.coverage.rows for v in row.verdicts)


def inventory_fields(
    *, kernels: bool, targets: bool, platform: str = "", digests: bool = False
) -> dict[str, Any]:
    """The ``inventory.Options`` fields of a scan, as a dict (the parsers are imported only if a
    file must be read). Files are already spread over processes: no second level of processes
    inside one file; with targets, small cubins are decoded so device-link output is not judged
    as code."""
    return {
        "kernels": kernels,
        "details": kernels,
        "jobs": 1,
        "probe_small": targets,
        "platform": platform,
        "digests": digests,
    }


def scan_options(
    needs: Needs,
    targets: Sequence[Target],
    kernels: bool,
    platform: str,
    jobs: int,
    no_cache: bool,
    **where: Any,
) -> ScanOptions:
    """The scan's options for a view with ``needs``: a view that reads summaries only gets them
    (a warm scan then loads no full record), one with an encoder gets each record encoded by the
    workers and streamed (a warm scan copies the cached bytes); the engine's verdicts need the
    full records, so with ``targets`` neither. ``where``: the ``ScanOptions`` of the executor
    (local or Dask)."""
    from fatbin_inspect.scanning import ScanOptions

    streamed = needs.encoder is not None and not targets
    inv = inventory_fields(kernels=kernels, targets=bool(targets), platform=platform, digests=needs.digests)
    return ScanOptions(
        inventory=inv,
        jobs=jobs,
        cache_dir=None if no_cache else "default",
        summary=(not needs.records and not targets) or streamed,
        encoder=needs.encoder if streamed else None,
        encoder_parts=needs.encoder_parts if streamed else None,
        **where,
    )


def run_scan(
    paths: Sequence[str],
    opts: ScanOptions,
    targets: Sequence[Target] = (),
    runtime_version: str | None = None,
    progress: Any = None,
) -> ScanRun:
    """Scan ``paths`` and, with ``targets``, judge every file (``verdicts.judge``) and roll the
    rows up (R-UNIT, R-VARIANT by the environment's runtime: ``runtime_version`` or the torch
    beside the files). Packages on an index among ``paths`` (``pkg:pypi/...``, ``-r:FILE``) are
    read by ``judging.index_inputs``: the wheel of each host CPU among the targets, judged on
    the targets of that CPU only; their records need full records (no summaries, no streamed
    texts), and only packages given means no site-packages scanned."""
    from fatbin_inspect.scanning import ScanResult, ScanStats, coverage, scan

    packages: list[str] = []
    if any(p.startswith(("pkg:", "-r:")) for p in paths):  # (a scan of files imports no index code)
        from fatbin_inspect.containers.index import is_index_input

        packages = [p for p in paths if is_index_input(p)]
    local = [p for p in paths if p not in packages]
    if packages:
        opts = dataclasses.replace(opts, summary=False, encoder=None, encoder_parts=None)
    start = time.monotonic()
    result = scan(local, opts, progress) if local or not packages else ScanResult((), (), ScanStats())
    on: dict[str, Sequence[Target]] = {}
    unread: tuple[FileReport, ...] = ()
    if packages:
        fetched, on, wheels = _package_reports(packages, opts, targets)
        unread = tuple(r for r in fetched if r.error is not None)
        reports = sorted((*result.reports, *fetched), key=lambda r: r.path)
        st = result.stats
        stats = dataclasses.replace(
            st,
            files=st.files + len(wheels),
            bytes=st.bytes + sum(_wheel_size(f) for f in wheels),
            inspected=st.inspected + len(wheels),
            cache_hits=st.cache_hits + sum(f.cached for f in wheels),
        )
        result = dataclasses.replace(result, reports=tuple(reports), stats=stats)
    seconds = time.monotonic() - start
    verdicts: dict[str, Sequence[Verdict]] | None = None
    roll_up: Callable[[Sequence[str]], list[Verdict]] | None = None
    engine_vs: dict[str, list[FileVerdict]] = {}
    if targets:
        from fatbin_inspect.judging.torch import environment_runtime
        from fatbin_inspect.judging.verdicts import distribution_verdicts

        env_rt = environment_runtime(runtime_version, result.reports)
        per_file, roll_up, engine_vs = distribution_verdicts(result.reports, targets, env_rt, on)
        verdicts = dict(per_file)
    cov = coverage.build(result.reports, verdicts, [t.label for t in targets], roll_up)
    return ScanRun(result, cov, tuple(targets), engine_vs, roll_up, seconds, unread)


def _package_reports(
    packages: Sequence[str], opts: ScanOptions, targets: Sequence[Target]
) -> tuple[list[FileReport], dict[str, Sequence[Target]], list[index_inputs.Fetched]]:
    """The records a scan keeps (device code or an error) of each package's wheel per host CPU
    among ``targets`` (none: the command's platform), each attributed to its release
    (``distribution``: "NAME VERSION", as an installed distribution's), and the targets each
    record is judged on, and the wheels read (the scan's stats count them: one file each). The
    wheels are read as ``check`` reads them, cached by their sha256."""
    from fatbin_inspect.inventory.options import Options
    from fatbin_inspect.judging import index_inputs

    inv = opts.inventory
    inv_opts = inv if isinstance(inv, Options) else Options(**(inv or {}))
    groups = index_inputs.host_groups(targets)
    kept: list[FileReport] = []
    on: dict[str, Sequence[Target]] = {}
    wheels: dict[str, index_inputs.Fetched] = {}
    for path in packages:
        for arch, group in groups.items():
            for fetched in index_inputs.fetch_all(path, inv_opts, [arch]):
                if fetched.file is not None:
                    wheels.setdefault(fetched.file.url, fetched)
                dist = f"{fetched.release.name} {fetched.file.version}" if fetched.file else None
                for r in fetched.records:
                    if not (r.fatbins or r.error is not None):
                        continue
                    if r.path in on:  # one file for several host CPUs: judged on all their targets
                        on[r.path] = (*on[r.path], *group)
                        continue
                    kept.append(dataclasses.replace(r, distribution=dist) if dist else r)
                    on[r.path] = group
    return kept, on, list(wheels.values())


def _wheel_size(fetched: index_inputs.Fetched) -> int:
    """A wheel's size: the index's, else its own record's (the zip's size, as read)."""
    if fetched.file is not None and fetched.file.size:
        return fetched.file.size
    from fatbin_inspect.inventory import member_path

    return next((r.size for r in fetched.records if not member_path.is_member(r.path)), 0)
