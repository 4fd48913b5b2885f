"""Which distribution installed a file: ``*.dist-info/RECORD``, ``conda-meta/*.json``, the
dpkg and rpm databases of a system tree (``var/lib/dpkg``, ``rpmdb.sqlite``: see
``containers.packagedb``), wheel names.

A RECORD lists paths relative to the directory that holds the ``.dist-info`` folder (paths
starting ``../`` reach the prefix's ``bin/`` or ``lib/``). A conda prefix lists, in
``conda-meta/<name>-<version>-<build>.json``, every file of a package relative to the prefix. A
wheel's file name carries its distribution (``onnxruntime_gpu-1.23.2-cp311-...whl``, PEP 427
escapes ``-`` as ``_``). Metadata is read lazily, only in the ancestors of files that turned out
to hold device code, so the metadata of a 300-package environment is read only where it matters;
a RECORD (torch's runs to 12,000 lines) is not parsed line by line: a file is looked up in its text.

Metadata is input too: METADATA, RECORD and ``conda-meta`` files are read only when they are
regular files (never through a symlink, never a FIFO or ``/dev/zero``), at most ``META_MAX``
bytes, and only at or below each scan root's ``ceiling``: the root itself, or the environment
(venv or conda prefix, else ``site-packages``) the root lies in.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable

from fatbin_inspect.containers import packagedb
from fatbin_inspect.containers.wheel import info_dir_name, metadata_headers, metadata_name, wheel_name
from fatbin_inspect.formats.model import Package

# RECORD lines naming Python sources never hold device code; skipping them keeps the index small
_TEXT_SUFFIXES = (".py", ".pyc", ".pyi")


def wheel_distribution(filename: str) -> str | None:
    """``torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl`` -> ``torch 2.14.1``."""
    dist = wheel_name(filename)
    return dist.label if dist else None


def innermost_wheel(path: str) -> str | None:
    """The distribution of the innermost ``.whl`` in an archive path ``A!B.whl!C``, if any."""
    from fatbin_inspect.inventory import member_path

    parts = member_path.split(path)
    for part in reversed(parts[:-1]):
        if part.lower().endswith(".whl"):
            return wheel_distribution(part)
    return None


META_MAX = 64 << 20  # torch's RECORD is ~1 MB; a larger metadata file is not one
HEADERS_MAX = 1 << 20  # METADATA headers come first; the long description after them is not read


def read_regular(path: str, limit: int = META_MAX) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (not a symlink, FIFO or device), at most
    ``limit`` of them; None otherwise. Never blocks."""
    flags = (
        os.O_RDONLY
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, got = [], 0
        while got < limit:
            chunk = os.read(fd, min(1 << 20, limit - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _metadata_label(info_dir: str) -> str | None:
    """``Name Version`` from METADATA (or PKG-INFO), falling back to the folder name."""
    for meta in ("METADATA", "PKG-INFO"):
        data = read_regular(os.path.join(info_dir, meta), HEADERS_MAX)
        if data is None:
            continue
        dist = metadata_name(metadata_headers(data.decode("utf-8", "replace").splitlines(keepends=True)))
        if dist:
            return dist.label
    dist = info_dir_name(info_dir)
    return dist.label if dist else None


def _unquote(line: str) -> str:
    """The CSV-quoted first field of a RECORD line."""
    import csv

    try:
        return next(csv.reader([line]))[0]
    except csv.Error as exc:
        raise ValueError(str(exc)) from None


# RECORD lines that cannot be looked up as ``\n<path relative to the folder>,``: quoted, or
# reaching outside the folder (``../../bin/x``, absolute paths); rare, so parsed one by one
_SPECIAL_LINE = re.compile(rb'^(?:"|/|[^\n,]*\.\./).*$', re.M)


class _Record:
    """One RECORD, kept as bytes: ``claims(path)`` is a substring search, not a 12,000-line parse."""

    def __init__(self, info_dir: str):
        self.base = os.path.dirname(info_dir) + os.sep
        self.data = b"\n" + (read_regular(os.path.join(info_dir, "RECORD")) or b"")
        self.special: set[str] = set()
        if b'"' in self.data or b"\n/" in self.data or b"../" in self.data:
            for m in _SPECIAL_LINE.finditer(self.data):
                self.special.update(
                    _line_paths(m.group(0).decode("utf-8", "replace").rstrip("\r"), self.base)
                )

    def claims(self, path: str) -> bool:
        if path.endswith(_TEXT_SUFFIXES):
            return False
        if path in self.special:
            return True
        if not path.startswith(self.base):
            return False
        rel = path[len(self.base) :].encode("utf-8", "surrogateescape")
        return b"\n" + rel + b"," in self.data


def _line_paths(line: str, base: str) -> list[str]:
    try:
        rel = _unquote(line) if line.startswith('"') else line.rsplit(",", 2)[0]
    except ValueError:
        return []
    if not rel or rel.endswith(_TEXT_SUFFIXES):
        return []
    return [os.path.normpath(os.path.join(base, rel))]


def _conda_paths(meta_file: str, prefix: str, notes: list[str]) -> tuple[Package | None, list[str]]:
    """The package a ``conda-meta/*.json`` describes (its ``depends`` and ``build`` give the CUDA
    it declares, as the package's ``info/index.json`` did) and the files it installed; a record
    that does not parse or holds a value of the wrong type is a note (``conda.meta_record``)."""
    from fatbin_inspect.containers.conda import meta_record
    from fatbin_inspect.errors import InputError
    from fatbin_inspect.formats.documents import loads_json

    data = read_regular(meta_file)
    try:  # bounded (depth, NaN, lone surrogates): a bad record costs this package's attribution
        meta = loads_json(data) if data is not None else None
    except InputError as exc:
        notes.append(f"{meta_file}: {exc}: its package's files unattributed")
        return None, []
    record = meta_record(meta, meta_file)
    notes += record.notes if data is not None else []
    files = [
        os.path.normpath(os.path.join(prefix, f)) for f in record.files if not f.endswith(_TEXT_SUFFIXES)
    ]
    return record.package, files


DPKG = os.path.join(*packagedb.DPKG.split("/"))


def _dpkg_claims(root: str, links: dict[str, str], notes: list[str]) -> list[tuple[Package, set[str]]]:
    """``[(package, files)]`` of the packages dpkg installed in the system tree ``root`` (an
    image's root file system, a chroot), read as ``containers.packagedb`` describes; a database
    there that cannot be read is a note (its files would be unattributed without a word)."""
    status = os.path.join(root, DPKG, "status")
    info = os.path.join(root, DPKG, "info")
    data = read_regular(status)
    try:
        lists = sorted(os.listdir(info))
    except FileNotFoundError:
        lists = []
    except OSError as exc:
        if data is not None:
            notes.append(f"{info}: unreadable ({exc.strerror}): its dpkg packages' files unattributed")
        lists = []
    if data is None:
        if os.path.lexists(status):
            notes.append(f"{status}: not a regular file or unreadable: its dpkg packages' files unattributed")
        elif any(f.endswith(".list") for f in lists):
            notes.append(packagedb.dpkg_no_status_note(os.path.join(root, DPKG)))
        return []
    versions = packagedb.dpkg_versions(data, status, notes)
    out, lost = [], 0
    for f in lists:
        name = packagedb.dpkg_list_package(f)
        if name not in versions:
            continue
        text = read_regular(os.path.join(info, f))
        if text is None:
            lost += 1
        elif text:
            out.append(
                (
                    packagedb.dpkg_package(name, versions[name]),
                    _claimed(root, packagedb.dpkg_list_paths(text), links),
                )
            )
    if lost:
        notes.append(f"{info}: {lost} file lists unreadable: those dpkg packages' files unattributed")
    return out


def _claimed(root: str, paths: Iterable[str], links: dict[str, str]) -> set[str]:
    """The absolute paths a system package lists, as paths under ``root`` through its merged-/usr
    ``links`` (``/lib/x`` is ``ROOT/usr/lib/x`` where ``lib`` links to ``usr/lib``)."""
    return {
        os.path.normpath(os.path.join(root, packagedb.in_root(p, links)))
        for p in paths
        if not p.endswith(_TEXT_SUFFIXES)
    }


def _rpm_claims(root: str, links: dict[str, str], notes: list[str]) -> list[tuple[Package, set[str]]]:
    """``[(package, files)]`` of the rpm database of the system tree ``root`` (see
    ``containers.packagedb``: the sqlite one is read, other formats get a note)."""
    out = []
    for path, name in packagedb.rpm_databases(root):
        note = packagedb.rpm_not_read(name, path)
        if note is not None:
            notes.append(note)
            continue
        packages, more = packagedb.rpm_sqlite(path, path)
        notes += more + _wal_notes(path)
        out += [(package, _claimed(root, files, links)) for package, files in packages]
    return out


def _wal_notes(db: str) -> list[str]:
    try:
        note = packagedb.wal_note(os.lstat(db + "-wal").st_size, db + "-wal")
    except OSError:
        return []
    return [note] if note else []


def _system_claims(d: str, names: list[str], notes: list[str]) -> list[tuple[Package, set[str]]]:
    """The dpkg and rpm claims of ``d`` when it is a system tree (its folders ``names``)."""
    if "var" not in names and "usr" not in names:  # (Alpine and Wolfi have usr/ too)
        return []
    found, links = [], packagedb.tree_links(d)
    if "var" in names and os.path.isdir(os.path.join(d, DPKG)):
        found += _dpkg_claims(d, links, notes)
    found += _rpm_claims(d, links, notes)
    notes += packagedb.unread_databases(d, links)
    return found


def _record_claims(info: str) -> list[tuple[str, _Record]]:
    """The claim of one ``.dist-info``/``.egg-info`` folder (none without a name and version)."""
    label = _metadata_label(info)
    return [(label, _Record(info))] if label else []


def _conda_claims(prefix: str, notes: list[str]) -> list[tuple[Package, set[str]]]:
    """The claims of a prefix's ``conda-meta/*.json``, in sorted order."""
    meta_dir = os.path.join(prefix, "conda-meta")
    try:
        metas = sorted(f for f in os.listdir(meta_dir) if f.endswith(".json"))
    except OSError:
        return []
    out = []
    for f in metas:
        package, files = _conda_paths(os.path.join(meta_dir, f), prefix, notes)
        if package:
            out.append((package, set(files)))
    return out


def _site_dirs(prefix: str) -> list[str]:
    """``lib/pythonX.Y/site-packages`` (or ``dist-packages``) and ``Lib/site-packages`` of a prefix."""
    out = []
    try:
        pythons = sorted(n for n in os.listdir(os.path.join(prefix, "lib")) if n.startswith("python"))
    except OSError:
        pythons = []
    for py in pythons:
        out += [os.path.join(prefix, "lib", py, n) for n in ("site-packages", "dist-packages")]
    out.append(os.path.join(prefix, "Lib", "site-packages"))
    return [d for d in out if os.path.isdir(d)]


_Claim = tuple[str | Package, _Record | set[str]]  # (label or Package, its RECORD or paths)


class Attributor:
    """Maps real file paths to ``name version`` labels; ``None`` for files no metadata claims.

    A file belongs to the first claim found from its own folder outwards (within one folder, in
    the sorted order of the ``.dist-info``, ``.egg-info`` and ``conda-meta`` entries, then those of
    the folder's ``lib/python*/site-packages`` when it is a prefix), whatever order files come in."""

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self._dirs: dict[str, list[_Claim]] = {}  # folder -> its claims
        self.notes: list[str] = []  # one line each: package databases and records not read
        # the folders above which no metadata is read: each root's ``ceiling``, real and as given
        self._ceilings = sorted(
            {c for r in roots for c in (ceiling(r), ceiling(os.path.realpath(r)))}, key=len, reverse=True
        )

    def _claims(self, d: str) -> list[_Claim]:
        """The claims made in folder ``d``, then those of the site-packages of a prefix ``d``
        (RECORD lines ``../../../bin/x`` reach the prefix's ``bin/`` and ``lib/``)."""
        found = self._dirs.get(d)
        if found is None:
            found = self._dirs[d] = self._read_dir(d) + [
                c for sp in _site_dirs(d) for c in self._read_dir(sp)
            ]
        return found

    def _read_dir(self, d: str) -> list[_Claim]:
        found: list[_Claim] = []
        try:
            with os.scandir(d) as it:
                names = sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
        except OSError:
            return found
        found += _system_claims(d, names, self.notes)
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                found += _record_claims(os.path.join(d, name))
            elif name == "conda-meta":
                found += _conda_claims(d, self.notes)
        return found

    def distribution(self, path: str) -> str | None:
        """The ``name version`` of the owner of ``path`` (a file on disk)."""
        owner = self.owner(path)
        return owner.label if isinstance(owner, Package) else owner

    def owner(self, path: str) -> str | Package | None:
        """The owner of ``path``: a ``Package`` for a conda-meta claim (with its declared CUDA),
        a ``name version`` label for a RECORD. Every ancestor folder is looked at, so a file is
        attributed even when the scan started below its site-packages."""
        real = os.path.realpath(path)
        alt = os.path.normpath(os.path.abspath(path))
        names = (real,) if alt == real else (real, alt)
        for name in names:
            d = os.path.dirname(name)
            top = self._ceiling_of(d)
            while True:
                for label, claim in self._claims(d):
                    if (name in claim) if isinstance(claim, set) else claim.claims(name):
                        return label
                parent = os.path.dirname(d)
                if parent == d or d == top:
                    break
                d = parent
        return None

    def _ceiling_of(self, d: str) -> str | None:
        """The highest folder metadata is read in for files in ``d`` (None: no limit, for an
        Attributor made without roots)."""
        if not self._ceilings:
            return None
        for c in self._ceilings:  # the longest (innermost) first
            if d == c or d.startswith(c.rstrip(os.sep) + os.sep):
                return c
        return d  # outside every root: its own folder only


def ceiling(root: str) -> str:
    """The folder above which metadata is never read for files under ``root``: the venv or conda
    prefix the root lies in, else the ``site-packages``/``dist-packages`` folder, else the root
    (a file root: its folder). The root's own environment is what was asked to be scanned."""
    a = os.path.normpath(os.path.abspath(root))
    start = a if os.path.isdir(a) else os.path.dirname(a)
    d, site = start, None
    while True:
        if os.path.isfile(os.path.join(d, "pyvenv.cfg")) or os.path.isdir(os.path.join(d, "conda-meta")):
            return d
        if site is None and os.path.basename(d) in ("site-packages", "dist-packages"):
            site = d
        parent = os.path.dirname(d)
        if parent == d:
            return site or start
        d = parent
