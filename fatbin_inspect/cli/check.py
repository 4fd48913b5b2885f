"""``fatbin-inspect check PATH... --gpu GPU [--driver VER]``: native, JIT or fail, and why.

Exit 0 when everything loads natively (or has no device code), 1 when something fails, or when
something needs JIT and ``--fail-on warning``; 2 for usage errors and unreadable inputs.
``table`` and ``json`` (check.schema.json) show the verdicts; the other formats show them as the
findings of ``gate`` (FBI001-FBI004, FBI013, FBI008 for unreadable inputs; JIT-only is a warning).
"""

from __future__ import annotations

import click

from fatbin_inspect.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    Output,
    format_option,
    note_error,
    output_option,
    progress_for,
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
from fatbin_inspect.compat import jit
from fatbin_inspect.judging.check_run import run_check
from fatbin_inspect.judging.fleet import nearest_policy_targets, resolve_all
from fatbin_inspect.judging.inputs import check_roots, parse_env, verdict_options


@examples(
    'fatbin-inspect check app --gpu H100 --gpu "RTX 5090" --driver 570',
    "fatbin-inspect check dist/*.whl --gpu auto --fail-on warning",
    "fatbin-inspect check lib.so --targets doctor-*.json --format sarif -o check.sarif --exit-zero",
)
@click.command("check")
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=True))  # (WHEEL!MEMBER, pkg:pypi/... too)
@gpu_option(
    "GPU: a name ('RTX 4090', 'NVIDIA H100 80GB HBM3'), a CC (8.9), an SM (sm_89) or 'auto'.",
    envvar="FATBIN_INSPECT_GPU",
)
@driver_option(
    help="Driver: Linux version (550.54.14), branch (550), Windows version (581.29 or 32.0.15.8129), "
    "Jetson release (jetpack-6.2, l4t-36.4) or 'auto'; default: newest known branch.",
    envvar=["FATBIN_INSPECT_DRIVER"],
)
@compat_option
@targets_option
@click.option(
    "--env",
    "env_pairs",
    multiple=True,
    metavar="NAME=VALUE",
    help="Environment of the deployment: CUDA_FORCE_PTX_JIT=1, CUDA_DISABLE_PTX_JIT=1, "
    "CUDA_CACHE_DISABLE=1, CUDA_CACHE_MAXSIZE=BYTES (the JIT cost repeats when its cache cannot keep it). "
    "Repeatable.",
)
@click.option(
    "--inherit-env", is_flag=True, help="Also read CUDA_* switches from this process's environment."
)
@fail_options("error", what="failures (error) or PTX JIT (warning)")
@click.option(
    "--long", "long_view", is_flag=True, help="Table: one block per file and target instead of the matrix."
)
@click.option("--per-fatbin", is_flag=True, help="JSON: add every fatbin's verdict and every entry's.")
@click.option(
    "--kernels",
    "all_kernels",
    is_flag=True,
    help="Decode every payload: name the kernels that have no image, or exist only for other GPUs (slower).",
)
@format_option("check")
@output_option
@ui_options
@index_options()
def check_cmd(
    paths: tuple[str, ...],
    gpus: tuple[str, ...],
    driver: str | None,
    compat: str | None,
    target_files: tuple[str, ...],
    env_pairs: tuple[str, ...],
    inherit_env: bool,
    fail_on: str,
    long_view: bool,
    exit_zero: bool,
    per_fatbin: bool,
    all_kernels: bool,
    fmt: str,
    output: str | None,
) -> None:
    """Predict whether the CUDA code in PATHS loads on each --gpu with --driver (native / jit / fail).

    Without --gpu and --targets, the targets of the nearest pyproject.toml's [tool.fatbin-inspect]
    are used.
    """
    from fatbin_inspect import render
    from fatbin_inspect.render.check_views import Shown

    if not paths:
        raise click.UsageError("give a PATH, a pkg:pypi/NAME[@VERSION] or -r FILE")
    view = render.view("check", fmt)
    check_roots(paths)
    env = parse_env(env_pairs, inherit_env)
    cache = jit.cache_settings(env)  # the deployment's JIT cache: does the JIT repeat at every start
    targets = resolve_all(
        gpus, driver, env, target_files, nearest_policy_targets(driver, say), compat, warn=say
    )
    seen: list = list(paths)  # inputs and record paths: the output may be none of them
    with progress_for(view, "checking") as progress:
        run = run_check(
            paths,
            targets,
            verdict_options(all_kernels),
            view.needs,
            fail_on,
            cache,
            note=note_error,
            progress=progress,
            seen=seen,
        )
    view.write(run, Output(output, seen), Shown(long_view, per_fatbin, all_kernels))
    if run.unreadable:
        raise SystemExit(EXIT_USAGE)
    raise SystemExit(EXIT_FINDINGS if run.failed and not exit_zero else EXIT_OK)
