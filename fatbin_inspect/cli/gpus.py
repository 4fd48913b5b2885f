"""``fatbin-inspect gpus [QUERY]``: the GPUs the packaged data knows, with compute capability."""

from __future__ import annotations

import click

from fatbin_inspect.cli.common import EXIT_OK, Output, format_option, output_option
from fatbin_inspect.cli.options import complete_gpu, examples, ui_options
from fatbin_inspect.compat.targets import closest_names, search_gpus
from fatbin_inspect.errors import UsageError


@examples(
    "fatbin-inspect gpus                 # every GPU, by compute capability then name",
    'fatbin-inspect gpus "h100 sxm"      # words as --gpu takes them',
    "fatbin-inspect gpus --cc 9.0",
    "fatbin-inspect gpus jetson --format json",
)
@click.command("gpus")
@click.argument("query", required=False, shell_complete=complete_gpu)
@click.option("--cc", default=None, metavar="X.Y", help="Only GPUs of this compute capability (9.0, sm_90).")
@format_option("gpus")
@output_option
@ui_options
def gpus_cmd(
    query: str | None,
    cc: str | None,
    fmt: str,
    output: str | None,
) -> None:
    """List known GPUs, sorted by compute capability then name. QUERY filters by name words
    ('4090', 'jetson orin', 'H100-SXM5-80GB', as --gpu matches them) or compute capability
    (8.9, sm_89)."""
    from fatbin_inspect import render

    view = render.view("gpus", fmt)
    rows = search_gpus(query, cc)
    if not rows:
        what = " and ".join(x for x in (query and repr(query), cc and f"--cc {cc}") if x)
        closest = ", ".join(closest_names(query)) if query else ""
        raise UsageError(f"gpus: nothing matches {what}" + (f"; closest: {closest}" if closest else ""))
    view.write({"rows": rows}, Output(output))
    raise SystemExit(EXIT_OK)
