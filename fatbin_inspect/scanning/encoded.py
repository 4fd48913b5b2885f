"""What a scan's unit hands back: each record encoded where it was made, per file read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from fatbin_inspect.formats.model import FileReport

Key = tuple  # a file's ``cache.stat_key``: (device, inode, size, mtime, ctime)
Encoder = Callable[[FileReport], bytes]  # ``ScanOptions.encoder``: a record -> its text


class Encoded(NamedTuple):
    """What a worker hands back per record (``worker.encoded``, ``cache.encode_record``): its
    summary item (None for a record that does not encode: the file is then not cached), its data
    for the cache (only when asked), its text (with an encoder), both ``cache.pack``ed as the
    cache keeps them, and the record itself (only when asked, or when it does not encode)."""

    item: list[Any] | None
    data: bytes | None
    text: bytes | None
    record: FileReport | None


class Scanned(NamedTuple):
    """One file of a batch, read: its path and cache key as sent, and its records."""

    path: str
    key: Key
    records: list[Encoded]
