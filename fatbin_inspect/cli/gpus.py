"""``fatbin-inspect gpus [QUERY]``: the GPUs the packaged data knows, with compute capability."""

from __future__ import annotations

import click

from fatbin_inspect.cli.common import EXIT_OK, color_for, format_option, output_option, write_output
from fatbin_inspect.compat import data
from fatbin_inspect.compat.targets import search_gpus
from fatbin_inspect.errors import UsageError


@click.command("gpus")
@click.argument("query", required=False)
@format_option(["table", "json"])
@output_option
def gpus_cmd(query, fmt, output):
    """List known GPUs; QUERY filters by name words ('4090', 'jetson orin') or compute capability (8.9, sm_89)."""
    from fatbin_inspect.render import gpus_json, gpus_table, jsondump

    rows = search_gpus(query)
    if not rows:
        raise UsageError(f"gpus: nothing matches {query!r}")
    if fmt == "json":
        doc = {"schema_version": 1, "as_of": data.load("gpus")["as_of"], "gpus": gpus_json.gpu_dicts(rows)}
        text = jsondump.dumps(doc)
    else:
        text = gpus_table.render_gpus(rows, color=color_for(output))
    write_output(text, output)
    raise SystemExit(EXIT_OK)
