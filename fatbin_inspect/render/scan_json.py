"""Scan results -> plain dicts (``scan.schema.json``): the inventory's file records plus coverage."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from fatbin_inspect.checks.coverage import Coverage, Row
from fatbin_inspect.render.inventory_json import SCHEMA_VERSION, file_dict, tool


def row_dict(cov: Coverage, row: Row) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": row.name,
        "kind": row.kind,
        "files": row.files,
        "errors": row.errors,
        "cells": {
            f"sm_{sm}": {
                "state": row.cells[sm].state if sm in row.cells else "none",
                "arches": list(row.cells[sm].arches) if sm in row.cells else [],
            }
            for sm in cov.columns
        },
        "verdicts": [dataclasses.asdict(v) for v in row.verdicts],
    }
    if row.kind != "file":
        d["children"] = [row_dict(cov, c) for c in row.children]
    return d


def coverage_dict(cov: Coverage) -> dict[str, Any]:
    return {
        "columns": [f"sm_{sm}" for sm in cov.columns],
        "targets": list(cov.targets),
        "rows": [row_dict(cov, r) for r in cov.rows],
    }


def scan_document(
    result, cov: Coverage, seconds: float, targets: Sequence[dict[str, Any]] | None = None
) -> dict[str, Any]:
    s = result.stats
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": tool(),
        "roots": [{"path": r.path, "kind": r.kind} for r in result.roots],
        "targets": list(targets or []),
        "stats": {
            "files": s.files,
            "bytes": s.bytes,
            "inspected": s.inspected,
            "cache_hits": s.cache_hits,
            "skipped": s.skipped,
            "seconds": round(seconds, 3),
        },
        "files": [file_dict(r) for r in result.reports],
        "coverage": coverage_dict(cov),
    }
