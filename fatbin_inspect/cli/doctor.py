"""``fatbin-inspect doctor``: this machine's CUDA stack, the two conditions, the classic mismatches."""

from __future__ import annotations

import dataclasses

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


@examples(
    "fatbin-inspect doctor",
    "fatbin-inspect doctor --format json -o doctor-$(hostname).json   # feed to --targets",
    'fatbin-inspect doctor --format json --host "$NODE_NAME"   # in a pod: name the node',
)
@click.command("doctor")
@click.option(
    "--no-torch-archs",
    is_flag=True,
    help="Do not read torch's arch list from libtorch_cuda.so (a large file).",
)
@click.option(
    "--host",
    metavar="NAME",
    callback=lambda _ctx, _param, value: _host_name(value),
    help="Name the report's host NAME (default: this machine's hostname, which in a container is "
    "the container's): --targets names a fleet's nodes by it.",
)
@fail_options("error", what="failed conditions (error) or mismatch warnings (warning)")
@format_option("doctor")
@output_option
@ui_options
def doctor_cmd(
    no_torch_archs: bool, host: str | None, fail_on: str, exit_zero: bool, fmt: str, output: str | None
) -> None:
    """Show the CUDA stack of this machine, one layer a line: GPUs, kernel driver, libcuda in use,
    every CUDA runtime, nvcc, torch, the environment switches; then whether the driver serves the
    runtime and the GPU, and warnings for classic mismatches. Needs no GPU: what is missing is said.

    \b
    Exit codes: 0 nothing fails, 1 a condition fails, 4 no NVIDIA driver or GPU
    found (the report is printed all the same).
    """
    from fatbin_inspect import render
    from fatbin_inspect.compat import data
    from fatbin_inspect.system import stack as stack_mod
    from fatbin_inspect.system.diagnose import diagnose

    view = render.view("doctor", fmt)
    st = stack_mod.discover(
        torch_archs=not no_torch_archs, tegra_ccs=[f"{a}.{b}" for a, b in data.tegra_ccs()]
    )
    if host:
        st = dataclasses.replace(st, host=host)
    diag = diagnose(st)
    view.write({"stack": st, "diag": diag}, Output(output))
    failing = diag.failed or (fail_on == "warning" and bool(diag.warnings))
    if failing and fail_on != "never" and not exit_zero:
        raise SystemExit(EXIT_FINDINGS)
    raise SystemExit(EXIT_NO_DEVICE if not st.gpus or st.kernel_driver is None else EXIT_OK)


def _host_name(value: str | None) -> str | None:
    """``--host``: a host name as DNS and Kubernetes give them (at most 253 printable characters
    without blanks), so a report names its node as the fleet's other tools do."""
    if value is None:
        return None
    if not 0 < len(value) <= 253 or not value.isprintable() or any(c.isspace() for c in value):
        raise click.BadParameter(f"{value[:80]!r}: not a host name (1-253 printable characters, no blanks)")
    return value
