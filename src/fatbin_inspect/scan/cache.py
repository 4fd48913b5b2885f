"""Persistent scan cache: one SQLite file in the user cache dir, safe to delete at any time.

A row holds the records of one file on disk (an empty tuple when it holds no device code), valid
while the file's size, mtime (ns) and inode are unchanged and the scan options match. The file
name carries ``CACHE_VERSION`` and the rows carry the tool version, so a new release never reads
old records. Records are pickled frozen dataclasses: the cache lives in the user's own directory
and is never shared. Any cache failure (read-only dir, corrupt file, locked) degrades to a miss.
"""

from __future__ import annotations

import gc
import os
import pickle
import sqlite3
import sys
from typing import Optional, Tuple

from fatbin_inspect import __version__

CACHE_VERSION = 1
ENV_DIR = "FATBIN_INSPECT_CACHE_DIR"
COMMIT_EVERY = 256

Key = Tuple[int, int, int]  # (size, mtime_ns, inode)
MISS = object()  # ``get`` on an absent or stale row; a hit is a records tuple, or None (not a binary)


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
    """``get``/``put`` by path; ``options`` is a fingerprint of what the records contain."""

    def __init__(self, directory: Optional[str], options: str):
        self.options = f"{__version__}|{options}"
        self.path = None
        self._db = None
        self._pending = 0
        self._meta = None  # path -> (size, mtime, ino, options, has records), after ``preload``
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
        db.execute("CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER, mtime INTEGER,"
                   " ino INTEGER, options TEXT, records BLOB)")
        return db

    @property
    def enabled(self) -> bool:
        return self._db is not None

    def preload(self, prefix: str) -> None:
        """Read the keys (not the records) of every row under ``prefix`` in one query, so a warm
        scan of 15,000 files costs one query instead of 15,000."""
        if self._db is None:
            return
        try:
            rows = self._db.execute("SELECT path, size, mtime, ino, options, records IS NOT NULL FROM files "
                                    "WHERE path >= ? AND path < ?", (prefix, prefix + "\U0010ffff")).fetchall()
        except sqlite3.Error:
            return
        self._meta = {r[0]: r[1:] for r in rows}

    def get(self, path: str, key: Key):
        """The cached records tuple (None: not a binary), or ``MISS`` (absent, stale, unreadable)."""
        if self._db is None:
            return MISS
        if self._meta is not None:
            meta = self._meta.get(path)
            if meta is None or tuple(meta[:3]) != key or meta[3] != self.options:
                return MISS
            if not meta[4]:
                return None
        try:
            row = self._db.execute("SELECT size, mtime, ino, options, records FROM files WHERE path=?",
                                   (path,)).fetchone()
            if row is None or tuple(row[:3]) != key or row[3] != self.options:
                return MISS
            return None if row[4] is None else _loads(row[4])
        except (sqlite3.Error, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError):
            return MISS

    def put(self, path: str, key: Key, records) -> None:
        """``records``: a tuple (possibly empty), or None for a file that is no binary at all."""
        if self._db is None:
            return
        try:
            self._db.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?)",
                             (path, *key, self.options,
                              None if records is None else pickle.dumps(tuple(records), protocol=4)))
            self._pending += 1
            if self._pending >= COMMIT_EVERY:
                self._db.commit()
                self._pending = 0
        except sqlite3.Error:
            self._db = None

    def close(self) -> None:
        if self._db is not None:
            try:
                self._db.commit()
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None
