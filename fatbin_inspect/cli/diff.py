"""``fatbin-inspect diff OLD NEW``: archs and kernels added and dropped between two releases.

Exit 0, or 1 with ``--fail-on warning`` (``--fail-on-dropped``) when an arch, kernels or a file with device code were
dropped; 2 on usage or internal error. Machine formats render the drops as findings
(FBI010-FBI012); ``--format json`` adds every file's changes under ``diff``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

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
)
from fatbin_inspect.cli.index_options import index_options
from fatbin_inspect.cli.options import examples, fail_options, ui_options
from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.release.findings import fails


@examples(
    "fatbin-inspect diff old.whl new.whl",
    "fatbin-inspect diff dist-1.0/ dist-1.1/ --fail-on warning   # any drop fails",
    "fatbin-inspect diff old.whl new.whl --no-kernels --format markdown -o diff.md",
)
@click.command("diff")
@click.argument("old", type=click.Path())  # (pkg:pypi/NAME@VERSION too)
@click.argument("new", type=click.Path())
@click.option(
    "--fail-on-dropped",
    is_flag=True,
    envvar="FATBIN_INSPECT_FAIL_ON_DROPPED",
    help="Exit 1 when an arch, kernels or a file with device code were dropped (= --fail-on warning).",
)
@click.option(
    "--kernels/--no-kernels",
    default=True,
    show_default=True,
    help="Compare kernel names too (decodes every image).",
)
@fail_options("never", what="drops (error: an arch dropped; warning: kernels or a file too)")
@format_option("diff")
@output_option
@click.option("--strict", is_flag=True, help="Exit 3 (not 2) when an input could not be read.")
@ui_options
@index_options(requirements=False)
def diff_cmd(
    old: str,
    new: str,
    fail_on_dropped: bool,
    kernels: bool,
    fail_on: str,
    exit_zero: bool,
    strict: bool,
    fmt: str,
    output: str | None,
) -> None:
    """Compare the device code of OLD and NEW (files, wheels or directories).

    An input that cannot be read (a truncated wheel) is an error, not "everything added": the
    report is still written, and the exit code is 2 (3 with --strict)."""
    from fatbin_inspect import render
    from fatbin_inspect.judging.inputs import check_roots, iter_reports
    from fatbin_inspect.release import diff as diff_mod

    check_roots([old, new])
    view = render.view("diff", fmt)
    opts = Options(kernels=kernels, details=kernels)
    seen: list[str] = [old, new]  # inputs and record paths: the output may be none of them
    unreadable: list[FileReport] = []

    def noted(reports: Iterable[FileReport]) -> Iterator[FileReport]:
        for r in reports:
            seen.append(r.path)
            if r.error is not None:
                note_error(r)
                unreadable.append(r)
            yield r

    with progress_for(view, "comparing") as progress:
        d = diff_mod.diff(
            *_side(old, noted(iter_reports([old], opts, progress))),
            *_side(new, noted(iter_reports([new], opts, progress))),
        )
    report = diff_mod.findings(d)
    level = "warning" if fail_on_dropped else fail_on
    view.write({"d": d, "report": report, "fail_on": level}, Output(output, seen))
    if unreadable:
        raise SystemExit(EXIT_STRICT if strict else EXIT_USAGE)
    raise SystemExit(EXIT_FINDINGS if fails(report.findings, level) and not exit_zero else EXIT_OK)


def _side(root: str, reports: Iterable[FileReport]) -> tuple[Iterable[FileReport], str]:
    """One side of the diff and the root its paths are matched under: the input, or for a
    package from an index (read first) the folder of its wheel's URL."""
    from fatbin_inspect.containers.index import is_index_input

    if not is_index_input(root):
        return reports, root.rstrip("/")
    read = list(reports)
    container = read[0].path.split("!", 1)[0] if read else root
    return read, container.rpartition("/")[0] or root
