"""``--format json``: one document; ``--format jsonl``: one record per line (streams)."""

from __future__ import annotations

import json
from typing import Any, Dict


def dumps(document: Dict[str, Any], pretty: bool = True) -> str:
    """Indented for people; ``pretty=False`` for large documents (the C encoder runs only without
    ``indent``: 170 MB of libtorch_cuda.so kernels take 20 s indented, 1 s compact)."""
    if not pretty:
        return json.dumps(document, separators=(",", ":")) + "\n"
    return json.dumps(document, indent=2, sort_keys=False) + "\n"


def dumps_line(record: Dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":")) + "\n"
