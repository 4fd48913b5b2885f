"""``--format cyclonedx`` of ``scan``, ``list`` and ``gate`` (docs/sbom.md): the records are read
with SHA-256 digests (``digests_for``), ``judging.sbom`` builds the bill of materials and
``render.cyclonedx`` writes it. The renderer needs the ``sbom`` extra (cyclonedx-python-lib);
without it the command stops with a usage error before it reads anything."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone

from fatbin_inspect.cli.common import EXIT_FINDINGS, EXIT_OK, note_error, read_exit, write_output
from fatbin_inspect.errors import UsageError

FORMAT = "cyclonedx"


def digests_for(fmt: str) -> bool:
    """Whether the records need their SHA-256 (only for ``--format cyclonedx``: no other format
    pays for hashing); a usage error when that format was asked for and cannot be written."""
    if fmt != FORMAT:
        return False
    try:
        import cyclonedx.output.json  # noqa: F401  (the renderer's library, imported here only to check)
    except ImportError:
        raise UsageError(
            "--format cyclonedx needs cyclonedx-python-lib: pip install 'fatbin-inspect[sbom]'"
        ) from None
    return True


def timestamp() -> datetime:
    """``metadata.timestamp``: ``SOURCE_DATE_EPOCH`` (reproducible builds) when set, else now."""
    raw = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return datetime.now(timezone.utc).replace(microsecond=0)
    if not raw.isdigit():
        raise UsageError(f"SOURCE_DATE_EPOCH: not a number of seconds since 1970: {raw[:40]!r}")
    try:
        return datetime.fromtimestamp(int(raw), timezone.utc)
    except (OverflowError, OSError, ValueError):
        raise UsageError(f"SOURCE_DATE_EPOCH: out of range: {raw[:40]!r}") from None


def sbom_text(
    command: str, reports, targets=(), verdicts=None, roll_up=None, findings=None, outcome=None
) -> str:
    """The CycloneDX document of ``reports`` (``judging.sbom.build`` takes the rest)."""
    from fatbin_inspect.judging.sbom import build
    from fatbin_inspect.render.cyclonedx import render

    sbom = build(command, reports, targets, verdicts, roll_up, findings, outcome)
    return render(sbom, timestamp())


def list_sbom(paths: Sequence[str], opts, targets, output: str | None, strict: bool) -> int:
    """``list --format cyclonedx``: the exit code (3 with ``--strict`` when an input was unreadable)."""
    from fatbin_inspect.judging.inputs import iter_reports

    reports = []
    for r in iter_reports(paths, opts):
        note_error(r)
        reports.append(r)
    write_output(sbom_text("list", reports, targets), output, [*paths, *(r.path for r in reports)])
    return read_exit(paths, reports, strict)


def gate_sbom(
    report, reports, fail_on: str, output: str | None, exit_zero: bool, inputs: Iterable[str]
) -> int:
    """``gate --format cyclonedx``: the files with their findings per target; exit 1 as ``gate``
    does when a finding reaches ``fail_on``."""
    from fatbin_inspect.release.findings import fails

    failed = fails(report.findings, fail_on)
    text = sbom_text("gate", reports, findings=report, outcome="fail" if failed else "pass")
    write_output(text, output, [*inputs, *(c.path for c in report.checks)])
    return EXIT_FINDINGS if failed and not exit_zero else EXIT_OK
