"""``--format json``: one document; ``--format jsonl``: one record per line (streams)."""

from __future__ import annotations

import json
from typing import Any


def dumps(document: dict[str, Any], pretty: bool = True) -> str:
    """Indented for people; ``pretty=False`` for large documents (the C encoder runs only without
    ``indent``: 170 MB of libtorch_cuda.so kernels take 20 s indented, 1 s compact)."""
    if not pretty:
        return json.dumps(document, separators=(",", ":")) + "\n"
    return json.dumps(document, indent=2, sort_keys=False) + "\n"


def dumps_line(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":")) + "\n"


# -- the same document assembled from pre-encoded pieces (large decoded inventories) ------------
def fatbins_fragment(fatbins) -> str:
    """Compact JSON of some fatbins, comma-joined: a piece of one file's ``"fatbins"`` array.
    Module-level so worker processes can encode the slice they decoded (inventory.map_decoded)."""
    from fatbin_inspect.render.inventory_json import fatbin_dict

    return ",".join(json.dumps(fatbin_dict(fb), separators=(",", ":")) for fb in fatbins)


def file_text(report, fragments=None) -> str:
    """One ``files[]`` element; ``fragments`` (from ``fatbins_fragment``) replace its fatbins."""
    from fatbin_inspect.render.inventory_json import file_dict

    d = file_dict(report)
    if fragments is None:
        return json.dumps(d, separators=(",", ":"))
    d.pop("fatbins")
    head = json.dumps(d, separators=(",", ":"))
    return head[:-1] + ',"fatbins":[' + ",".join(f for f in fragments if f) + "]}"


def inventory_text(file_texts) -> str:
    """The inventory document (schema_version 1), compact, from ``file_text`` pieces."""
    from fatbin_inspect.render.inventory_json import SCHEMA_VERSION, tool

    head = json.dumps({"schema_version": SCHEMA_VERSION, "tool": tool()}, separators=(",", ":"))
    return head[:-1] + ',"files":[' + ",".join(file_texts) + "]}\n"
