"""``fatbin-inspect releases NAME --gpu G``: each release of a package on the index, judged per
target before anything is installed, and the newest that runs natively and through the JIT.

Exit 0 when the newest release judged runs natively on every target, 1 when it does not (it
fails, or needs the JIT with ``--fail-on warning``), 2 for usage errors and an index that
cannot be read.
"""

from __future__ import annotations

import click

from fatbin_inspect.cli.common import EXIT_FINDINGS, EXIT_OK, Output, output_option, say
from fatbin_inspect.cli.index_options import index_options
from fatbin_inspect.cli.options import (
    compat_option,
    driver_option,
    examples,
    fail_options,
    format_option,
    gpu_option,
    targets_option,
    ui_options,
)


@examples(
    'fatbin-inspect releases torch --gpu "GTX 1080" --driver 580',
    "fatbin-inspect releases cupy-cuda12x --targets fleet.toml --since 13.0 --format markdown",
)
@click.command("releases")
@click.argument("name")
@gpu_option("GPU: a name ('GTX 1080'), a CC (6.1), an SM (sm_61) or 'auto'.", envvar="FATBIN_INSPECT_GPU")
@driver_option(help="Driver: version (550.54.14), branch (550) or 'auto'; default: newest known.")
@compat_option
@targets_option
@click.option("--since", default=None, metavar="VERSION", help="Only releases from this version on.")
@click.option(
    "--limit",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="At most this many releases, the newest.",
)
@fail_options("error", what="the newest release failing (error) or needing the JIT (warning)")
@format_option("releases")
@output_option
@ui_options
@index_options(requirements=False)
def releases_cmd(
    name: str,
    gpus: tuple[str, ...],
    driver: str | None,
    compat: str | None,
    target_files: tuple[str, ...],
    since: str | None,
    limit: int,
    fail_on: str,
    exit_zero: bool,
    fmt: str,
    output: str | None,
) -> None:
    """Judge each release of the package NAME on the index (the file pip would install on each
    target's host) on each --gpu / --targets node: a versions × targets table and, per target,
    the newest release that runs natively and the newest that runs through the JIT."""
    from packaging.version import InvalidVersion, Version

    from fatbin_inspect import render
    from fatbin_inspect.containers.index import purl
    from fatbin_inspect.judging import FAILING
    from fatbin_inspect.judging.fleet import nearest_policy_targets, resolve_all
    from fatbin_inspect.judging.inputs import verdict_options
    from fatbin_inspect.judging.releases import releases

    view = render.view("releases", fmt)
    release = purl.parse(name if purl.is_purl(name) else f"{purl.PREFIX}{name}")
    if since is not None:
        try:
            Version(since)
        except InvalidVersion:
            raise click.BadParameter(f"{since!r} is no version", param_hint="--since") from None
    targets = resolve_all(
        gpus, driver, {}, target_files, nearest_policy_targets(driver, say), compat, warn=say
    )
    report = releases(release.name, targets, verdict_options(False), since, limit)
    view.write({"report": report}, Output(output, [name]))
    newest = report.rows[0].cells if report.rows else ()
    bad = FAILING[fail_on]
    failed = any(c.verdict in bad or c.verdict in ("no-wheel", "source-only", "error") for c in newest)
    raise SystemExit(EXIT_FINDINGS if failed and not exit_zero else EXIT_OK)
