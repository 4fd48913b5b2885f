"""``fatbin-inspect scan [PATH...]``: per-distribution coverage of an environment, wheels or images."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from fatbin_inspect.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_STRICT,
    EXIT_USAGE,
    Output,
    format_option,
    note_error,
    output_option,
    progress_for,
    read_exit,
    say,
)
from fatbin_inspect.cli.index_options import index_options
from fatbin_inspect.cli.options import (
    compat_option,
    driver_option,
    examples,
    fail_options,
    gpu_option,
    targets_option,
    ui_options,
)
from fatbin_inspect.errors import UsageError

if TYPE_CHECKING:
    from fatbin_inspect.judging.scan_run import ScanRun


@examples(
    "fatbin-inspect scan                          # this interpreter's site-packages",
    "fatbin-inspect scan .venv --gpu auto --verdicts",
    'fatbin-inspect scan dist/*.whl --gpu H100 --gpu "RTX 5090" --files',
    "fatbin-inspect scan image.tar --format json -o scan.json",
    "fatbin-inspect scan pkg:pypi/torch@2.8.0 -r requirements.txt --gpu 'RTX 5090'",
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
@format_option("scan")
@output_option
@ui_options
@index_options(platform_flag="--wheel-platform")
def scan_cmd(
    paths: tuple[str, ...],
    gpus: tuple[str, ...],
    driver: str | None,
    compat: str | None,
    target_files: tuple[str, ...],
    runtime_version: str | None,
    show_files: bool,
    kernels: bool,
    jobs: int,
    no_cache: bool,
    executor: str,
    scheduler: str | None,
    scheduler_file: str | None,
    connect_timeout: float,
    tls_ca_file: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    platform: str,
    show_layers: bool,
    insecure: tuple[str, ...],
    strict: bool,
    verdicts_only: bool,
    fail_on: str,
    exit_zero: bool,
    fmt: str,
    output: str | None,
) -> None:
    """Which installed distributions have device code for which GPUs.

    PATHS: folders, virtualenv or conda prefixes, wheels, conda packages, OCI image layouts and
    .tar images (OCI archives, docker save), images as skopeo names them (DIR:TAG,
    oci-archive:FILE:TAG, docker-archive:FILE:NAME, docker://HOST/REPO:TAG), - (a docker
    save on standard input) and packages on an index, pkg:pypi/NAME[@VERSION] or -r FILE (each
    judged on the wheel pip would install on its targets' host CPU) (none: the running
    interpreter's site-packages). Cache: $FATBIN_INSPECT_CACHE_DIR or the user cache dir; delete it
    at will. Exit 1 when a --gpu target fails to run something (--fail-on warning: or needs JIT).
    """
    from fatbin_inspect import render
    from fatbin_inspect.judging.scan_run import run_scan, scan_options
    from fatbin_inspect.render.scan_views import Shown

    _check_usage(jobs, insecure, executor, scheduler, scheduler_file, verdicts_only, gpus, target_files)
    _check_tls(tls_ca_file, tls_cert, tls_key)
    targets: tuple = ()
    if gpus or target_files:
        from fatbin_inspect.judging.fleet import resolve_all

        targets = resolve_all(gpus, driver, None, target_files, compat=compat, warn=say)
    view = render.view("scan", fmt)
    opts = scan_options(
        view.needs,
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
    progress = progress_for(view, "scanning")
    try:
        run = run_scan(paths, opts, targets, runtime_version, progress)
    finally:
        progress.close()
    for note in run.result.notes:
        say(note)
    for r in run.result.reports:
        note_error(r)
    inputs = [*paths, *(r.path for r in run.result.reports)]  # the output may be none of them
    view.write(run, Output(output, inputs), Shown(paths, show_files, verdicts_only, show_layers))
    raise SystemExit(_exit_code(run, paths, strict, fail_on, exit_zero))


def _check_usage(
    jobs: int,
    insecure: tuple[str, ...],
    executor: str,
    scheduler: str | None,
    scheduler_file: str | None,
    verdicts_only: bool,
    gpus: tuple[str, ...],
    target_files: tuple[str, ...],
) -> None:
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


def _check_tls(tls_ca_file: str | None, tls_cert: str | None, tls_key: str | None) -> None:
    if bool(tls_ca_file) != bool(tls_cert) or (tls_key and not tls_cert):
        raise click.UsageError("--tls-ca-file and --tls-cert go together (--tls-key with them)")


def _insecure(hosts: tuple[str, ...]) -> None:
    import os

    from fatbin_inspect.containers.registry import INSECURE_ENV

    os.environ[INSECURE_ENV] = ",".join(filter(None, [os.environ.get(INSECURE_ENV), *hosts]))


def _check_dask(scheduler: str | None, scheduler_file: str | None) -> None:
    if not (scheduler or scheduler_file):
        raise click.UsageError("--executor dask needs --scheduler tcp://HOST:PORT or --scheduler-file FILE")
    if scheduler:
        from fatbin_inspect.scanning.dask_executor import check_address

        check_address(scheduler)


def _exit_code(run: ScanRun, paths: tuple[str, ...], strict: bool, fail_on: str, exit_zero: bool) -> int:
    """2 when an input named on the command line could not be opened at all (``read_exit``) or a
    package asked of an index could not be judged (no such release, an sdist only, the index
    unreachable), 3 (--strict) when a file was unreadable or not a regular file, 3 when no Dask
    worker could read a file, 1 when a row fails at the --fail-on level, else 0."""
    result = run.result
    if run.unread_packages or read_exit(paths, result.reports, False) == EXIT_USAGE:
        return EXIT_USAGE
    if strict:
        for path, why in result.skipped:  # like ``list --strict``: a FIFO or a loop is unreadable
            say(f"{path}: {why}")
    if result.unread:  # no Dask worker could read them: the answer is incomplete
        say(f"{len(result.unread)} file{'s' * (len(result.unread) != 1)} not readable on any Dask worker")
    if run.incomplete(strict):
        return EXIT_STRICT
    return EXIT_FINDINGS if run.fails(fail_on) and not exit_zero else EXIT_OK
