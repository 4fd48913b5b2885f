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
    look,
    note_error,
    open_output,
    output_option,
    progress_for,
    say,
    write_output,
)
from fatbin_inspect.cli.findings import findings_format_option, with_views, write_findings
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
from fatbin_inspect.judging import FAILING
from fatbin_inspect.judging.fleet import nearest_policy_targets, resolve_all
from fatbin_inspect.judging.inputs import check_roots, parse_env, verdict_options
from fatbin_inspect.judging.verdicts import judge_paths


def _write_json(
    judged, targets, per_fatbin: bool, unreadable: list, bad: frozenset[str], output, seen=(), cache=None
) -> list:
    """The check document, streamed: each result written as it is judged; returns the first
    verdict in ``bad`` (all the exit code needs), not the verdicts."""
    from fatbin_inspect.render import jsondump
    from fatbin_inspect.render.check_json import check_document, result_dict

    worst: list = []
    index = {t: i for i, t in enumerate(targets)}

    def results():
        for v in judged:
            if v.verdict in bad and not worst:
                worst.append(v)
            yield result_dict(v, index[v.target], per_fatbin, cache or jit.DEFAULT_CACHE)

    errors = ({"path": r.path, "message": r.error.message, "offset": r.error.offset} for r in unreadable)
    doc = check_document(targets, [], per_fatbin, [])
    doc.update(results=jsondump.Items(results()), errors=jsondump.Items(errors))
    with open_output(output, seen) as out:
        jsondump.write(out, doc)
    return worst


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
@findings_format_option
@output_option
@ui_options
@index_options()
def check_cmd(
    paths,
    gpus,
    driver,
    compat,
    target_files,
    env_pairs,
    inherit_env,
    fail_on,
    long_view,
    exit_zero,
    per_fatbin,
    all_kernels,
    fmt,
    output,
):
    """Predict whether the CUDA code in PATHS loads on each --gpu with --driver (native / jit / fail).

    Without --gpu and --targets, the targets of the nearest pyproject.toml's [tool.fatbin-inspect]
    are used.
    """
    if not paths:
        raise click.UsageError("give a PATH, a pkg:pypi/NAME[@VERSION] or -r FILE")
    check_roots(paths)
    env = parse_env(env_pairs, inherit_env)
    cache = jit.cache_settings(env)  # the deployment's JIT cache: does the JIT repeat at every start
    targets = resolve_all(
        gpus, driver, env, target_files, nearest_policy_targets(driver, say), compat, warn=say
    )
    unreadable: list = []
    kept: list | None = [] if fmt == "html" else None  # the records --format html drills into
    seen: list = list(paths)  # inputs and record paths: the output may be none of them
    bad = FAILING[fail_on]
    with progress_for(fmt, "checking") as progress:
        judged = judge_paths(
            paths,
            targets,
            unreadable,
            verdict_options(all_kernels),
            kept,
            note=note_error,
            progress=progress,
            seen=seen,
        )
        verdicts = (
            _write_json(judged, targets, per_fatbin, unreadable, bad, output, seen, cache)
            if fmt == "json"
            else list(judged)
        )
    if fmt == "table":
        write_output(_table(targets, verdicts, long_view, all_kernels, cache, output), output, seen)
    elif fmt != "json":  # (the JSON is written as judged)
        _findings(paths, targets, verdicts, unreadable, kept, fmt, fail_on, output, seen)
    if unreadable:
        raise SystemExit(EXIT_USAGE)
    failed = any(v.verdict in bad for v in verdicts) and not exit_zero
    raise SystemExit(EXIT_FINDINGS if failed else EXIT_OK)


def _table(targets, verdicts, long_view: bool, all_kernels: bool, cache, output) -> str:
    """Several targets or files: the matrix, a verdict per file and target on one line each; one
    file and target, or --long: every verdict with its reasons."""
    from fatbin_inspect.render import view

    matrix = not long_view and (len(targets) > 1 or len({v.path for v in verdicts}) > 1)
    draw = view("check", "table" if matrix else "long")
    return draw(targets, verdicts, kernels=all_kernels, cache=cache, **look(output))


def _findings(paths, targets, verdicts, unreadable, kept, fmt, fail_on, output, seen) -> None:
    """The findings formats (SARIF, JUnit, Markdown, HTML, ...): the verdicts as check findings."""
    from fatbin_inspect.release.gate import check_findings

    report = check_findings(paths, targets, verdicts, unreadable)
    if fmt == "html":
        report = with_views(report, kept, verdicts)
    write_findings(report, fmt, fail_on, output, seen)
