"""Per-file work, run in pool processes: the quick content test, then the inventory.

The quick test decides from the bytes, never from the name: a file whose first bytes are no
binary, archive, fatbin or PTX format is skipped; an ELF, PE/COFF or ``ar`` file with no fatbin
magic anywhere is skipped too. Any fatbin starts with the magic ``50 ED 55 BA`` in the clear (only
payloads are compressed), so a host binary without it cannot hold device code. The search runs a
chunk at a time over the mapping and drops each chunk from the resident set, so a 500 MB library
costs ``CHUNK`` bytes of memory, not 500 MB.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from fatbin_inspect.containers import archives, detect
from fatbin_inspect.errors import InputError
from fatbin_inspect.formats.binio import Blob, open_blob
from fatbin_inspect.formats.fatbin import MAGIC_BYTES
from fatbin_inspect.formats.mapguard import faults
from fatbin_inspect.formats.model import FileError, FileReport
from fatbin_inspect.inventory.hidden import magic_ranges
from fatbin_inspect.inventory.options import Options, as_options
from fatbin_inspect.inventory.reader import inspect_blob, inspect_path, inspect_zip_span
from fatbin_inspect.inventory.record_errors import changed_record, unchanged
from fatbin_inspect.inventory.walk import image_ref
from fatbin_inspect.inventory.zip_plan import (
    zip_spans as zip_spans,  # re-exported: scan and its tests call worker.zip_spans
)
from fatbin_inspect.scanning.cache import encode_record, pack_text
from fatbin_inspect.scanning.encoded import Encoded, Encoder, Scanned

CHUNK = 32 << 20
HEAD = 512
HOST_BINARIES = ("elf", "pe", "coff", "ar")
NOT_DEVICE = "unknown"
_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0)


def head_format(path: str) -> str:
    """Format from the first bytes read with a plain read (cheaper than a mapping for text files;
    a bare descriptor, not a file object: no fstat, no isatty, no 8 KiB buffer per file)."""
    fd = os.open(path, _READ)
    try:
        return detect(os.read(fd, HEAD))
    finally:
        os.close(fd)


def has_magic(blob: Blob, ranges: Iterable[tuple[int, int]] | None = None) -> bool:
    """The fatbin magic somewhere in ``ranges`` (``(start, end)``; default the whole blob), e.g.
    ``inventory.hidden.magic_ranges``: all but code, where the inventory never looks either
    (libtorch_cpu.so has 399 of its 425 MB there); ``CHUNK`` bytes at a time (``Blob.contains``)."""
    return blob.contains(MAGIC_BYTES, [(0, blob.size)] if ranges is None else ranges, CHUNK)


def inspect_file(path: str, opts: Options) -> tuple[FileReport, ...]:
    """Records worth reporting for one file on disk (or an OCI image layout folder): those with
    device code or an error."""
    if os.path.isdir(path) or image_ref(path) is not None:  # an image layout or reference
        return _worth(inspect_path(path, opts), path)
    try:
        blob = open_blob(path)
    except InputError as exc:
        return (_unreadable(path, exc),)
    before = faults()
    fmt = detect(blob.head(HEAD))
    ranges = magic_ranges(fmt, blob) if fmt in HOST_BINARIES else None  # None: a compressed section
    if fmt == NOT_DEVICE or (ranges is not None and not has_magic(blob, ranges)):
        return () if faults() == before else (changed_record(path, blob.size),)
    return _worth(unchanged(path, blob.size, inspect_blob(path, blob, opts, 0)), path)


def _worth(records: Iterable[FileReport], path: str) -> tuple[FileReport, ...]:
    """The records worth reporting (``kept``)."""
    return tuple(rec for rec in records if kept(rec, path))


def _unreadable(path: str, exc: InputError) -> FileReport:
    return FileReport(path=path, format="unknown", size=0, error=FileError(exc.message, exc.offset))


def kept(rec: FileReport, path: str) -> bool:
    """A record worth handing back: device code, an error, or the contents of an image input
    (its files count in the scan's stats)."""
    return bool(rec.fatbins or rec.error) or (rec.contents is not None and rec.path == path)


_ZIP = None  # ((path, key), blob, directory or None): the zip this process has inspect_span units of


def encoded(
    records: Iterable[FileReport],
    base: str,
    encoder: Encoder | None,
    keep: bool,
    data: bool = True,
) -> list[Encoded]:
    """Each record as a worker hands it back (``Encoded``); the record itself only with ``keep``."""
    out = []
    for r in records:
        item: list[Any] | None
        packed: bytes | None
        try:
            item, packed = encode_record(r, base, data)
        except (ValueError, TypeError):
            item = packed = None
        text = pack_text(encoder(r)) if encoder else None
        out.append(Encoded(item, packed, text, r if keep or item is None else None))
    return out


def inspect_span(
    path: str,
    key: tuple[Any, ...],
    span: tuple[int, int],
    opts: Any,
    encoder: Encoder | None = None,
    keep: bool = False,
    data: bool = True,
) -> list[Encoded]:
    """Pool entry point: ``encoded`` records of one span of a zip (see
    ``inventory.inspect_zip_span``) worth reporting, as ``inspect_file`` keeps them. The mapping
    and directory of the zip are kept for the next span of the same zip (read once per process,
    not once per span)."""
    global _ZIP
    opts = as_options(opts)
    if _ZIP is None or _ZIP[0] != (path, key):
        _ZIP = None
        try:
            blob = open_blob(path)
        except InputError as exc:
            return encoded((_unreadable(path, exc),), path, encoder, keep, data)
        try:
            zf = archives.open_zip(blob.stream())
        except InputError:
            zf = None  # inspect_zip_span reports it, as the whole file would
        _ZIP = ((path, key), blob, zf)
    _, blob, zf = _ZIP
    records = _worth(unchanged(path, blob.size, inspect_zip_span(path, blob, opts, span, zf)), path)
    return encoded(records, path, encoder, keep, data)


def inspect_batch(
    batch: Sequence[tuple[str, tuple[Any, ...]]],
    opts: Any,
    encoder: Encoder | None = None,
    keep: bool = False,
    data: bool = True,
) -> list[Scanned]:
    """Pool entry point: ``[(path, key), ...]`` -> a ``Scanned`` per file;
    ``opts``: an ``Options``, a dict of its fields, or None (the defaults); ``encoder``: a
    module-level function giving each record's text where it was made; ``keep``: hand back the
    records too (the caller needs them whole); ``data``: encode them for the cache."""
    opts = as_options(opts)
    return [
        Scanned(path, key, encoded(inspect_file(path, opts), path, encoder, keep, data))
        for path, key in batch
    ]
