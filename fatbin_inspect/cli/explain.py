"""``fatbin-inspect explain ERROR``: what a CUDA load error means and how to catch it before deploying."""

from __future__ import annotations

import click

from fatbin_inspect.cli.common import EXIT_OK, Output, format_option, output_option
from fatbin_inspect.cli.options import examples, ui_options
from fatbin_inspect.compat.explain import explain
from fatbin_inspect.errors import UsageError


@examples(
    "fatbin-inspect explain 209",
    "fatbin-inspect explain cudaErrorUnsupportedPtxVersion --format json",
    'fatbin-inspect explain "no kernel image is available for execution on the device"',
)
@click.command("explain")
@click.argument("error", nargs=-1, required=True)
@format_option("explain", aliases={"text": "table"})  # `text`: the name before 0.2
@output_option
@ui_options
def explain_cmd(
    error: tuple[str, ...],
    fmt: str,
    output: str | None,
) -> None:
    """Explain ERROR: a number (209), a name (cudaErrorNoKernelImageForDevice, CUDA_ERROR_NO_BINARY_FOR_GPU)
    or the text a program printed ("no kernel image is available for execution on the device")."""
    from fatbin_inspect import render

    view = render.view("explain", fmt)
    query = " ".join(error)
    e = explain(query)
    if e is None:
        raise UsageError(f"explain: {query!r} matches no known CUDA error number, name or message")
    view.write({"e": e}, Output(output))
    raise SystemExit(EXIT_OK)
