"""``fatbin-inspect [list] PATH...``: every fat binary and entry, as a table or JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from fatbin_inspect.cli.common import (
    Output,
    format_option,
    note_error,
    output_option,
    progress_for,
)
from fatbin_inspect.cli.index_options import index_options
from fatbin_inspect.cli.options import driver_option, examples, gpu_option, ui_options
from fatbin_inspect.inventory.options import Options

if TYPE_CHECKING:
    from fatbin_inspect.compat.targets import Target

# The judging step (judging.verdicts, and with it the compatibility engine and its data) is
# imported only when there are targets: a plain listing does not pay for it.


@examples(
    "fatbin-inspect app.so                      # every fatbin and entry",
    "fatbin-inspect torch-*.whl --entries summary",
    "fatbin-inspect lib.so --kernels            # every kernel, with registers and shared memory",
    "fatbin-inspect build/ --gpu H100 --format json -o inventory.json",
)
@click.command("list")
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=True))  # (image references, pkg:pypi/... too)
@click.option("--kernels", is_flag=True, help="Decode payloads: every kernel, with per-kernel resources.")
@click.option("--details", is_flag=True, help="Decode cubins: ELF ABI, type, toolkit, device-link.")
@click.option(
    "--sections-only",
    "--no-scan",
    "no_scan",
    is_flag=True,
    help="Only read fatbin sections; skip the magic scan of other bytes (--no-scan: old name).",
)
@click.option(
    "--entries",
    type=click.Choice(["auto", "all", "summary"]),
    default="auto",
    show_default=True,
    help="Table: list every entry, or a per-arch summary per file (auto: entries for small files).",
)
@click.option(
    "--all-members", is_flag=True, help="Report every candidate archive member, even without device code."
)
@click.option("--strict", is_flag=True, help="Exit 3 when any input could not be read.")
@gpu_option("Also give a verdict for this GPU (name, 8.9, sm_89, auto); `check` explains more.")
@driver_option(help="Driver for --gpu (550.54.14, 550, auto; default: newest known).")
@format_option("list")
@output_option
@ui_options
@index_options()
def list_cmd(
    paths: tuple[str, ...],
    kernels: bool,
    details: bool,
    no_scan: bool,
    entries: str,
    all_members: bool,
    strict: bool,
    gpus: tuple[str, ...],
    driver: str | None,
    fmt: str,
    output: str | None,
) -> None:
    """List every CUDA fat binary and entry in PATHS (files, archives, wheels, directories).

    With --gpu, add the verdict per file and target: native, jit or fail (CUDA error, rule).
    Images as skopeo names them too: DIR:TAG, oci-archive:FILE:TAG, docker-archive:FILE:NAME,
    docker://HOST/REPO:TAG, and - (a docker save on standard input)."""
    from fatbin_inspect import render
    from fatbin_inspect.judging.list_run import run_list
    from fatbin_inspect.render.list_views import Shown

    if not paths:
        raise click.UsageError("give a PATH, a pkg:pypi/NAME[@VERSION] or -r FILE")
    _check_paths(paths)
    targets = _targets(gpus, driver)
    view = render.view("list", fmt)
    opts = Options(
        kernels=kernels,
        details=details or kernels,
        scan_hidden=not no_scan,
        members="all" if all_members else "device",
        probe_small=bool(targets),
    )
    seen: list = list(paths)  # inputs and record paths: the output may be none of them
    with progress_for(view, "reading") as progress:
        run = run_list(paths, opts, targets, view.needs, note_error, progress, seen)
    view.write(run, Output(output, seen), Shown(entries))
    from fatbin_inspect.cli.common import read_exit

    raise SystemExit(read_exit(paths, run.errors, strict))


def _check_paths(paths: Sequence[str]) -> None:
    """Each path exists, each image reference is well formed (else exit 2); WHEEL!MEMBER is read
    in place."""
    from fatbin_inspect.containers.index import is_index_input
    from fatbin_inspect.inventory.roots import resolve_roots
    from fatbin_inspect.judging.inputs import check_roots, is_member_root

    check_roots([p for p in paths if is_index_input(p)])
    on_disk = [p for p in paths if not is_member_root(p) and not is_index_input(p)]
    if on_disk:
        resolve_roots(on_disk)


def _targets(gpus: tuple[str, ...], driver: str | None) -> tuple[Target, ...]:
    """``--gpu`` targets with one ``--driver``, resolved as every command resolves them
    (``judging.fleet.resolve_all``); none without ``--gpu``."""
    if not gpus:
        return ()
    from fatbin_inspect.judging.fleet import resolve_all

    return resolve_all(gpus, driver, None, ())
