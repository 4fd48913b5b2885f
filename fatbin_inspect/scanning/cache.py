"""Persistent scan cache: one SQLite file in the user cache dir, safe to delete at any time.

A row holds what one file on disk gave under one set of options (nothing, when it holds no device
code), keyed by path and options, valid while the file's device, inode, size, mtime (ns) and
ctime (ns) are unchanged (``touch`` can put an mtime back; nobody can set the ctime). A row holds
data only, never code:

- ``summary``: per record, its ``coverage.FileSummary`` as JSON lists (all a table scan reads);
  ``preload`` reads the keys and summaries of a whole tree in one query;
- ``records``: the full records as JSON data (``record_data``), for the API and ``--gpu`` verdicts;
- ``texts``: each record's encoded JSON exactly as the scan document holds it (minus the fields
  the scan fills in: path, format, size, distribution), one blob with the lengths beside it, so a
  warm ``scan --format json`` copies bytes and builds no record. A text is checked once, when
  packed (``pack_text``: printable ASCII and newlines only), and its frame then carries zstd's
  content checksum (XXH64), which libzstd verifies as it unpacks; a text is accepted back only
  from a frame with a checksum, so the bytes a warm scan copies are the bytes that were checked
  (checking each byte again would cost a warm scan several times the checksum).
  Each text is also ASCII without ESC when read (a row some other writer made cannot put an
  escape sequence on a terminal).

Each record's data and text is one zstd frame (level 1, its content size in the frame header),
packed by the worker that encoded the record (``pack``), so a 23 MB record crosses the pipe to
the scan as 0.5 MB; a row holds its records' frames back to back, with ``[frame bytes, bytes]``
of each beside them (``records_at``, ``texts_at``). The scan document's 33 MB of texts over six
wheels are 0.7 MB so, packed and unpacked in less time than SQLite took to write them whole.
A frame is unpacked only when its header declares the size the row gives (at most
``MAX_UNPACKED``), so a row cannot make a scan allocate more than it says.

A row that does not validate (wrong shapes or types, lengths that do not add up) is a miss. The
folder is created 0700; a folder or file owned by another user, or writable by group or others,
is not used (whoever can write the cache decides what the next scan reports). Paths are keys as
bytes (``os.fsencode``): a file name that is not UTF-8 is a key like any other. The file name
carries ``CACHE_VERSION`` and the rows carry the tool version, so a new release never reads old
rows. Any cache failure (read-only dir, corrupt file, locked) degrades to a miss.
"""

from __future__ import annotations

import enum
import json
import operator
import os
import sqlite3
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from fatbin_inspect.version import __version__

if TYPE_CHECKING:
    from fatbin_inspect.formats.model import Fatbin, FileReport
    from fatbin_inspect.scanning.coverage import FileSummary

# 3: static_cudart, relocatable; 4: members by content, conda; 5: data rows; 6: fatbin counts;
# 7: records and texts zstd-packed; 8: one frame per record, packed by the worker; 9: a table
# without rowid (the path is the key: one B-tree, not a table and an index); 10: sha256; 11: machine;
# 12: records in the field order of their dataclasses (record_data derives the encoding from them);
# 13: an image input's final-filesystem contents (files, bytes); 14: a row per (path, options):
# gate's rows (archive and host records too) and scan's, or scans with other options, of one
# file no longer replace each other (alternating gate and scan read every file again each time);
# 15: texts checked when packed and carrying zstd's checksum (``pack_text``), not when read;
# 16: ``answers``, a whole scan's answer in one row; 17: FileReport.static_cudart_version;
# 18: a host binary whose section table does not read is an error record (``hidden.magic_ranges``),
# no longer a row of "no device code"
CACHE_VERSION = 18
ENV_DIR = "FATBIN_INSPECT_CACHE_DIR"
COMMIT_EVERY = 4096  # rows per statement and commit (a cold scan of 15,000 files: 4 commits)
COMMIT_BYTES = 64 << 20  # or fewer, when their packed data and texts reach this

Key = tuple[int, int, int, int, int]  # (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)


class Miss(enum.Enum):
    """The type of ``MISS`` (an enum member: mypy narrows ``x is MISS``, and it pickles as itself)."""

    MISS = "miss"


MISS: Final = Miss.MISS  # ``get`` on an absent, stale or invalid row
# (summary as data, record data ``pack``ed or None) of one record: ``encode_record``
EncodedRecord = tuple[list[Any], bytes | None]
# bytes a stored text may hold: an encoder writes ASCII JSON (``ensure_ascii``), so nothing a
# hostile row could hold reaches a terminal as a control sequence
_TEXT_BYTES = bytes(range(0x20, 0x7F)) + b"\n"
_CHECK_STEP = 1 << 20
MAX_UNPACKED = 1 << 31  # the records of one file as JSON (libtorch_cuda.so --kernels: ~200 MB)


# a row with records or texts: the columns a new row lacks (NULL) are the old row's when its key is
# the same (the same file read under the same options), else NULL; a bare row (``_put_bare``)
# replaces whatever was there
_SAME_KEY = (
    "files.dev = excluded.dev AND files.ino = excluded.ino AND files.size = excluded.size"
    " AND files.mtime = excluded.mtime AND files.ctime = excluded.ctime"
)
_UPSERT = (
    "INSERT INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (path, options) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in ("dev", "ino", "size", "mtime", "ctime", "summary"))
    + ", "
    + ", ".join(
        f"{c} = CASE WHEN excluded.{lead} IS NOT NULL THEN excluded.{c} WHEN {_SAME_KEY} THEN files.{c} END"
        for lead, cols in (
            ("records", ("records", "records_at")),
            ("texts", ("encoder", "texts_at", "texts")),
        )
        for c in cols
    )
)


def pack(data: bytes) -> bytes:
    """One record's data as the cache keeps it and a worker hands it over (a text: ``pack_text``)."""
    import zstandard

    return zstandard.ZstdCompressor(level=1).compress(data)


def pack_text(text: bytes) -> bytes:
    """A text as the cache keeps it: checked here (printable ASCII and newlines), once, and
    packed with zstd's checksum only when it passes, as ``unpack_texts`` accepts only such frames."""
    import zstandard

    inert = is_inert(text)
    return zstandard.ZstdCompressor(level=1, write_checksum=inert).compress(text)


def pack_stream(pieces: Iterable[bytes], size: int, checksum: bool) -> bytes:
    """One frame, as ``pack`` makes it (``checksum``: as ``pack_text`` makes it of a text that
    passed its check), of the ``size`` bytes of ``pieces``, fed to the frame in turn: a split
    file's 23 MB text is never whole in memory; the frame declares the whole size."""
    import zstandard

    c = zstandard.ZstdCompressor(level=1, write_checksum=checksum).compressobj(size=size)
    out = [c.compress(p) for p in pieces]
    out.append(c.flush())
    return b"".join(out)


def unpack_stream(frame: bytes) -> Iterator[bytes]:
    """The bytes of a frame ``pack`` made in this process's own pool (trusted), a MiB at a time."""
    import zstandard

    with zstandard.ZstdDecompressor().stream_reader(frame) as reader:
        while piece := reader.read(1 << 20):
            yield piece


def is_inert(text: bytes) -> bool:
    """Printable ASCII and newlines only. Checked 1 MiB at a time: ``translate`` allocates a
    result as large as its input before it shrinks it, which for cuFFT's 23 MB text was a second
    copy at the worker's peak."""
    step = _CHECK_STEP
    return not any(text[i : i + step].translate(None, _TEXT_BYTES) for i in range(0, len(text), step))


def packed_size(frame: bytes) -> int:
    """The bytes a frame made by ``pack`` unpacks to (its header says so)."""
    import zstandard

    return zstandard.frame_content_size(frame)


def has_checksum(frame: bytes) -> bool:
    """A frame ``pack_text`` made of a text that passed its check (one ``unpack_texts`` accepts)."""
    import zstandard

    try:
        return zstandard.get_frame_parameters(frame).has_checksum
    except zstandard.ZstdError:
        return False


def unpack(frame: Any, size: int, checked: bool = False) -> bytes | None:
    """A frame's bytes; None when its header does not declare ``size`` (at most
    ``MAX_UNPACKED``) or it does not unpack to exactly that; with ``checked``, also when it
    carries no checksum (``pack_text``) or its checksum does not match (libzstd checks it)."""
    import zstandard

    if type(size) is not int or not 0 <= size <= MAX_UNPACKED:
        return None
    try:
        if zstandard.frame_content_size(frame) != size:
            return None
        if checked and not has_checksum(frame):
            return None
        out = zstandard.ZstdDecompressor().decompress(frame, max_output_size=size)
    except (zstandard.ZstdError, ValueError, TypeError, MemoryError):
        return None
    return out if len(out) == size else None


def _column(frames: list[bytes]) -> tuple[bytes, str]:
    """A packed column as a row keeps it: the frames back to back, and ``[[frame bytes, bytes],
    ...]`` of each as JSON."""
    return b"".join(frames), json.dumps([[len(f), packed_size(f)] for f in frames])


def _sizes(at: Any, n: int) -> list | None:
    """A packed column's ``[[frame bytes, bytes], ...]`` (JSON) parsed: ``n`` pairs, frame bytes
    a count (the frame checks the other), or None."""
    try:
        sizes = json.loads(at)
    except (ValueError, TypeError, RecursionError):  # (a nesting deeper than the parser's stack)
        return None
    if type(sizes) is not list or len(sizes) != n:
        return None
    for s in sizes:
        if type(s) is not list or len(s) != 2 or type(s[0]) is not int or s[0] < 0:
            return None
    return sizes


def _split(blob: Any, at: Any, n: int) -> list[tuple[bytes, Any]] | None:
    """The ``n`` frames of a packed column, still packed, each with the bytes ``at`` (its
    ``[[frame bytes, bytes], ...]`` as JSON) says it unpacks to; None when they do not add up
    or the column is not a blob (a number or a text in it is a row some other writer made)."""
    sizes = _sizes(at, n)
    if sizes is None or type(blob) is not bytes:
        return None
    out, pos = [], 0
    for frame, size in sizes:
        out.append((blob[pos : pos + frame], size))
        pos += frame
    return out if pos == len(blob) else None


def _frames(blob: Any, at: Any, n: int, checked: bool = False) -> list[bytes] | None:
    """The ``n`` frames of a packed column (``_split``), unpacked; ``checked``: frames of
    ``pack_text``. None when anything does not add up."""
    split = _split(blob, at, n)
    if split is None:
        return None
    out = []
    for frame, size in split:
        data = unpack(frame, size, checked)
        if data is None:
            return None
        out.append(data)
    return out


def texts_size(packed: tuple, n: int) -> int | None:
    """The bytes the ``n`` texts of a row's ``Hit.packed_texts`` declare, or None when their
    sizes do not parse (``unpack_texts`` then gives ``MISS``; nothing is allocated here)."""
    sizes = _sizes(packed[1], n)
    if sizes is None or not all(type(s[1]) is int and 0 <= s[1] <= MAX_UNPACKED for s in sizes):
        return None
    return sum(s[1] for s in sizes)


def unpack_texts(packed: tuple, n: int) -> list[bytes] | Any:
    """The ``n`` texts of a row's ``Hit.packed_texts``, or ``MISS``: frames from ``pack_text``
    only (libzstd verifies their checksums), each ASCII without ESC. Touches no database, so the
    scan's unpacking thread runs it (libzstd lets go of the GIL as it unpacks)."""
    texts = _frames(packed[0], packed[1], n, checked=True)
    if texts is None or not all(t.isascii() and b"\x1b" not in t for t in texts):
        return MISS
    return texts


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


# a file's ``Key`` from its stat; an attrgetter (C-level), so the warm scan's walk digest maps it
# over a folder's stats without bytecode per entry
stat_key: Callable[[os.stat_result], Key] = operator.attrgetter(
    "st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns"
)


def _private(st: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else (always true where there are no uids)."""
    if not hasattr(os, "geteuid"):
        return True
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _usable(directory: str, path: str) -> bool:
    """The cache folder (made 0700 if absent) and its file (if any) are this user's own, and
    the file a regular file."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        if not _private(os.stat(directory)):
            return False
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and _private(st)


def _summary_rows(blob: Any) -> list:
    """The summary column parsed and checked (``_checked_summaries``)."""
    return _checked_summaries(json.loads(blob))


def _checked_summaries(rows: Any) -> list:
    """Per record, its ``coverage.FileSummary`` as ``record_data`` stores it (its path relative
    to the row's file), as data, checked: ``ValueError`` otherwise."""
    from fatbin_inspect.scanning.coverage import FileSummary
    from fatbin_inspect.scanning.record_data import codec

    if type(rows) is not list:
        raise ValueError("cache row: summary is not a list")
    check = codec(FileSummary).values
    for r in rows:
        check(r)
    return rows


class Hit:
    """A valid row: its summaries at once, records and texts when asked (one more query each)."""

    __slots__ = ("_cache", "_key", "path", "summary")

    def __init__(self, cache: ScanCache, key: bytes, path: str, summary: list[list[Any]]) -> None:
        # the checked summary items (``summaries_from`` makes them records)
        self._cache, self._key, self.path, self.summary = cache, key, path, summary

    def _row(self, columns: str) -> tuple[Any, ...] | None:
        """The ``columns`` of this row (path and options), or None."""
        return self._cache._query(
            f"SELECT {columns} FROM files WHERE path=? AND options=?", (self._key, self._cache.options)
        )

    def summaries(self, shown: str) -> tuple[FileSummary, ...]:
        """The row's ``coverage.FileSummary`` records on the path ``shown``."""
        return summaries_from(self.summary, shown)

    def reports(self, shown: str) -> tuple[FileReport, ...] | Miss:
        """The full records rebased on ``shown``, or ``MISS``."""
        from fatbin_inspect.scanning.record_data import report_from_data

        row = self._row("records, records_at")
        frames = _frames(row[0], row[1], len(self.summary)) if row else None
        if frames is None:
            return MISS
        try:
            return tuple(report_from_data(json.loads(f), shown) for f in frames)
        except (ValueError, TypeError, RecursionError):
            return MISS

    def packed_texts(self) -> tuple | Any:
        """The stored texts as ``(frames, texts_at)``, still packed, or ``MISS`` (none stored
        for this encoder); ``unpack_texts`` unpacks and checks them, one per record."""
        row = self._row("encoder, texts_at, texts")
        if not row or row[0] != self._cache.encoder or row[0] is None:
            return MISS
        return row[2], row[1]


class Answer:
    """A scan's whole answer as ``answers`` keeps it, checked: ``walk`` the digest of its walk;
    ``stats`` its ``ScanStats`` counts (ints); ``skipped`` its ``(path, why)`` pairs; ``files``
    ``(path, summary items)`` per file, in the order the scan accepted them. Its texts are read
    the way a ``Hit``'s are (``summary``: all the items, ``packed_texts``); it has no records."""

    __slots__ = ("_packed", "files", "skipped", "stats", "summary", "walk")
    STATS = ("files", "bytes", "inspected", "skipped")

    def __init__(self, walk: bytes, answer: Any, packed: tuple):
        stats, skipped, files = answer["stats"], answer["skipped"], answer["files"]
        if type(skipped) is not list or type(files) is not list:
            raise ValueError("answer: not lists")
        if type(stats) is not dict or set(stats) != set(self.STATS):
            raise ValueError("answer: stats")
        if not all(type(v) is int and v >= 0 for v in stats.values()):
            raise ValueError("answer: stats")
        for pair in (*skipped, *files):
            if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
                raise ValueError("answer: a file")
        if not all(type(why) is str for _, why in skipped) or not all(type(i) is list for _, i in files):
            raise ValueError("answer: a file")
        self.summary = _checked_summaries([item for _, items in files for item in items])
        self.walk, self.stats, self._packed = walk, stats, packed
        self.skipped = [(p, why) for p, why in skipped]
        self.files = [(p, items) for p, items in files]

    def packed_texts(self) -> tuple:
        return self._packed

    def reports(self, shown: str) -> Any:
        return MISS


def text_frames(packed: tuple, n: int) -> list[bytes] | None:
    """The ``n`` frames of a row's ``Hit.packed_texts``, still packed (``_split``), or None."""
    split = _split(packed[0], packed[1], n)
    return None if split is None else [frame for frame, _size in split]


class ScanCache:
    """``get``/``put`` by absolute path; ``options`` is a fingerprint of what the records contain;
    ``encoder`` names the text encoding the ``texts`` column holds (None: texts are not kept)."""

    def __init__(self, directory: str | None, options: str, encoder: str | None = None):
        self.options = f"{__version__}|{options}"
        self.encoder = encoder
        self.path: str | None = None
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple] = []  # rows with records not yet written
        self._bare: list[tuple] = []  # rows of files without device code not yet written
        self._pending_bytes = 0
        # path -> (dev, ino, size, mtime, ctime, summary), from ``preload``
        self._meta: dict[str, tuple] = {}
        self._preloaded: list[str] = []  # prefixes whose rows are all in ``_meta``
        if directory is None:
            return
        path = os.path.join(directory, f"scan-v{CACHE_VERSION}.sqlite3")
        if not _usable(directory, path):
            return
        self.path = path
        try:
            self._db = self._connect(path)
        except (OSError, sqlite3.Error):
            self._db = None
        if self._db is None and os.path.isfile(path):
            try:  # corrupt: it is only a cache
                os.unlink(path)
                self._db = self._connect(path)
            except (OSError, sqlite3.Error):
                self._db = None

    @staticmethod
    def _connect(path: str) -> sqlite3.Connection:
        old = os.umask(0o077)  # the database and its -wal/-shm files: this user only
        try:
            db = sqlite3.connect(path, timeout=5)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS files (path BLOB, dev INTEGER, ino INTEGER,"
                " size INTEGER, mtime INTEGER, ctime INTEGER, options TEXT, summary TEXT, records BLOB,"
                " records_at TEXT, encoder TEXT, texts_at TEXT, texts BLOB, PRIMARY KEY (path, options))"
                " WITHOUT ROWID"
            )
            db.execute(
                "CREATE TABLE IF NOT EXISTS answers (scan TEXT PRIMARY KEY, walk BLOB, answer TEXT,"
                " texts_at TEXT, texts BLOB) WITHOUT ROWID"
            )
        finally:
            os.umask(old)
        return db

    @property
    def enabled(self) -> bool:
        return self._db is not None

    def _query(self, sql: str, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        if self._db is None:
            return None
        try:
            return self._db.execute(sql, args).fetchone()
        except sqlite3.Error:
            return None

    def preload(self, prefix: str) -> dict[str, tuple]:
        """Read the keys and summaries (not the records) of every row at or under ``prefix``
        written with these options, in one query: a warm scan of 15,000 files costs one query,
        not 15,000. Returns ``{path: (dev, ino, size, mtime, ctime, summary)}`` (summary None: not
        a binary) for a caller that checks the keys itself."""
        if self._db is None:
            return {}
        p = os.fsencode(prefix)
        lo = p if p.endswith(os.sep.encode()) else p + os.sep.encode()
        hi = lo[:-1] + bytes([lo[-1] + 1])
        try:
            rows = self._db.execute(
                "SELECT path, dev, ino, size, mtime, ctime, summary FROM files "
                "WHERE (path = ? OR (path >= ? AND path < ?)) AND options = ?",
                (p, lo, hi, self.options),
            ).fetchall()
        except sqlite3.Error:
            return {}
        found = self._meta
        decode, enc = bytes.decode, sys.getfilesystemencoding()  # os.fsdecode, minus its checks
        for r in rows:
            if type(r[0]) is bytes:  # (a row some other writer keyed by text is not ours)
                found[decode(r[0], enc, "surrogateescape")] = r[1:]
        self._preloaded.append(os.fsdecode(lo))
        return found

    def answer(self, scan: str) -> Answer | None:
        """The kept answer of the scan ``scan`` names (``Answer``), checked, or None."""
        row = self._query("SELECT walk, answer, texts_at, texts FROM answers WHERE scan=?", (scan,))
        if row is None or type(row[0]) is not bytes:
            return None
        try:
            return Answer(row[0], json.loads(row[1]), (row[3], row[2]))
        except (ValueError, TypeError, KeyError, RecursionError):
            return None

    def put_answer(self, scan: str, walk: bytes, answer: dict, texts: list[bytes]) -> None:
        """Keep a scan's whole answer (``Answer``'s fields; ``texts``: its ``pack_text`` frames in
        the order of ``answer["files"]``'s items), replacing the one it had."""
        if self._db is None:
            return
        blob, texts_at = _column(texts)
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?,?,?,?,?)",
                (scan, walk, json.dumps(answer, separators=(",", ":")), texts_at, blob),
            )
            self._db.commit()
        except sqlite3.Error:
            self._db = None

    def get(self, path: str, key: Key) -> Hit | Miss | None:
        """``Hit`` for a valid row of a file with device code, None for one without, else ``MISS``."""
        if self._db is None:
            return MISS
        meta = self._meta.get(path)
        if meta is None and not any(path.startswith(p) for p in self._preloaded):
            meta = self._query(
                "SELECT dev, ino, size, mtime, ctime, summary FROM files WHERE path=? AND options=?",
                (os.fsencode(path), self.options),
            )
        if meta is None or tuple(meta[:5]) != tuple(key):
            return MISS
        if meta[5] is None:
            return None
        try:
            return Hit(self, os.fsencode(path), path, _summary_rows(meta[5]))
        except (ValueError, TypeError, RecursionError):
            return MISS

    def put(
        self,
        path: str,
        key: Key,
        records: Iterable[FileReport] | None,
        texts: list[bytes] | None = None,
        base: str | None = None,
    ) -> None:
        """``records``: a tuple (possibly empty) of full records whose paths start with ``base``
        (the path as scanned; default ``path``), or None for a file that is no binary at all;
        ``texts``: their encoded texts for ``self.encoder``, ``pack``ed, if any."""
        if self._db is None:
            return
        if records is None:
            self.put_encoded(path, key, None)
            return
        try:
            encoded = [encode_record(r, path if base is None else base) for r in records]
        except (ValueError, TypeError):  # a record that does not encode is not cached
            return
        self.put_encoded(path, key, encoded, texts)

    def put_encoded(
        self, path: str, key: Key, encoded: Sequence[EncodedRecord] | None, texts: list[bytes] | None = None
    ) -> None:
        """``put`` of records already turned into ``encode_record`` pairs (by a worker), the
        texts ``pack``ed. A pair without its data (a scan that keeps texts encodes none) writes
        the row without records; a row written without records or without texts keeps those of
        the row it replaces when that row has the same key (``_UPSERT``): a ``scan --format json``
        and a scan that needs the records each add what they read to the file's row."""
        if self._db is None:
            return
        if encoded is None:
            self._put_bare(path, key)
            return
        texts_at = blob = encoder = data = data_at = None
        summary = json.dumps([e[0] for e in encoded], separators=(",", ":"))
        datas = [e[1] for e in encoded if e[1] is not None]
        if len(datas) == len(encoded):
            data, data_at = _column(datas)
        if texts is not None and self.encoder is not None and len(texts) == len(encoded):
            encoder = self.encoder
            blob, texts_at = _column(texts)
        self._pending.append(
            (os.fsencode(path), *key, self.options, summary, data, data_at, encoder, texts_at, blob)
        )
        self._pending_bytes += len(data or b"") + len(blob or b"")
        if len(self._pending) >= COMMIT_EVERY or self._pending_bytes >= COMMIT_BYTES:
            self._write()

    def _put_bare(self, path: str, key: Key) -> None:
        """A file without device code: the key alone (a statement of 7 values, not 13)."""
        self._bare.append((os.fsencode(path), *key, self.options))
        if len(self._bare) >= COMMIT_EVERY:
            self._write()

    def _write(self) -> None:
        """Rows are written in batches (a statement per kind of row, one commit per
        ``COMMIT_EVERY`` files or ``COMMIT_BYTES``)."""
        rows, bare, self._pending, self._bare, self._pending_bytes = self._pending, self._bare, [], [], 0
        if self._db is None or not (rows or bare):
            return
        try:
            if rows:
                self._db.executemany(_UPSERT, rows)
            if bare:
                self._db.executemany(
                    "INSERT OR REPLACE INTO files (path, dev, ino, size, mtime, ctime, options)"
                    " VALUES (?,?,?,?,?,?,?)",
                    bare,
                )
            self._db.commit()
        except sqlite3.Error:
            self._db = None

    def flush(self) -> None:
        """Write the pending rows; the cache stays open for reading."""
        self._write()

    def forget(self, path: str) -> None:
        """Drop the row of ``path`` (one that could not give what it promised): the next scan
        reads the file."""
        self._write()
        if self._db is None:
            return
        try:
            self._db.execute(
                "DELETE FROM files WHERE path = ? AND options = ?", (os.fsencode(path), self.options)
            )
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


def encode_record(r: FileReport, base: str, data: bool = True) -> EncodedRecord:
    """A record as a row keeps it: ``(its summary as data, record data as ``pack``ed JSON or
    None without ``data``)``, paths relative to ``base`` (``record_data``); run by the worker
    that made the record, so the records need not come back."""
    from fatbin_inspect.scanning.coverage import summarize
    from fatbin_inspect.scanning.record_data import rebased_data

    item = rebased_data(summarize(r), base)
    return item, pack(json.dumps(rebased_data(r, base), separators=(",", ":")).encode()) if data else None


def record_data_parts(
    r: FileReport | None, base: str, fatbins: Sequence[Fatbin]
) -> tuple[bytes, bytes, bytes, list[bytes]]:
    """``encode_record``'s record data (before ``pack``) in parts, as ``file_rest_parts`` gives a
    text: (before, after, separator) of ``r`` (None: none) around the items of ``fatbins``; for
    a record with at least one fatbin the data is ``before + separator.join(items) + after``."""
    from fatbin_inspect.formats.model import Fatbin
    from fatbin_inspect.scanning.record_data import codec, rebased_data

    enc = codec(Fatbin).encode
    items = [json.dumps(enc(fb), separators=(",", ":")).encode() for fb in fatbins]
    if r is None:
        return b"", b"", b",", items
    row = rebased_data(r, base)
    i = codec(type(r)).names.index("fatbins")
    before = json.dumps(row[:i], separators=(",", ":"))[:-1] + ("," if i else "") + "["
    after = "]" + ("," if i + 1 < len(row) else "") + json.dumps(row[i + 1 :], separators=(",", ":"))[1:]
    return before.encode(), after.encode(), b",", items


def summaries_from(items: Iterable[list[Any]], shown: str) -> tuple[FileSummary, ...]:
    """``FileSummary`` records from summary items (a hit's, or ``encode_record``'s), on ``shown``."""
    from fatbin_inspect.scanning.coverage import FileSummary
    from fatbin_inspect.scanning.record_data import rebased_record

    return tuple(rebased_record(FileSummary, it, shown) for it in items)
