"""``releases --format json``: schema_version 1; the rows, and per target the newest releases."""

from __future__ import annotations

from typing import Any

from fatbin_inspect.judging.releases import ReleasesReport
from fatbin_inspect.render import jsondump
from fatbin_inspect.render.releases_table import answers


def releases_document(report: ReleasesReport) -> dict[str, Any]:
    said = answers(report)  # (one line per target: made once, not once per target)
    return {
        "schema_version": jsondump.SCHEMA_VERSION,
        "command": "releases",
        "package": report.name,
        "targets": [
            {
                "label": t.label,
                "gpu": t.gpu.name,
                "newest_native": report.newest_native[i],
                "newest_jit": report.newest_jit[i],
                "answer": said[i],
            }
            for i, t in enumerate(report.targets)
        ],
        "releases": [
            {
                "version": row.version,
                "cells": [
                    {"verdict": c.verdict, "rule": c.rule, "detail": c.detail, "file": c.file}
                    for c in row.cells
                ],
            }
            for row in report.rows
        ],
        "skipped": report.skipped,
    }


def render_releases_json(report: ReleasesReport, color: bool = False, width: int | None = None) -> str:
    return jsondump.dumps(releases_document(report))
