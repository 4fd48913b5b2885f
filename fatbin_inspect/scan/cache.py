"""Persistent scan cache: one SQLite file in the user cache dir, safe to delete at any time.

A row holds the records of one file on disk (an empty tuple when it holds no device code), valid
while the file's size, mtime (ns) and inode are unchanged and the scan options match. Beside the
full records it holds their ``coverage.FileSummary`` (a few tuples per file): ``preload`` reads the
keys and summaries of a whole tree in one query, so a warm scan that only needs the matrix never
reads a full record (a cuFFT's record holds 24,000 fatbins). The file name carries
``CACHE_VERSION`` and the rows carry the tool version, so a new release never reads old records.
Records are pickled frozen dataclasses: the cache lives in the user's own directory and is never
shared. Paths inside the records are stored absolute and rebased on the path the scan was given.
Any cache failure (read-only dir, corrupt file, locked) degrades to a miss.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import pickle
import sqlite3
import sys

from fatbin_inspect import __version__

CACHE_VERSION = 4  # 3: FileReport.static_cudart, .relocatable; 4: members by content, conda packages
ENV_DIR = "FATBIN_INSPECT_CACHE_DIR"
COMMIT_EVERY = 256

Key = tuple[int, int, int]  # (size, mtime_ns, inode)
MISS = object()  # ``get`` on an absent or stale row; a hit is a records tuple, or None (not a binary)
_LOAD_ERRORS = (
    pickle.UnpicklingError,
    EOFError,
    AttributeError,
    ImportError,
    TypeError,
    ValueError,
    IndexError,
)


def default_dir() -> str:
    """``$FATBIN_INSPECT_CACHE_DIR``, else the platform's user cache dir + ``fatbin-inspect``."""
    env = os.environ.get(ENV_DIR)
    if env:
        return env
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
        return os.path.join(base, "fatbin-inspect", "Cache")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches/fatbin-inspect")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "fatbin-inspect")


def stat_key(st: os.stat_result) -> Key:
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _loads(data: bytes):
    """Unpickle with the cyclic GC paused: records are acyclic, and a cuFFT's 24,000 fatbins would
    otherwise trigger dozens of full collections (3-5x slower)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return pickle.loads(data)
    finally:
        if enabled:
            gc.enable()


class ScanCache:
    """``get``/``put`` by absolute path; ``options`` is a fingerprint of what the records contain."""

    def __init__(self, directory: str | None, options: str):
        self.options = f"{__version__}|{options}"
        self.path = None
        self._db = None
        self._pending: list[tuple] = []  # rows not yet written
        self._meta: dict[str, tuple] = {}  # path -> (size, mtime, ino, summary blob), from ``preload``
        self._preloaded: list[str] = []  # prefixes whose rows are all in ``_meta``
        if directory is None:
            return
        self.path = os.path.join(directory, f"scan-v{CACHE_VERSION}.sqlite3")
        try:
            os.makedirs(directory, exist_ok=True)
            self._db = self._connect()
        except (OSError, sqlite3.Error):
            self._db = None
        if self._db is None and os.path.exists(self.path):
            try:  # corrupt: it is only a cache
                os.unlink(self.path)
                self._db = self._connect()
            except (OSError, sqlite3.Error):
                self._db = None

    def _connect(self):
        db = sqlite3.connect(self.path, timeout=5)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER, mtime INTEGER,"
            " ino INTEGER, options TEXT, summary BLOB, records BLOB)"
        )
        return db

    @property
    def enabled(self) -> bool:
        return self._db is not None

    def preload(self, prefix: str) -> dict[str, tuple]:
        """Read the keys and summaries (not the records) of every row under ``prefix`` written with
        these options, in one query: a warm scan of 15,000 files costs one query, not 15,000.
        Returns them, ``{path: (size, mtime, ino, summary)}`` (summary None: not a binary), for a
        caller that checks the keys itself."""
        if self._db is None:
            return {}
        try:
            rows = self._db.execute(
                "SELECT path, size, mtime, ino, summary FROM files "
                "WHERE path >= ? AND path < ? AND options = ?",
                (prefix, prefix + "\U0010ffff", self.options),
            ).fetchall()
        except sqlite3.Error:
            return {}
        found = {r[0]: r[1:] for r in rows}
        self._meta.update(found)
        self._preloaded.append(prefix)
        return found

    def _row(self, path: str, key: Key):
        """The summary blob of a valid row (None: not a binary), or ``MISS``."""
        meta = self._meta.get(path)
        if meta is None and not any(path.startswith(p) for p in self._preloaded):
            try:
                meta = self._db.execute(
                    "SELECT size, mtime, ino, summary FROM files WHERE path=? AND options=?",
                    (path, self.options),
                ).fetchone()
            except sqlite3.Error:
                return MISS
        if meta is None or meta[0] != key[0] or meta[1] != key[1] or meta[2] != key[2]:
            return MISS
        return meta[3]

    def get(self, path: str, key: Key, shown: str | None = None, full: bool = True):
        """The cached records (a tuple; None: not a binary), or ``MISS`` (absent, stale, unreadable).
        ``full``: ``FileReport`` records, else ``FileSummary`` records; ``shown``: the path as the
        scan was given it (records are rebased onto it)."""
        if self._db is None:
            return MISS
        summary = self._row(path, key)
        if summary is MISS or summary is None:
            return summary
        try:
            if not full:
                return _summaries(summary, shown or path)
            row = self._db.execute(
                "SELECT size, mtime, ino, options, records FROM files WHERE path=?", (path,)
            ).fetchone()
            if row is None or tuple(row[:3]) != key or row[3] != self.options or row[4] is None:
                return MISS
            records = _loads(row[4])
            if shown is not None and shown != path:
                records = tuple(dataclasses.replace(r, path=shown + r.path[len(path) :]) for r in records)
            return records
        except (sqlite3.Error,) + _LOAD_ERRORS:
            return MISS

    def put(self, path: str, key: Key, records, shown: str | None = None) -> None:
        """``records``: a tuple (possibly empty), or None for a file that is no binary at all;
        ``shown``: the path the records carry, when it is not ``path`` (a relative one)."""
        if self._db is None:
            return
        try:
            if records is None:
                summary = blob = None
            else:
                records = tuple(records)
                if shown is not None and shown != path:
                    records = tuple(dataclasses.replace(r, path=path + r.path[len(shown) :]) for r in records)
                blob = pickle.dumps(records, protocol=4)
                summary = pickle.dumps(tuple(_summary_row(r, path) for r in records), protocol=4)
        except (pickle.PicklingError,) + _LOAD_ERRORS:  # a record that does not pickle is not cached
            return
        self._pending.append((path, *key, self.options, summary, blob))
        if len(self._pending) >= COMMIT_EVERY:
            self._write()

    def _write(self) -> None:
        """Rows are written in batches (one statement, one commit per ``COMMIT_EVERY`` files)."""
        rows, self._pending = self._pending, []
        if self._db is None or not rows:
            return
        try:
            self._db.executemany("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?)", rows)
            self._db.commit()
        except sqlite3.Error:
            self._db = None

    def close(self) -> None:
        self._write()
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None


def _summary_row(report, path: str) -> tuple:
    """Plain tuples (fast to unpickle, no class lookups): member suffix, format, size, arches, error."""
    from fatbin_inspect.checks.coverage import summarize

    s = summarize(report)
    err = (s.error.message, s.error.offset) if s.error is not None else None
    return (s.path[len(path) :], s.format, s.size, s.arches, err, s.package)


def _summaries(blob: bytes, shown: str) -> tuple:
    from fatbin_inspect.checks.coverage import FileSummary
    from fatbin_inspect.formats.model import FileError

    return tuple(
        FileSummary(shown + suffix, fmt, size, arches, FileError(*err) if err else None, package=package)
        for suffix, fmt, size, arches, err, package in pickle.loads(blob)
    )
