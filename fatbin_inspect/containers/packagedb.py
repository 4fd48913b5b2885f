"""System package databases: which dpkg or rpm package installed a file of a root file system.

* dpkg (Debian, Ubuntu; ``nvidia/cuda`` images): ``var/lib/dpkg/status`` holds deb822 paragraphs
  (``Package``, ``Version``, ``Status``; only "install ok installed" packages count) and
  ``var/lib/dpkg/info/PACKAGE[:ARCH].list`` one absolute path a line (folders too).
* rpm (Fedora, RHEL 9, UBI 9, openSUSE; rpm >= 4.16): ``rpmdb.sqlite`` in ``var/lib/rpm`` or
  ``usr/lib/sysimage/rpm``, its ``Packages`` table ``(hnum, blob)`` one header blob a package. A
  blob is a header as rpm's ``headerExport`` writes it (the format manual, "Header"), without
  the 8-byte preamble a package file has (``8e ad e8 01`` and four reserved bytes; accepted when
  present): big-endian ``il`` (index entries) and ``dl`` (data bytes), ``il`` entries of
  ``tag, type, offset, count``, then the data. Read here: NAME 1000, VERSION 1001, RELEASE 1002,
  EPOCH 1003 (strings, type 6; EPOCH int32, type 4), and the files as BASENAMES 1117 (string
  array, type 8), DIRNAMES 1118 and DIRINDEXES 1116 (int32 array: each basename's dirname), or
  OLDFILENAMES 1027 in headers older than rpm 4.1. Every offset and count is checked against
  the data before a byte is read; a bad header costs its package, with a note.
* Not read: rpm's Berkeley DB ``Packages`` (CentOS 7/8, RHEL 7/8, Amazon Linux 2) and its ndb
  ``Packages.db`` (openSUSE before 2021), a distroless image's ``var/lib/dpkg/status.d/`` (one
  paragraph per package, no ``status``) and apk's ``lib/apk/db/installed`` (Alpine, Wolfi,
  Chainguard): a note says so (``not_read_note``), their files stay unattributed. So does a dpkg
  database that is there but cannot be read (``status`` unreadable or absent beside file lists).

The sqlite file is opened read-only and immutable (``file:PATH?mode=ro&immutable=1``: no lock, no
journal, nothing written beside it); a write-ahead log beside it (packages installed since its
last checkpoint) is not read, with a note.
"""

from __future__ import annotations

import os
import posixpath
import re
import struct
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING

from fatbin_inspect.errors import CorruptError, InputError, LimitExceeded
from fatbin_inspect.formats.model import Package

if TYPE_CHECKING:
    import sqlite3  # imported where a database is read

DPKG = "var/lib/dpkg"
DPKG_STATUS = f"{DPKG}/status"
RPM_DIRS = ("var/lib/rpm", "usr/lib/sysimage/rpm")  # Fedora links the first to the second
RPM_SQLITE = "rpmdb.sqlite"
RPM_NOT_READ = {"Packages": "Berkeley DB", "Packages.db": "ndb"}
RPMDB_MAX = 1 << 30  # a Fedora workstation's rpmdb.sqlite is ~150 MB; an image's 5-30 MB
HEADER_MAX = 32 << 20  # rpm itself refuses a header's data over 256 MB; real ones are < 1 MB
PACKAGES_MAX = 200_000  # packages one database may hold (a full distribution: ~70,000)
FILES_MAX = 4_000_000  # file paths all the packages of one database may list together

# databases found but not read: root-relative path -> what the note calls them; an image member
# belongs to one when it is a file under status.d/, or apk's file (or its merged-/usr twin)
NOT_READ = {f"{DPKG}/status.d": "dpkg status.d (distroless)", "lib/apk/db/installed": "apk"}
_NOT_READ_MEMBER = re.compile(r"^(?:(var/lib/dpkg/status\.d)/.+|(?:usr/)?(lib/apk/db/installed))$")

_MAGIC = b"\x8e\xad\xe8\x01"
NAME, VERSION, RELEASE, EPOCH = 1000, 1001, 1002, 1003
OLDFILENAMES, DIRINDEXES, BASENAMES, DIRNAMES = 1027, 1116, 1117, 1118
_STRING, _INT32, _STRING_ARRAY, _I18NSTRING = 6, 4, 8, 9


# a merged-/usr system (Debian 12, Ubuntu 22.04, Fedora, UBI) links these to usr/: a package
# lists /lib/x86_64-linux-gnu/libx.so, the file lies in usr/lib/x86_64-linux-gnu/
MERGED_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def top_link(name: str, target: str) -> str | None:
    """The root-relative folder a top-level link ``name`` -> ``target`` names (``usr/lib`` for
    ``lib -> usr/lib`` or ``/usr/lib``), None for other links or one leaving the root."""
    if name not in MERGED_DIRS:
        return None
    rel = posixpath.normpath(target.lstrip("/"))
    return None if rel in (".", "") or rel.startswith("..") else rel


def in_root(path: str, links: dict[str, str]) -> str:
    """An absolute path a package lists, relative to the root and through its top-level links."""
    rel = posixpath.normpath(path.lstrip("/"))
    top, sep, rest = rel.partition("/")
    return f"{links[top]}{sep}{rest}" if top in links and sep else rel


def tree_links(root: str) -> dict[str, str]:
    """The top-level links of the system tree ``root`` that ``in_root`` follows."""
    out = {}
    for name in MERGED_DIRS:
        try:
            target = top_link(name, os.readlink(os.path.join(root, name)))
        except OSError:
            continue
        if target is not None:
            out[name] = target
    return out


# ------------------------------------------------------------------------------------- dpkg
# Debian policy 5.6.1 and 5.6.12: a package name, and a version ([epoch:]upstream[-revision])
_DEB_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]{1,127}$")
_DEB_VERSION = re.compile(r"^(?:\d{1,9}:)?[A-Za-z0-9.+~-]{1,255}$")


def dpkg_versions(status: bytes, what: str, notes: list[str]) -> dict[str, str]:
    """Package name -> version of the installed packages of a dpkg ``status`` file (``what``).
    A paragraph whose ``Package`` or ``Version`` is not one Debian allows is skipped, counted in
    one note; at most ``PACKAGES_MAX`` packages (then a note)."""
    versions: dict[str, str] = {}
    bad = 0
    for para in status.decode("utf-8", "replace").split("\n\n"):
        fields = dict(
            line.split(":", 1) for line in para.splitlines() if ":" in line and not line[:1].isspace()
        )
        name, version = fields.get("Package", "").strip(), fields.get("Version", "").strip()
        if not (name and version and fields.get("Status", "").split()[-1:] == ["installed"]):
            continue
        if not _DEB_NAME.match(name) or not _DEB_VERSION.match(version):
            bad += 1
            continue
        if len(versions) >= PACKAGES_MAX:
            notes.append(f"{what}: over {PACKAGES_MAX} packages: the rest unattributed")
            break
        versions[name] = version
    if bad:
        notes.append(
            f"{what}: {bad} installed packages whose Package or Version is not one Debian allows: "
            "their files unattributed"
        )
    return versions


def dpkg_list_package(filename: str) -> str | None:
    """``libcudart12:amd64.list`` -> ``libcudart12``; None for other files of ``info/``."""
    if not filename.endswith(".list"):
        return None
    return filename[: -len(".list")].split(":", 1)[0] or None


def dpkg_list_paths(data: bytes) -> list[str]:
    """The absolute paths (``/usr/lib/...``) a ``.list`` file names, as bytes decode (undecodable
    bytes kept as surrogates, as ``os`` names them)."""
    return [line for line in data.decode("utf-8", "surrogateescape").splitlines() if line.startswith("/")]


def dpkg_package(name: str, version: str) -> Package:
    return Package("deb", name, version)


# -------------------------------------------------------------------------------------- rpm
def rpm_header(blob: bytes, what: str = "rpm header") -> tuple[Package, list[str]]:
    """The package a header blob describes and its files (absolute paths); ``CorruptError``
    naming ``what`` and the offset when an entry points outside the blob."""
    h = _Header(blob, what)
    name, version, release = (next(iter(h.strings(t)), "") for t in (NAME, VERSION, RELEASE))
    if not name or not version:
        raise CorruptError(f"{what}: no NAME or VERSION")
    epoch = h.ints(EPOCH)
    evr = f"{epoch[0]}:" if epoch and epoch[0] else ""
    evr += f"{version}-{release}" if release else version
    return Package("rpm", name, evr), h.files()


class _Header:
    """The index entries of one header blob, and their values read with bounds."""

    def __init__(self, blob: bytes, what: str):
        if len(blob) > HEADER_MAX + 8:
            raise LimitExceeded(f"{what}: {len(blob)} bytes, over the {HEADER_MAX}-byte limit")
        start = 8 if blob[:4] == _MAGIC else 0
        if len(blob) < start + 8:
            raise CorruptError(f"{what}: {len(blob)} bytes, shorter than a header's counts", start)
        il, dl = struct.unpack_from(">II", blob, start)
        index = start + 8
        data = index + 16 * il
        if il == 0 or data + dl > len(blob):
            raise CorruptError(
                f"{what}: {il} entries and {dl} data bytes do not fit its {len(blob)} bytes", start
            )
        self.what, self.area = what, blob[: data + dl]
        self.entries: dict[int, tuple[int, int, int]] = {}
        for i in range(il):
            tag, kind, offset, count = struct.unpack_from(">IIII", blob, index + 16 * i)
            if offset > dl or count > dl:
                raise CorruptError(f"{what}: entry {i} (tag {tag}) points outside the data", index + 16 * i)
            self.entries[tag] = (kind, data + offset, count)

    def strings(self, tag: int) -> list[str]:
        hit = self.entries.get(tag)
        if hit is None:
            return []
        kind, pos, count = hit
        if kind not in (_STRING, _STRING_ARRAY, _I18NSTRING):
            raise CorruptError(f"{self.what}: tag {tag} is of type {kind}, not a string", pos)
        out = []
        for _ in range(1 if kind == _STRING else count):
            end = self.area.find(b"\0", pos)
            if end < 0:
                raise CorruptError(f"{self.what}: tag {tag}: a string runs past the data", pos)
            out.append(self.area[pos:end].decode("utf-8", "surrogateescape"))
            pos = end + 1
        return out

    def ints(self, tag: int) -> list[int]:
        hit = self.entries.get(tag)
        if hit is None:
            return []
        kind, pos, count = hit
        if kind != _INT32 or pos + 4 * count > len(self.area):
            raise CorruptError(f"{self.what}: tag {tag} is no int32 array inside the data", pos)
        return list(struct.unpack_from(f">{count}I", self.area, pos))

    def files(self) -> list[str]:
        basenames = self.strings(BASENAMES)
        if not basenames:
            return self.strings(OLDFILENAMES)
        dirnames, dirindexes = self.strings(DIRNAMES), self.ints(DIRINDEXES)
        if len(dirindexes) != len(basenames) or any(i >= len(dirnames) for i in dirindexes):
            raise CorruptError(f"{self.what}: {len(basenames)} basenames, {len(dirindexes)} dirindexes")
        return [dirnames[i] + b for i, b in zip(dirindexes, basenames, strict=True)]


# The one query of a ``Packages`` table: each row's ``hnum`` and its blob's type and length, and
# the blob itself only when SQL has seen that it is a blob of at most ``?`` bytes (a text, an
# integer or a 1 GB blob is never fetched into Python); rows in rowid order, at most ``?`` of them.
_ROWS = (
    "SELECT hnum, typeof(hnum), typeof(blob), length(blob), "
    "CASE WHEN typeof(blob) = 'blob' AND length(blob) <= ? THEN blob END "
    "FROM main.Packages ORDER BY rowid LIMIT ?"
)


class _Schema(Exception):
    """The database's ``Packages`` is not the plain table rpm writes."""


def _check_schema(con: sqlite3.Connection) -> None:
    """``Packages`` must be a real table (``sqlite_master`` type ``table``, not a view, not a
    virtual table) with a rowid and plain ``hnum`` and ``blob`` columns (no generated column: an
    expression SQLite would evaluate as it reads); ``_Schema`` says what it is otherwise."""
    rows = con.execute(
        "SELECT type, sql FROM main.sqlite_master WHERE name = 'Packages' COLLATE NOCASE LIMIT 2"
    ).fetchall()
    if not rows:
        raise _Schema("no Packages table")
    kind, sql = rows[0]
    if kind != "table":
        raise _Schema(f"its Packages is a {kind!s:.20}, not a table")
    text = sql if isinstance(sql, str) else ""
    if text[:32].upper().replace(" ", "").startswith("CREATEVIRTUAL"):
        raise _Schema("its Packages is a virtual table")
    if "WITHOUT ROWID" in text.upper():
        raise _Schema("its Packages has no rowid")
    cols = {  # name -> 'hidden': 0 a plain column, 2 and 3 generated ones
        r[1].lower(): r[6]
        for r in con.execute("PRAGMA main.table_xinfo('Packages')")
        if isinstance(r[1], str)
    }
    if "hnum" not in cols or "blob" not in cols:
        raise _Schema("its Packages has no hnum and blob columns")
    if cols["hnum"] or cols["blob"]:
        raise _Schema("its Packages holds generated columns")


def _connect(path: str) -> sqlite3.Connection:
    """The database opened read-only and immutable (no lock, no journal, nothing written), with
    no schema function trusted (``trusted_schema``), and values bounded (``SQLITE_LIMIT_LENGTH``)."""
    import sqlite3
    from urllib.parse import quote

    con = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro&immutable=1", uri=True)
    con.execute("PRAGMA trusted_schema = OFF")
    con.execute("PRAGMA query_only = ON")
    limit = getattr(sqlite3, "SQLITE_LIMIT_LENGTH", None)  # Python 3.11+
    if limit is not None:
        con.setlimit(limit, HEADER_MAX + 16)  # type: ignore[attr-defined]
    return con


def rpm_sqlite(path: str, what: str) -> tuple[list[tuple[Package, list[str]]], list[str]]:
    """The packages of an ``rpmdb.sqlite`` (a regular file the caller has checked) and notes.

    Data, never a program: only a real ``Packages`` table is read (a view, a virtual table or
    generated columns cost the database, with a note); each row's types and lengths are checked
    in SQL before its blob is fetched (``_ROWS``); at most ``PACKAGES_MAX`` rows, ``HEADER_MAX``
    bytes a header, ``RPMDB_MAX`` bytes in all. A row whose ``hnum`` or ``blob`` is of another
    type, too long, or a header that does not parse costs its package (a note); a database that
    does not open costs all."""
    import sqlite3

    out: list[tuple[Package, list[str]]] = []
    notes: list[str] = []
    bad, files, total = 0, 0, 0
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        return [], [f"{what}: unreadable ({exc.strerror}): its files unattributed"]
    if size > RPMDB_MAX:
        return [], [
            f"{what}: {size} bytes, over the {RPMDB_MAX}-byte limit: not read, its files unattributed"
        ]

    def lost(message: str) -> None:
        nonlocal bad
        bad += 1
        if bad == 1:
            notes.append(f"{message}: that package's files unattributed")

    try:
        con = _connect(path)
    except sqlite3.Error as exc:
        return [], [f"{what}: not an rpm sqlite database ({exc}): its files unattributed"]
    try:
        _check_schema(con)
        for n, (hnum, hnum_type, blob_type, length, blob) in enumerate(
            con.execute(_ROWS, (HEADER_MAX + 8, PACKAGES_MAX + 1))
        ):
            row = f"{what} header {hnum}" if hnum_type == "integer" else f"{what} row {n + 1}"
            if n >= PACKAGES_MAX:
                notes.append(f"{what}: over {PACKAGES_MAX} packages: the rest unattributed")
                break
            if hnum_type != "integer" or blob_type != "blob":
                lost(f"{row}: hnum is {hnum_type!s:.10} and blob is {blob_type!s:.10}, not integer and blob")
                continue
            if blob is None:
                lost(f"{row}: {length} bytes, over the {HEADER_MAX}-byte limit")
                continue
            total += len(blob)
            if total > RPMDB_MAX:
                notes.append(f"{what}: its headers hold over {RPMDB_MAX} bytes: the rest unattributed")
                break
            try:
                package, paths = rpm_header(bytes(blob), row)
            except InputError as exc:
                lost(str(exc))
                continue
            files += len(paths)
            if files > FILES_MAX:
                notes.append(f"{what}: its packages list over {FILES_MAX} files: the rest unattributed")
                break
            out.append((package, paths))
    except _Schema as exc:
        return [], [f"{what}: {exc}: not read, its files unattributed"]
    except sqlite3.Error as exc:
        notes.append(f"{what}: not an rpm sqlite database ({exc}): its files unattributed")
        return [], notes
    finally:
        con.close()
    if bad > 1:
        notes.append(f"{what}: {bad} rows or headers that do not parse, their packages unattributed")
    return out, notes


def not_read_note(kind: str, what: str) -> str:
    """The note for a package database of a kind not read (``NOT_READ``), found at ``what``."""
    return f"{what}: {kind} package database not read: its files unattributed"


def not_read_db(path: str) -> str | None:
    """The ``NOT_READ`` database (its key) a root-relative image member belongs to, or None."""
    m = _NOT_READ_MEMBER.match(path)
    return None if m is None else m.group(m.lastindex or 0)


def unread_databases(root: str, links: dict[str, str]) -> list[str]:
    """Notes for the ``NOT_READ`` databases of the system tree ``root`` (through its merged-/usr
    ``links``, never outside it)."""
    real_root, out = os.path.realpath(root), []
    for rel, kind in NOT_READ.items():
        path = os.path.join(root, in_root(rel, links))
        if _inside(real_root, os.path.realpath(path)) and os.path.lexists(path):
            out.append(not_read_note(kind, path))
    return out


def dpkg_no_status_note(what: str) -> str:
    """The note for a dpkg database (``what``) with file lists but no ``status``: no versions."""
    return f"{what}: no status file: the packages its file lists name unattributed"


def wal_note(size: int, what: str) -> str | None:
    """The note for a non-empty write-ahead log ``rpmdb.sqlite-wal`` (``what``) of ``size`` bytes."""
    if size <= 0:
        return None
    return (
        f"{what}: a write-ahead log of {size} bytes not read: packages installed since its last "
        "checkpoint may be unattributed"
    )


def rpm_not_read(name: str, what: str) -> str | None:
    """The note for an rpm database of a format not read (``Packages``: Berkeley DB)."""
    kind = RPM_NOT_READ.get(name)
    return None if kind is None else f"{what}: rpm database format {kind} not read: its files unattributed"


def rpm_spooled(
    stream: IO[bytes] | None, size: int, what: str
) -> tuple[list[tuple[Package, list[str]]], list[str]]:
    """``rpm_sqlite`` of a database read from ``stream`` (an image layer's member of ``size``
    bytes): copied to a private temporary file (mode 0600, removed after), at most
    ``RPMDB_MAX`` bytes."""
    import shutil
    import tempfile

    if size > RPMDB_MAX:
        return [], [
            f"{what}: {size} bytes, over the {RPMDB_MAX}-byte limit: not read, its files unattributed"
        ]
    with tempfile.NamedTemporaryFile(prefix="fatbin-inspect-rpmdb-", suffix=".sqlite") as tmp:
        shutil.copyfileobj(_Capped(stream, size), tmp)
        tmp.flush()
        return rpm_sqlite(tmp.name, what)


class _Capped:
    """The first ``size`` bytes of ``stream``, as ``shutil.copyfileobj`` reads them."""

    def __init__(self, stream: IO[bytes] | None, size: int):
        self.stream, self.left = stream, size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.stream.read(n) if n and self.stream is not None else b""
        self.left -= len(data)
        return data


def rpm_databases(root: str) -> Iterator[tuple[str, str]]:
    """``(path, name)`` of the rpm database files of the system tree ``root``: the first of
    ``RPM_DIRS`` holding one (``var/lib/rpm`` is often a link to the other), each a regular file
    whose real path stays inside ``root``."""
    real_root = os.path.realpath(root)
    seen: set[str] = set()
    for d in RPM_DIRS:
        for name in (RPM_SQLITE, *RPM_NOT_READ):
            path = os.path.join(root, d, name)
            real = os.path.realpath(path)
            if real in seen or not _inside(real_root, real) or not _regular(real):
                continue
            seen.add(real)
            yield real, name


def _inside(real_root: str, real: str) -> bool:
    """The resolved path ``real`` lies under the resolved root ``real_root``."""
    return real.startswith(real_root + os.sep)


def _regular(path: str) -> bool:
    import stat

    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
