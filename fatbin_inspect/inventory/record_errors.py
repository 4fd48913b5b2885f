"""The error a record carries: an exception as the record's ``FileError`` (``error_of``), and the
one record of a file that shrank while it was read (``unchanged``, ``changed_record``,
``shrank_message``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from fatbin_inspect.errors import InputError
from fatbin_inspect.formats import mapguard
from fatbin_inspect.formats.model import FileError, FileReport
from fatbin_inspect.inventory import member_path


def unchanged(path: str, size: int, records: Iterable[FileReport]) -> Iterator[FileReport]:
    """``records`` of one mapped file as long as it did not shrink under them: once a read
    past its new end was absorbed (``formats.mapguard``), the rest is one error record for the
    file (what came before was read from the bytes as they were)."""
    before = mapguard.faults()
    for rec in records:
        if mapguard.faults() != before:
            yield changed_record(path, size)
            return
        yield rec
    if mapguard.faults() != before:
        yield changed_record(path, size)


def changed_record(path: str, size: int) -> FileReport:
    """The record of a file of ``size`` bytes when read that is smaller now."""
    now = size_or_zero(path)
    return FileReport(
        path=member_path.escape(path), format="unknown", size=now, error=FileError(shrank_message(size, now))
    )


def shrank_message(size: int, now: int) -> str:
    """``changed_record``'s error: the file was ``size`` bytes when read, ``now`` bytes now."""
    return f"the file shrank while it was read ({size:,} -> {now:,} bytes): not inspected"


def size_or_zero(path: str) -> int:
    """The file's size now; 0 when it cannot be stat'ed."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def error_of(exc: Exception) -> FileError:
    """An ``InputError`` as its message and offset; any other exception (a bug met on hostile
    bytes) as an "internal error" of this record alone."""
    if isinstance(exc, InputError):
        return FileError(exc.message, exc.offset)
    return FileError(f"internal error: {type(exc).__name__}: {exc}", None)
