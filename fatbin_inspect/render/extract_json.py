"""``extract --format json``: the files written, each with the entry it holds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fatbin_inspect.render import jsondump


def render_written_json(
    output_dir: str, written: Sequence[dict[str, Any]], color: bool = False, width: int | None = None
) -> str:
    return jsondump.dumps(
        {"schema_version": jsondump.SCHEMA_VERSION, "output_dir": output_dir, "written": list(written)}
    )
