"""conda packages, read in place: ``.conda`` and ``.tar.bz2``.

A ``.conda`` (format version 2) is a zip of stored members: ``metadata.json``
(``{"conda_pkg_format_version": 2}``), ``info-<name>-<version>-<build>.tar.zst`` (the ``info/``
folder) and ``pkg-<name>-<version>-<build>.tar.zst`` (everything else). A ``.tar.bz2`` is one
bzip2 tar holding ``info/`` beside the files (conda-build writes ``info/`` first; where a file
comes first, as GNU tar orders them, ``info/`` is read in a pass of its own before). Both streams
are inflated once, front to back, into memory a member at a time: nothing touches the disk.

``info/index.json`` names the package (``name``, ``version``, ``build``, ``build_number``,
``subdir``, ``depends``, ...); ``info/paths.json`` lists its files (``{"paths": [{"_path",
"path_type", "sha256", "size_in_bytes"}], "paths_version": 1}``; older packages: ``info/files``,
one path a line). Members are named by their path in the package (``pkg.conda!lib/libcupy.so``,
the path ``paths.json`` gives): the inner ``pkg-*.tar.zst`` is a detail of the format.

The CUDA a package declares, strongest first: ``cuda-version`` in ``depends`` (conda-forge and
the nvidia channel pin it for every CUDA build: ``cuda-version >=12.4,<13.0a0``), the ``__cuda``
virtual package (the driver must implement at least that CUDA), and the ``cuda_compiler_version``
conda-forge puts in build strings (``cuda126``, ``cuda120_py311h...``, pytorch's ``cuda12.4``).
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import tarfile

import fatbin_inspect.containers.archives as archives
from fatbin_inspect.containers.archives import Member
from fatbin_inspect.errors import CorruptError, InputError, LimitExceeded
from fatbin_inspect.formats import documents
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.formats.model import Package

MAX_INFO_BYTES = 32 << 20  # paths.json of a large package (cudatoolkit) is a few MB
_META = ("info/index.json", "info/paths.json", "info/files")


def is_conda_zip(names: list[str]) -> bool:
    """A ``.conda``: ``metadata.json`` beside ``info-*``/``pkg-*.tar.zst``, whatever the file is called."""
    return "metadata.json" in names and any(
        n.startswith(("pkg-", "info-")) and n.endswith(".tar.zst") for n in names
    )


def declared_cuda(index: dict[str, Any]) -> tuple[str | None, str | None]:
    """(CUDA version, evidence) from an ``index.json``: depends first, then the build string."""
    found = _depends_cuda(index.get("depends"))
    if found[0] is not None:
        return found
    build = index.get("build")
    m = re.search(r"(?:^|[_\-.])cuda_?(\d+)(?:\.(\d+))?(?!\d)", build) if isinstance(build, str) else None
    v = _build_version(m.group(1), m.group(2)) if m else None
    return (v, f"conda build string {build}") if v else (None, None)


def _depends_cuda(depends: object) -> tuple[str | None, str | None]:
    """(CUDA version, evidence) from ``depends``: ``cuda-version``, then ``cudatoolkit`` (the
    runtime itself, as the older defaults and conda-forge packages pin it), then ``__cuda``."""
    deps = [d for d in depends if isinstance(d, str)] if isinstance(depends, list) else []
    for wanted in ("cuda-version", "cudatoolkit", "__cuda"):
        for dep in deps:
            parts = dep.split(None, 1)
            v = _lower_bound(parts[1]) if parts[0] == wanted and len(parts) > 1 else None
            if v:
                return v, f'conda depends "{dep}"'
    return None, None


def _lower_bound(spec: str) -> str | None:
    """``>=12.4,<13.0a0`` -> 12.4, ``12.*`` -> 12, ``==11.8`` -> 11.8; upper bounds alone: None."""
    for part in re.split(r"[,|]", spec.split(None, 1)[0]):
        part = part.strip()
        if not part or part.startswith(("<", "!")):
            continue
        m = re.match(r"(?:>=|==|>|~=|=)?\s*(\d+)(?:\.(\d+))?", part)
        if m:
            return m.group(1) if m.group(2) is None else f"{m.group(1)}.{m.group(2)}"
    return None


def _build_version(digits: str, minor: str | None) -> str | None:
    if minor is not None:
        return f"{int(digits)}.{int(minor)}"
    if len(digits) == 3:  # conda-forge: cuda118, cuda120, cuda126 (and cuda100, cuda101)
        return f"{int(digits[:2])}.{digits[2]}"
    if len(digits) == 2:  # cuda12, cuda11; cuda92 is 9.2
        return digits if int(digits) >= 10 else f"{digits[0]}.{digits[1]}"
    return None


def package_of(index: dict[str, Any]) -> Package:
    if not isinstance(index, dict) or not isinstance(index.get("name"), str):
        raise CorruptError("info/index.json names no package")
    cuda, source = declared_cuda(index)
    return Package(
        kind="conda",
        name=index["name"],
        version=str(index.get("version", "?")),
        build=str(index.get("build", "")),
        subdir=str(index.get("subdir", "")),
        cuda=cuda,
        cuda_source=source,
    )


class MetaRecord(NamedTuple):
    """An installed package's ``conda-meta/NAME-VERSION-BUILD.json``, checked: its package (None:
    no name), the paths it lists (relative to the prefix) and a note per value of the wrong type."""

    package: Package | None
    files: list[str]
    notes: list[str]


def _kind(value: object) -> str:
    """What a JSON value is, for a note: ``a number``, ``a list``, ``an object``, ..."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "a string" if isinstance(value, str) else "null"


def meta_record(doc: object, what: str) -> MetaRecord:
    """A parsed ``conda-meta`` record (``what`` names the file). ``name`` must be a non-empty
    string (else the package is unattributed, with a note); ``version``, ``build`` and ``subdir``
    that are not strings are left out and ``depends`` that is not a list is ignored, each with a
    note; ``files`` that is not a list attributes nothing (a note), and its entries that are not
    strings are skipped (one note counting them)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("name"), str) or not doc["name"]:
        return MetaRecord(None, [], [f"{what}: no package name: its files unattributed"])
    notes: list[str] = []
    clean: dict[str, object] = {"name": doc["name"]}
    for key, want in (("version", str), ("build", str), ("subdir", str), ("depends", list)):
        value = doc.get(key)
        if value is None:
            continue
        if isinstance(value, want):
            clean[key] = value
        else:
            notes.append(f"{what}: {key} is {_kind(value)}, not {_kind(want())}: ignored")
    files = doc.get("files", [])
    if not isinstance(files, list):
        notes.append(f"{what}: files is {_kind(files)}, not a list: its files unattributed")
        files = []
    paths = [f for f in files if isinstance(f, str)]
    if len(paths) < len(files):
        notes.append(f"{what}: {len(files) - len(paths)} entries of files are not strings: not attributed")
    return MetaRecord(package_of(clean), paths, notes)


class _InfoLater(Exception):
    """A ``.tar.bz2``'s ``info/`` comes after its files."""


class CondaReader:
    """The members of one conda package; ``package`` and ``paths`` are known once ``info/`` was
    read (before any member for a ``.conda``; for a ``.tar.bz2``, where ``info/`` comes)."""

    def __init__(self, blob: Blob, zf: zipfile.ZipFile | None = None):
        self.blob, self.zf = blob, zf
        self.package: Package | None = None
        self.paths: set[str] | None = None  # files the package lists (paths.json / info/files)
        self.notes: list[str] = []
        self._index: Any = None  # info/index.json and info/paths.json, parsed; info/files' bytes
        self._paths: Any = None
        self._files: bytes | None = None
        self.unread = False  # its metadata was there but could not be used (a note says why)

    @property
    def format(self) -> str:
        """What its record says: ``conda`` for a package (a ``.conda`` zip always), ``tar`` for a
        ``.tar.bz2`` without ``info/index.json``."""
        return "conda" if self.package is not None or self.zf is not None else "tar"

    def owner(self, name: str) -> Package | None:
        """The package, for a member it lists (every member when it lists none)."""
        if self.package is None or (self.paths is not None and name not in self.paths):
            return None
        return self.package

    def members(self) -> Iterator[Member]:
        if self.zf is not None:
            yield from self._conda()
            if self.package is None and not self.unread:
                raise CorruptError(".conda without info/index.json")
            return
        stream = archives.decompressed(self.blob, "bzip2 stream")
        head = stream.peek(512)[:512]
        if len(head) < 262 or head[257:262] != b"ustar":  # a compressed data file, not a package
            self.notes.append("bzip2 stream that holds no tar: not scanned")
            return
        try:
            yield from self._tar(stream, meta_only=False, first=True)
        except _InfoLater:  # GNU tar order: a file before info/; read info/ in a pass of its own
            for _ in self._tar(archives.decompressed(self.blob, "bzip2 stream"), meta_only=True):
                pass
            self._settle()
            yield from self._tar(archives.decompressed(self.blob, "bzip2 stream"), meta_only=False)
        self._settle()  # a plain .tar.bz2 when info/ is missing

    def _conda(self) -> Iterator[Member]:
        assert self.zf is not None  # members() reads a .conda zip only
        infos = self.zf.infolist()
        info_tar = [i for i in infos if i.filename.startswith("info-") and i.filename.endswith(".tar.zst")]
        pkg_tar = [i for i in infos if i.filename.startswith("pkg-") and i.filename.endswith(".tar.zst")]
        if len(info_tar) != 1 or len(pkg_tar) != 1:
            raise CorruptError(
                f".conda holds {len(info_tar)} info-*.tar.zst and {len(pkg_tar)} pkg-*.tar.zst (expected 1 each)"
            )
        for _ in self._tar(self._inner(info_tar[0]), meta_only=True):
            pass
        self._settle()
        yield from self._tar(self._inner(pkg_tar[0]), meta_only=False)

    def _inner(self, info: zipfile.ZipInfo) -> Any:
        """An inner ``.tar.zst`` as a zstd stream (stored, as conda writes them: a window into the
        package; otherwise inflated into memory within the member bounds first)."""
        if info.compress_type == zipfile.ZIP_STORED and not info.flag_bits & 0x1:
            hdr = self.blob.unpack(archives._ZIP_LOCAL, info.header_offset, "zip local header")
            data = info.header_offset + 30 + hdr[9] + hdr[10]
            inner = self.blob.view(data, info.compress_size, info.filename)
        else:
            assert self.zf is not None  # an inner tar is a member of the .conda zip
            with self.zf.open(info) as fh:
                inner = archives._spill(fh, info.file_size, info.filename)
        return archives.decompressed(inner, info.filename)

    def _tar(self, stream: Any, meta_only: bool, first: bool = False) -> Iterator[Member]:
        """``first``: raise ``_InfoLater`` at a package file that comes before ``info/index.json``
        (nothing was yielded yet); the caller reads ``info/`` first in another pass."""
        for ti, tf in archives.tar_entries(stream):
            if not ti.isreg():
                continue
            name = ti.name[2:] if ti.name.startswith("./") else ti.name
            if name in _META:
                self._read_meta(tf, ti, name)
            elif not meta_only and not name.startswith("info/"):
                if first and self._index is None:
                    raise _InfoLater
                self._settle()  # info/ comes first: the package is known from its first file on
                m = archives.tar_member(tf, ti, name=name)
                if m is not None:
                    yield m

    def _read_meta(self, tf: tarfile.TarFile, ti: tarfile.TarInfo, name: str) -> None:
        if ti.size > MAX_INFO_BYTES:
            raise LimitExceeded(f"{name} of {ti.size} bytes, over the {MAX_INFO_BYTES}-byte limit")
        data = archives.tar_bytes(tf, ti)
        if name == "info/files":
            self._files = data
            return
        try:  # bounded: 100,000 nested brackets are a note, not a RecursionError
            doc = documents.loads_json(data)
        except InputError as exc:
            self.unread = True
            note = f"{name} not read ({exc}): the package's files are not attributed to it"
            if note not in self.notes:  # info/ may be read twice (GNU tar order: a second pass)
                self.notes.append(note)
            return
        if name == "info/index.json":
            self._index = doc
        else:
            self._paths = doc

    def _listed(self) -> set[str] | None:
        """The files the package lists: ``paths.json``'s ``_path``s, else ``info/files``' lines;
        None when it lists none."""
        if isinstance(self._paths, dict) and isinstance(self._paths.get("paths"), list):
            return {
                p["_path"]
                for p in self._paths["paths"]
                if isinstance(p, dict) and isinstance(p.get("_path"), str)
            }
        if self._files is not None:
            return set(self._files.decode("utf-8", "replace").splitlines())
        return None

    def _settle(self) -> None:
        if self.package is None and self._index is not None:
            try:
                self.package = package_of(self._index)
            except CorruptError as exc:
                self.notes.append(f"{exc}: the package's files are not attributed to it")
                self._index, self.unread = None, True
                return
            self.paths = self._listed()
            n = len(self.paths) if self.paths is not None else None
            p = self.package
            self.notes.append(
                f"conda package {p.name} {p.version} {p.build} ({p.subdir or 'no subdir'})"
                + (f", {n} files listed" if n is not None else "")
            )
            if p.cuda:
                self.notes.append(f"declares CUDA {p.cuda} ({p.cuda_source})")
