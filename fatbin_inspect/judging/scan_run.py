"""The scan run: the records of the inputs, their verdicts per target and the coverage matrix —
what ``scan`` shows and the library's ``scan()`` returns (docs/format.md, "scan")."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fatbin_inspect.judging.needs import Needs

if TYPE_CHECKING:  # a warm scan without targets imports neither the engine nor the parsers
    from fatbin_inspect.compat.targets import Target
    from fatbin_inspect.compat.verdict import FileVerdict
    from fatbin_inspect.scanning import ScanOptions, ScanResult
    from fatbin_inspect.scanning.coverage import Coverage


@dataclass(frozen=True)
class ScanRun:
    result: ScanResult
    coverage: Coverage
    targets: tuple[Target, ...]
    # the engine's verdicts of each file with device code (one per target): the findings of the
    # HTML report, the SBOM's verdicts and FBI017 are made of them
    engine: Mapping[str, list[FileVerdict]]
    roll_up: Callable[[Sequence[str]], list] | None
    seconds: float  # wall time of the scan itself (the table's summary line says it)

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
    beside the files)."""
    from fatbin_inspect.scanning import coverage, scan

    start = time.monotonic()
    result = scan(paths, opts, progress)
    seconds = time.monotonic() - start
    verdicts, roll_up, engine_vs = None, None, {}
    if targets:
        from fatbin_inspect.judging.torch import environment_runtime
        from fatbin_inspect.judging.verdicts import distribution_verdicts

        env_rt = environment_runtime(runtime_version, result.reports)
        verdicts, roll_up, engine_vs = distribution_verdicts(result.reports, targets, env_rt)
    cov = coverage.build(result.reports, verdicts, [t.label for t in targets], roll_up)
    return ScanRun(result, cov, tuple(targets), engine_vs, roll_up, seconds)
