"""``--format json``: one document; ``--format jsonl``: one record per line (streams)."""

from __future__ import annotations

import json
from typing import Any, Dict


def dumps(document: Dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=False) + "\n"


def dumps_line(record: Dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":")) + "\n"
