"""``fatbin-inspect verify PATH...``: load every fatbin with the driver and compare with the prediction."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from fatbin_inspect.cli.common import (
    EXIT_FINDINGS,
    EXIT_NO_DEVICE,
    EXIT_OK,
    Output,
    format_option,
    output_option,
)
from fatbin_inspect.cli.options import examples, fail_options, ui_options
from fatbin_inspect.errors import DeviceError, UsageError

if TYPE_CHECKING:
    from fatbin_inspect.compat.targets import Target
    from fatbin_inspect.formats.model import FileReport
    from fatbin_inspect.verify.compare import ImageCheck, Loader, Predictor


def _target(env: dict[str, str]) -> tuple[Target | None, str | None]:
    """The engine's target for the local GPU and driver, or (None, why not)."""
    from fatbin_inspect.compat.targets import resolve_targets
    from fatbin_inspect.system.stack import local_devices, proc_driver_version

    k = proc_driver_version("/proc")
    driver = k.version if k else "auto"
    try:
        targets = resolve_targets(["auto"], driver, env, local_devices(["auto"], driver))
    except (DeviceError, UsageError) as exc:
        return None, str(exc)
    return targets[0], None


@examples(
    "fatbin-inspect verify build/libkernels.so",
    "fatbin-inspect verify torch/lib/libtorch_cuda.so --max-fatbins 50 --findings-only",
)
@click.command("verify")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--device", default=0, show_default=True, help="CUDA device ordinal to load on.")
@click.option(
    "--timeout", default=120.0, show_default=True, help="Seconds one load may take before it counts as hung."
)
@click.option("--no-entries", is_flag=True, help="Load whole fatbins only, not each entry alone.")
@click.option("--max-fatbins", type=int, default=None, help="At most N fatbins per file (large libraries).")
@click.option("--findings-only", is_flag=True, help="Table: print findings and the summary, not every image.")
@fail_options("error", what="contradicted predictions and hung or crashed loads")
@format_option("verify")
@output_option
@ui_options
def verify_cmd(
    paths: tuple[str, ...],
    device: int,
    timeout: float,
    no_entries: bool,
    max_fatbins: int | None,
    findings_only: bool,
    fail_on: str,
    exit_zero: bool,
    fmt: str,
    output: str | None,
) -> None:
    """Load every fatbin in PATHS with cuModuleLoadData (cuda-python) in child processes, and
    compare with the prediction for this GPU and driver. Each fatbin is loaded whole, again with
    CUDA_DISABLE_PTX_JIT=1 (native or JIT?), then entry by entry. A hang or crash costs one result.

    \b
    Exit codes: 0 every prediction confirmed, 1 a prediction contradicted or a
    load hung/crashed, 2 usage error, 4 no GPU, driver or cuda-python
    (pip install 'fatbin-inspect[gpu]').
    """
    from fatbin_inspect import render
    from fatbin_inspect.verify import compare
    from fatbin_inspect.verify.runner import ChildSession, NoDevice, child_env

    view = render.view("verify", fmt)
    env = child_env(os.environ, disable_jit=False)
    target, predict, label = _prediction(env)
    checks: list = []
    reports: list = []
    try:
        with (
            ChildSession(env, timeout, device) as normal,
            ChildSession(child_env(os.environ, disable_jit=True), timeout, device) as nojit,
        ):
            checks = _load_all(paths, normal.load, nojit.load, predict, not no_entries, max_fatbins, reports)
    except NoDevice as exc:
        click.echo(f"fatbin-inspect: verify needs a GPU: {exc}", err=True)
        raise SystemExit(EXIT_NO_DEVICE) from None
    files = compare.file_checks(reports, checks, target) if target else []
    found = compare.findings(checks) + compare.file_findings(files)
    run = {"target": label, "checks": checks, "findings": found, "images": not findings_only, "files": files}
    view.write(run, Output(output))
    bad = bool(found) or any(c.actual == compare.ERROR for c in checks)
    raise SystemExit(EXIT_FINDINGS if bad and not (fail_on == "never" or exit_zero) else EXIT_OK)


def _load_all(
    paths: Sequence[str],
    load: Loader,
    load_nojit: Loader,
    predict: Predictor | None,
    entries: bool,
    max_fatbins: int | None,
    reports: list[FileReport],
) -> list[ImageCheck]:
    """Every fatbin of every regular file under ``paths`` loaded in the two child sessions."""
    from fatbin_inspect.inventory.walk import iter_files
    from fatbin_inspect.verify import compare

    checks: list[ImageCheck] = []
    for root in paths:
        for path, skip in iter_files(root):
            if skip is None:
                checks += compare.check_file(
                    path, load, load_nojit, predict, entries=entries, max_fatbins=max_fatbins, reports=reports
                )
    return checks


def _prediction(env: dict[str, str]) -> tuple[Target | None, Predictor | None, str]:
    """(target, predictor, label) of this GPU and driver; no target: no prediction, and why."""
    from fatbin_inspect.verify import compare

    target, why = _target(env)
    if target is None:
        return None, None, f"no prediction ({why})"
    return target, compare.engine_predictor(target), target.label
