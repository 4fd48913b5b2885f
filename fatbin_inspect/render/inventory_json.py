"""The inventory document (``list --format json``, schema_version 1): the file records of
``record_json`` under the tool's name and version; ``list_views`` streams it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.render.jsondump import SCHEMA_VERSION, tool
from fatbin_inspect.render.record_json import file_dict

__all__ = ["SCHEMA_VERSION", "inventory_document", "tool"]


def inventory_document(reports: Iterable[FileReport]) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "tool": tool(), "files": [file_dict(r) for r in reports]}
