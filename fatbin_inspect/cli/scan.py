"""``fatbin-inspect scan [PATH...]``: per-distribution coverage of an environment, wheels or images."""

from __future__ import annotations

import dataclasses

import click

from fatbin_inspect.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_STRICT,
    EXIT_USAGE,
    format_option,
    look,
    note_error,
    open_output,
    output_option,
    progress_for,
    read_exit,
    say,
    write_output,
)
from fatbin_inspect.cli.options import (
    compat_option,
    driver_option,
    examples,
    fail_options,
    gpu_option,
    targets_option,
    ui_options,
)
from fatbin_inspect.cli.sbom import digests_for, sbom_text
from fatbin_inspect.errors import UsageError
from fatbin_inspect.judging.torch import torch_mismatches


def _html(paths, run, images=()) -> str:
    """The HTML report: the table's matrix (rows rolled up the same way), files and fatbins, and
    the findings ``check`` would give for the files of the rows that fail or need JIT."""
    from fatbin_inspect.release.gate import check_findings
    from fatbin_inspect.render import findings

    reports = run.result.reports
    report = check_findings(paths, run.targets, run.row_findings(), [r for r in reports if r.error])
    report = dataclasses.replace(report, command="scan", coverage=run.coverage, files=tuple(reports))
    if images:  # an image input is named with its tag, manifest digest and platform
        from fatbin_inspect.render.scan_table import image_head

        named: dict[str, list[str]] = {im["input"]: [] for im in images}
        for im in images:
            named[im["input"]].append(image_head(im))
        shown = [f"{p} ({'; '.join(named[p])})" if p in named else p for p in report.inputs]
        report = dataclasses.replace(report, inputs=tuple(shown))
    return findings.render(report, "html")[0]


@examples(
    "fatbin-inspect scan                          # this interpreter's site-packages",
    "fatbin-inspect scan .venv --gpu auto --verdicts",
    'fatbin-inspect scan dist/*.whl --gpu H100 --gpu "RTX 5090" --files',
    "fatbin-inspect scan image.tar --format json -o scan.json",
)
@click.command("scan")
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=True))  # (image references too)
@gpu_option("Add a verdict column for this GPU (name, 8.9, sm_89, auto).")
@driver_option(help="Driver for --gpu targets (550.54.14, 550, auto; default: newest known).")
@compat_option
@targets_option
@click.option(
    "--runtime",
    "runtime_version",
    default=None,
    metavar="X.Y",
    help="CUDA runtime of the environment (12.8): picks among alternative builds (default: the torch beside them).",
)
@click.option(
    "--files",
    "show_files",
    is_flag=True,
    help="Table: expand every distribution into its files, each with its own verdict.",
)
@click.option(
    "--verdicts",
    "verdicts_only",
    is_flag=True,
    help="Table: only distributions × targets (needs --gpu or --targets); fits 80 columns.",
)
@click.option("--kernels", is_flag=True, help="Decode payloads: every kernel in the JSON (slower).")
@click.option(
    "--jobs",
    "-j",
    type=int,
    default=0,
    envvar="FATBIN_INSPECT_JOBS",
    show_default=True,
    help="Worker processes (0: every core).",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the scan cache.")
@click.option(
    "--executor",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="Where the per-file work runs: this machine's processes, or a Dask cluster (extra 'dask').",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="tcp://HOST:PORT",
    help="Dask scheduler for --executor dask, tcp:// or tls:// (its workers must see the same paths).",
)
@click.option(
    "--scheduler-file",
    default=None,
    type=click.Path(dir_okay=False),
    help="Dask scheduler for --executor dask, from the file `dask scheduler --scheduler-file` wrote.",
)
@click.option(
    "--connect-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30,
    show_default=True,
    metavar="SECONDS",
    help="How long to try to reach the Dask scheduler.",
)
@click.option(
    "--tls-ca-file", default=None, metavar="FILE", help="tls:// scheduler: the CA certificate (PEM)."
)
@click.option(
    "--tls-cert", default=None, metavar="FILE", help="tls:// scheduler: this client's certificate (PEM)."
)
@click.option(
    "--tls-key", default=None, metavar="FILE", help="tls:// scheduler: its key, unless --tls-cert holds it."
)
@click.option(
    "--platform",
    default="",
    metavar="OS/ARCH[/VARIANT]",
    help="Images: the platform to scan (from a multi-platform index; default linux/amd64); "
    "an image whose config says another is an error naming both.",
)
@click.option(
    "--layers",
    "show_layers",
    is_flag=True,
    help="Table: under each image, its layers and the CUDA files each one brought.",
)
@click.option(
    "--insecure-registry",
    "insecure",
    multiple=True,
    metavar="HOST[:PORT]",
    help="Speak plain http to this registry (loopback hosts always do).",
)
@click.option("--strict", is_flag=True, help="Exit 3 when any file could not be read.")
@fail_options("error", what="failures (error) or PTX JIT (warning) of a --gpu target")
@format_option(["table", "json", "html", "cyclonedx"])
@output_option
@ui_options
def scan_cmd(
    paths,
    gpus,
    driver,
    compat,
    target_files,
    runtime_version,
    show_files,
    kernels,
    jobs,
    no_cache,
    executor,
    scheduler,
    scheduler_file,
    connect_timeout,
    tls_ca_file,
    tls_cert,
    tls_key,
    platform,
    show_layers,
    insecure,
    strict,
    verdicts_only,
    fail_on,
    exit_zero,
    fmt,
    output,
):
    """Which installed distributions have device code for which GPUs.

    PATHS: folders, virtualenv or conda prefixes, wheels, conda packages, OCI image layouts and
    .tar images (OCI archives, docker save), images as skopeo names them (DIR:TAG,
    oci-archive:FILE:TAG, docker-archive:FILE:NAME, docker://HOST/REPO:TAG) and - (a docker
    save on standard input) (none: the running interpreter's site-packages). Cache: $FATBIN_INSPECT_CACHE_DIR or the user cache dir; delete it
    at will. Exit 1 when a --gpu target fails to run something (--fail-on warning: or needs JIT).
    """
    _check_usage(jobs, insecure, executor, scheduler, scheduler_file, verdicts_only, gpus, target_files)
    _check_tls(tls_ca_file, tls_cert, tls_key)
    targets: tuple = ()
    if gpus or target_files:
        from fatbin_inspect.judging.fleet import resolve_all

        targets = resolve_all(gpus, driver, None, target_files, compat=compat, warn=say)
    opts = _scan_options(
        fmt,
        targets,
        kernels,
        platform,
        jobs,
        no_cache,
        executor=executor,
        scheduler=scheduler,
        scheduler_file=scheduler_file,
        connect_timeout=connect_timeout,
        tls=(tls_ca_file, tls_cert, tls_key) if tls_cert else None,
    )
    from fatbin_inspect.judging.scan_run import run_scan

    progress = progress_for(fmt, "scanning")
    try:
        run = run_scan(paths, opts, targets, runtime_version, progress)
    finally:
        progress.close()
    for note in run.result.notes:
        say(note)
    for r in run.result.reports:
        note_error(r)
    inputs = [*paths, *(r.path for r in run.result.reports)]  # the output may be none of them
    shown = _Table(output, show_files, verdicts_only, show_layers)
    text = _VIEWS[fmt](run, paths, inputs, output, shown)
    if text is not None:
        write_output(text, output, inputs)
    raise SystemExit(_exit_code(run, paths, strict, fail_on, exit_zero))


def _check_usage(jobs, insecure, executor, scheduler, scheduler_file, verdicts_only, gpus, target_files):
    """Usage errors before anything is read, the workers' cap note, and --insecure-registry
    handed to ``containers.registry`` (in this process and the workers it forks)."""
    from fatbin_inspect.inventory.workers import capped_note

    note = capped_note(jobs)
    if note:
        say(note)
    if insecure:
        _insecure(insecure)
    if executor == "dask":
        _check_dask(scheduler, scheduler_file)
    if verdicts_only and not (gpus or target_files):
        raise UsageError("scan --verdicts: give --gpu or --targets (the verdicts are per target)")


def _check_tls(tls_ca_file, tls_cert, tls_key) -> None:
    if bool(tls_ca_file) != bool(tls_cert) or (tls_key and not tls_cert):
        raise click.UsageError("--tls-ca-file and --tls-cert go together (--tls-key with them)")


def _insecure(hosts) -> None:
    import os

    from fatbin_inspect.containers.registry import INSECURE_ENV

    os.environ[INSECURE_ENV] = ",".join(filter(None, [os.environ.get(INSECURE_ENV), *hosts]))


def _check_dask(scheduler, scheduler_file) -> None:
    if not (scheduler or scheduler_file):
        raise click.UsageError("--executor dask needs --scheduler tcp://HOST:PORT or --scheduler-file FILE")
    if scheduler:
        from fatbin_inspect.scanning.dask_executor import check_address

        check_address(scheduler)


def _scan_options(fmt, targets, kernels, platform, jobs, no_cache, **where):
    """The scan's options for this output: the table needs per-file summaries only (a warm scan
    then loads no full record); the JSON of a scan without targets is encoded by the workers and
    streamed (a warm scan copies the cached bytes); the engine's verdicts and the HTML report need
    the full records. ``where``: the ``ScanOptions`` of the executor (local or Dask)."""
    from fatbin_inspect.judging.scan_run import inventory_fields
    from fatbin_inspect.scanning import ScanOptions

    streamed = fmt == "json" and not targets
    encoder = encoder_parts = None
    if streamed:
        from fatbin_inspect.render.scan_json import file_rest, file_rest_parts

        encoder, encoder_parts = file_rest, file_rest_parts
    inv = inventory_fields(
        kernels=kernels, targets=bool(targets), platform=platform, digests=digests_for(fmt)
    )
    return ScanOptions(
        inventory=inv,
        jobs=jobs,
        cache_dir=None if no_cache else "default",
        summary=(fmt == "table" and not targets) or streamed,
        encoder=encoder,
        encoder_parts=encoder_parts,
        **where,
    )


@dataclasses.dataclass(frozen=True)
class _Table:
    """What the table view is asked for besides the run."""

    output: str | None
    files: bool
    verdicts_only: bool
    layers: bool


def _json_view(run, paths, inputs, output, view) -> None:
    from fatbin_inspect.render import jsondump
    from fatbin_inspect.render.scan_json import scan_document, scan_stream_document

    shown_targets = []
    if run.targets:  # (the engine's renderer is imported only when there are verdicts to show)
        from fatbin_inspect.render.check_json import target_dict

        shown_targets = [target_dict(t) for t in run.targets]
    document = scan_document if run.targets else scan_stream_document
    with open_output(output, inputs) as out:
        jsondump.write(out, document(run.result, run.coverage, run.seconds, shown_targets))


def _sbom_view(run, paths, inputs, output, view) -> str:
    return sbom_text("scan", run.result.reports, run.targets, run.engine, run.roll_up)


def _html_view(run, paths, inputs, output, view) -> str:
    from fatbin_inspect.scanning.images import image_views

    return _html(paths, run, image_views(run.result.images, run.result.reports))


def _table_view(run, paths, inputs, output, view) -> str:
    from fatbin_inspect.render import view as render_view
    from fatbin_inspect.render.scan_table import summary_line
    from fatbin_inspect.scanning.images import image_views

    result, targets = run.result, run.targets
    s = result.stats
    unreadable = sum(1 for r in result.reports if r.error is not None and not r.fatbins)
    summary = summary_line(
        len(result.reports) - unreadable,
        len(run.coverage.rows),
        s.files,
        s.bytes,
        run.seconds,
        s.cache_hits,
        s.inspected,
        unreadable,
    )
    text = render_view("scan", "table")(
        run.coverage,
        summary,
        verdicts_only=view.verdicts_only,
        **look(output),
        files=view.files,
        target_sms=[t.gpu.sm for t in targets],
        headers=[t.host_label or t.gpu.name.replace("NVIDIA ", "").replace("GeForce ", "") for t in targets],
        images=image_views(result.images, result.reports),
        layers=view.layers,
    )
    lines = torch_mismatches(result.reports, run.engine) if targets else []
    if lines:
        text += "\nCUDA runtime differs from torch's (FBI017 in gate --match torch):\n"
        text += "".join(f"  {line}\n" for line in lines)
    return text


# one view per --format: (run, paths, inputs, output, table options) -> text to write, or None
# when the view wrote its output itself (the JSON is streamed)
_VIEWS = {"json": _json_view, "cyclonedx": _sbom_view, "html": _html_view, "table": _table_view}


def _exit_code(run, paths, strict: bool, fail_on: str, exit_zero: bool) -> int:
    """2 when an input named on the command line could not be opened at all (``read_exit``), 3
    (--strict) when a file was unreadable or not a regular file, 3 when no Dask worker could
    read a file, 1 when a row fails at the --fail-on level, else 0."""
    result = run.result
    if read_exit(paths, result.reports, False) == EXIT_USAGE:
        return EXIT_USAGE
    if strict:
        for path, why in result.skipped:  # like ``list --strict``: a FIFO or a loop is unreadable
            say(f"{path}: {why}")
    if result.unread:  # no Dask worker could read them: the answer is incomplete
        say(f"{len(result.unread)} file{'s' * (len(result.unread) != 1)} not readable on any Dask worker")
    if run.incomplete(strict):
        return EXIT_STRICT
    return EXIT_FINDINGS if run.fails(fail_on) and not exit_zero else EXIT_OK
