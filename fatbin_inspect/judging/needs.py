"""``Needs``: what a run must produce for the output it feeds (``render.VIEWS`` declares one per
command and format; the library's runs read them, so no command decides it).

A ``NamedTuple``, as ``render.views.View``: the table is made at every start of the command line,
and creating a dataclass compiles each of its generated methods, which a listing would pay for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple


class Needs(NamedTuple):
    records: bool = True  # full records; False: per-file summaries are enough (the scan's matrix)
    digests: bool = False  # every file's SHA-256 (CycloneDX components)
    kept: bool = False  # the records kept for the output (the HTML report drills into them)
    streamed: bool = False  # written as the records come: the run reads lazily and holds nothing
    progress: bool = False  # a progress line on a terminal while the run reads
    # a module-level function run where the records are made (the scan's workers): a record ->
    # its bytes as the output writes them (``scanning.ScanOptions.encoder``), and its text in parts
    encoder: Callable[..., bytes] | None = None
    encoder_parts: Callable[..., Any] | None = None
