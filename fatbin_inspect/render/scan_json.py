"""Scan results -> plain dicts (``scan.schema.json``): the inventory's file records plus coverage."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fatbin_inspect.render.json_encode import to_json
from fatbin_inspect.render.jsondump import SCHEMA_VERSION, tool
from fatbin_inspect.render.record_json import file_dict, writes_fields
from fatbin_inspect.scanning.coverage import Coverage, FileSummary, Row, Verdict
from fatbin_inspect.scanning.images import image_views

if TYPE_CHECKING:
    from fatbin_inspect.formats.model import Fatbin, FileReport
    from fatbin_inspect.scanning import ScanResult


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
        "verdicts": [verdict_dict(v) for v in row.verdicts],
    }
    if row.kind != "file":
        d["children"] = [row_dict(cov, c) for c in row.children]
    return d


def verdict_dict(v: Verdict) -> dict[str, Any]:
    """A row's verdict; ``device`` only where R-HOST decided (what the device code gives elsewhere)."""
    d = dataclasses.asdict(v)
    if d["device"] is None:
        del d["device"]
    else:
        d["device"].pop("device", None)
    return d


def coverage_dict(cov: Coverage) -> dict[str, Any]:
    return {
        "columns": [f"sm_{sm}" for sm in cov.columns],
        "targets": list(cov.targets),
        "rows": [row_dict(cov, r) for r in cov.rows],
    }


def scan_document(
    result: ScanResult,
    cov: Coverage,
    seconds: float,
    targets: Sequence[dict[str, Any]] | None = None,
    images: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``images``: ``image_views`` when ``result.reports`` is not the records to attribute them."""
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
        # each image named as an input: manifest digest, tag, platform, layers and their files
        "images": image_views(result.images, result.reports) if images is None else images,
        "files": [file_dict(r) for r in result.reports],
        "coverage": coverage_dict(cov),
    }


# -- the streamed document: each file record encoded by the scan worker that made it -------------
_HEAD_END = '\n      "distribution": null'  # the last field the scan fills in (path ... distribution)


def file_rest(report: FileReport) -> bytes:
    """A ``files[]`` element of the scan document as ``jsondump.write`` places it (depth 2), from
    the field after ``distribution`` on: the scan cache keeps these bytes, the path and distribution (which
    depend on how and where the scan was run) are put in front by ``file_text``. Module-level: the
    scan's workers call it (``ScanOptions.encoder``)."""
    from fatbin_inspect.render import record_pieces

    if report.distribution is not None:
        report = dataclasses.replace(report, distribution=None)
    text = record_pieces.file_pretty(report, 2)
    return text[text.index(_HEAD_END) + len(_HEAD_END) :].encode()


def file_rest_parts(
    report: FileReport, fatbins: Sequence[Fatbin]
) -> tuple[bytes, bytes, bytes, list[bytes]] | None:
    """``file_rest`` in parts, for a file whose fatbins several workers encode: (before, after,
    separator) from ``report`` (its own fatbins aside) and the items of ``fatbins``; for a file
    with at least one fatbin ``file_rest`` is ``before + separator.join(items) + after``, whether
    the items are joined at once or in runs (tests/scanning/test_elf_split.py holds the two equal).
    ``report`` None: the items only. None when ``file_rest`` would not write them so.
    Module-level, as ``file_rest`` (``ScanOptions.encoder_parts``)."""
    from fatbin_inspect.render import record_pieces

    if fatbins and not writes_fields(fatbins):
        return None
    sep, items = record_pieces.fatbins_pretty(fatbins, 2)
    before = after = b""
    if report is not None:
        if report.distribution is not None:
            report = dataclasses.replace(report, distribution=None)
        around = record_pieces.file_pretty_around(report, 2)
        if around is None or _HEAD_END not in around[0]:
            return None
        before = around[0][around[0].index(_HEAD_END) + len(_HEAD_END) :].encode()
        after = around[1].encode()
    return before, after, sep.encode(), [item.encode() for item in items]


def file_text(summary: FileSummary | FileReport, rest: bytes) -> tuple[bytes, bytes]:
    """The whole element, in two pieces (a 23 MB record is not copied to put its head in front):
    ``summary`` (a ``FileSummary``) gives path, format, size, distribution; ``rest`` the rest."""

    head = (
        f'{{\n      "path": {to_json(summary.path)},\n      "format": {to_json(summary.format)},'
        f'\n      "size": {to_json(summary.size)},\n      "distribution": {to_json(summary.distribution)}'
    )
    return head.encode(), rest


def scan_stream_document(
    result: ScanResult, cov: Coverage, seconds: float, targets: Sequence[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """``scan_document`` with ``files`` streamed from ``result.texts`` (a scan with an encoder)."""
    from fatbin_inspect.render.jsondump import Items

    assert result.texts is not None  # the caller's scan had an encoder
    images = image_views(result.images, result.reports)
    doc = scan_document(dataclasses.replace(result, reports=()), cov, seconds, targets, images)
    doc["files"] = Items(
        (file_text(s, t) for s, t in zip(result.reports, result.texts(), strict=True)), encoded=True
    )
    return doc
