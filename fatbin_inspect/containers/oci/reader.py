"""An image's final filesystem, read layer by layer (top first, each layer hashed as it
streams): its visible regular files, and the metadata that attributes them to packages."""

from __future__ import annotations

import io
import posixpath
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from fatbin_inspect.containers import archives, packagedb
from fatbin_inspect.containers.archives import Member
from fatbin_inspect.containers.oci.meta import (
    _META,
    _RPMDB,
    MAX_HELD_BYTES,
    MAX_JSON_BYTES,
    MAX_META_BYTES,
    MAX_OWNED,
    MAX_PATHS,
    Image,
    Layer,
    loads,
)
from fatbin_inspect.containers.oci.store import Store
from fatbin_inspect.errors import CorruptError, LimitExceeded
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.formats.model import Package

if TYPE_CHECKING:
    import tarfile
    from collections.abc import Iterable
    from typing import BinaryIO


class Hashing(io.RawIOBase):
    """A read-once stream that hashes (sha256) and counts every byte it gives."""

    def __init__(self, raw: BinaryIO):
        import hashlib

        self.raw, self.sha, self.total = raw, hashlib.sha256(), 0

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.total

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.raw.read(len(target))
        n = len(data)
        if n:
            target[:n] = data
            self.sha.update(data)
            self.total += n
        return n

    def finish(self, digest: str | None, size: int | None, what: str) -> None:
        """Read what is left and compare with ``digest`` and ``size``; a mismatch names ``what``."""
        while self.read(archives.CHUNK):
            pass
        got = "sha256:" + self.sha.hexdigest()
        if digest is not None and got != digest:
            raise CorruptError(f"{what}: its bytes hash to {got}, not to its digest {digest}")
        if size is not None and self.total != size:
            raise CorruptError(f"{what}: {self.total} bytes, its descriptor says {size}")


class _OpenLayer(NamedTuple):
    blob: Any  # the stored layer (a Blob, or a registry stream)
    raw: Hashing  # its stored bytes, hashed
    stream: Any  # its tar (raw itself for a plain tar)
    unpacked: Hashing | None  # a compressed docker save layer's tar, hashed


class ImageReader:
    """The visible regular files of an image's layers, top layer first, each layer read once;
    ``meta`` collects the Python, conda and dpkg metadata files of the final filesystem, ``rpm``
    the packages of its rpm database; ``files``,
    ``bytes``: the regular files of all the layers and their uncompressed bytes."""

    def __init__(self, store: Store, image: Image, prefix: str = ""):
        self.store, self.image, self.prefix = store, image, prefix
        self.meta: dict[str, bytes] = {}
        self.meta_left = MAX_META_BYTES // 2  # (the other half: manifests, indexes, configs)
        self.meta_skipped = 0
        self.meta_over: set[str] = set()  # metadata paths over the bound (a note says so)
        self.rpm: list[tuple[Package, list[str]]] = []  # the packages of its rpm database
        self.links: dict[str, str] = {}  # its top-level merged-/usr links (lib -> usr/lib)
        self.notes: list[str] = []
        self.files = self.bytes = 0
        # the final filesystem's regular files (a hard link is one too, as unpacked) and bytes
        self.contents = [0, 0]
        self._paths: set[str] = set()  # every path an upper layer has (files, folders, links)
        self._nondirs: set[str] = set()  # upper files and links: nothing below them shows
        self._gone: set[str] = set()  # deleted by an upper whiteout
        self._opaque: set[str] = set()  # folders an upper layer made opaque ("": the root)
        # path -> names of upper layers' hard links to it, waiting for the lower layer that has it
        self._pending: dict[str, list[str]] = {}

    def _hidden(self, path: str) -> bool:
        if path in self._paths or path in self._gone or "" in self._opaque:
            return True
        d = posixpath.dirname(path)
        while d:
            if d in self._nondirs or d in self._gone or d in self._opaque:
                return True
            d = posixpath.dirname(d)
        return False

    def members(self) -> Iterator[Member]:
        """The members, as they stream (memory holds one at a time). A layer's digest is known
        at its end: a mismatch raises ``CorruptError`` then, and the caller drops whatever it
        made of that image's members (``inventory.reader`` holds an image's records until its
        last layer). A member with ``alias`` is a hard link to a visible file: it has that
        member's records."""
        counts = dict(hidden=0, whiteouts=0, links=0, hardlinks=0, outside=0, unverified=0)
        layers = self.image.layers
        for pos in range(len(layers) - 1, -1, -1):
            yield from self._layer(layers[pos], counts)
        counts["links"] += sum(map(len, self._pending.values()))  # links to nothing below them
        self._pending.clear()
        c = counts
        self.notes.append(
            f"image {self.image.label}: {len(layers)} layers, {c['whiteouts']} whiteouts, "
            f"{c['hidden']} files replaced or deleted by upper layers, {c['links']} links not "
            f"followed, {c['hardlinks']} hard links followed, {self.files} files of "
            f"{self.bytes} bytes in the layers, {self.contents[0]} files of {self.contents[1]} "
            "bytes in its filesystem"
            + (f", {c['outside']} entries outside the image skipped" if c["outside"] else "")
            + (f", {c['unverified']} layers without a digest to check" if c["unverified"] else "")
            + (f", {self.meta_skipped} metadata files over the bound not read" if self.meta_skipped else "")
        )

    def _open_layer(self, layer: Layer, what: str, counts: dict[str, int]) -> _OpenLayer:
        """``(blob, raw, stream, unpacked)`` of a layer: ``raw`` hashes its stored bytes,
        ``stream`` gives its tar (``raw`` itself for a plain tar), ``unpacked`` (a compressed
        docker save layer) hashes that tar."""
        blob = self.store.get(layer.name)
        if blob is None:
            raise CorruptError(f"layer {layer.digest or layer.name} is missing from the image")
        raw = Hashing(blob.stream())
        stream = archives.decompressed(blob, what, fileobj=raw)
        unpacked = None  # docker save: the uncompressed tar's digest is the one to check
        if layer.digest is None and layer.diff_id is not None and stream is not raw:
            stream = unpacked = Hashing(stream)
        elif layer.digest is None and layer.diff_id is None:
            counts["unverified"] += 1
        return _OpenLayer(blob, raw, stream, unpacked)

    def _layer(self, layer: Layer, counts: dict) -> Iterator[Member]:
        what = f"layer {layer.digest or layer.name}"
        blob, raw, stream, unpacked = self._open_layer(layer, what, counts)
        plain = stream is raw  # a plain tar: members are windows into the blob (no copy)
        walk = _LayerWalk(self, layer.name, blob if plain and isinstance(blob, Blob) else None, counts)
        for ti, tf in archives.tar_entries(stream):
            yield from walk.entry(ti, tf)
        if unpacked is not None:
            unpacked.finish(layer.diff_id, None, f"{what} (uncompressed)")
        raw.finish(layer.digest or (layer.diff_id if plain else None), layer.size, what)
        for target in [t for t in self._pending if walk.hides(t)]:  # deleted before the link was made
            counts["links"] += len(self._pending.pop(target))
        for target, names in walk.pending.items():
            self._pending.setdefault(target, []).extend(names)
        self._paths |= walk.paths
        self._nondirs |= walk.nondirs
        self._gone |= walk.gone
        self._opaque |= walk.opaque
        if len(self._paths) > MAX_PATHS:
            raise LimitExceeded(f"more than {MAX_PATHS} paths in the image's layers")

    def _keep_meta(self, tf: tarfile.TarFile, ti: tarfile.TarInfo, path: str) -> None:
        if ti.size > MAX_JSON_BYTES or ti.size > self.meta_left:
            if not self.meta_skipped:
                self.notes.append(
                    f"{path}: {ti.size} bytes of metadata over the image's bound ({MAX_META_BYTES // 2} "
                    "bytes of layer metadata in all): not read, its files unattributed"
                )
            self.meta_skipped += 1
            self.meta_over.add(path)
            return
        self.meta_left -= ti.size
        self.meta[path] = archives.tar_bytes(tf, ti)

    def _note_once(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def _unread_db(self, rel: str) -> None:
        """A file of the package database ``rel`` (a ``packagedb.NOT_READ`` key): one note for it."""
        self._note_once(packagedb.not_read_note(packagedb.NOT_READ[rel], f"{self.image.label}: {rel}"))

    def _keep_rpmdb(self, tf: tarfile.TarFile, ti: tarfile.TarInfo, path: str) -> None:
        """An rpm database of the final filesystem: an sqlite one read now (spooled to a private
        temporary file, see ``packagedb.rpm_spooled``), another format a note."""
        what = f"{self.image.label}: {path}"
        if path.endswith("-wal"):
            note = packagedb.wal_note(ti.size, what)
            self.notes += [note] if note else []
            return
        note = packagedb.rpm_not_read(posixpath.basename(path), what)
        if note is not None:
            self.notes.append(note)
            return
        packages, notes = packagedb.rpm_spooled(tf.extractfile(ti), ti.size, what)
        self.rpm += packages
        self.notes += notes

    def owners(self) -> dict[str, Package]:
        """Image path -> the distribution or package that lists it (final filesystem): Python
        RECORDs and conda-meta first, then dpkg's and rpm's databases. A metadata file that does
        not parse costs its own package's attribution, with a note."""
        out: _Owners = _Owners(self.notes)
        for path, data in sorted(self.meta.items()):
            if path.endswith("/RECORD"):
                self._record_owners(out, path, data)
            elif "/conda-meta/" in "/" + path and path.endswith(".json"):
                self._conda_owners(out, path, data)
        status = self.meta.get(packagedb.DPKG_STATUS)
        what = f"{self.image.label}: {packagedb.DPKG_STATUS}"
        versions = packagedb.dpkg_versions(status, what, self.notes) if status is not None else {}
        absent = status is None and packagedb.DPKG_STATUS not in self.meta_over
        if absent and any(p.startswith(packagedb.DPKG + "/info/") for p in self.meta):
            self._note_once(packagedb.dpkg_no_status_note(f"{self.image.label}: {packagedb.DPKG}"))
        for path, data in sorted(self.meta.items()):
            name = packagedb.dpkg_list_package(posixpath.basename(path))
            if path.startswith(packagedb.DPKG + "/info/") and name in versions:
                _claim(
                    out,
                    packagedb.dpkg_list_paths(data),
                    packagedb.dpkg_package(name, versions[name]),
                    self.links,
                )
        for package, files in self.rpm:
            _claim(out, files, package, self.links)
        return out

    def _record_owners(self, out: _Owners, path: str, data: bytes) -> None:
        info = posixpath.dirname(path)
        label = _metadata(self.meta.get(info + "/METADATA"), info)
        if label is None:
            return
        base = posixpath.dirname(info)
        for line in data.decode("utf-8", "replace").splitlines():
            rel = line.rsplit(",", 2)[0].strip('"')
            if rel:
                out.setdefault(posixpath.normpath(posixpath.join(base, rel)), Package("python", *label))

    def _conda_owners(self, out: _Owners, path: str, data: bytes) -> None:
        from fatbin_inspect.containers.conda import meta_record

        try:
            doc = loads(data, path)
        except CorruptError as exc:
            self.notes.append(f"{exc.message}: its package's files unattributed")
            return
        record = meta_record(doc, path)  # the package with the CUDA it declares, as its .conda did
        self.notes += record.notes
        prefix = posixpath.dirname(posixpath.dirname(path))
        for f in record.files if record.package is not None else ():
            out.setdefault(posixpath.normpath(posixpath.join(prefix, f)), record.package)


def _claim(out: _Owners, paths: Iterable[str], package: Package, links: dict[str, str]) -> None:
    """The absolute paths a system package lists (``/usr/lib/x``), as image paths (through the
    image's merged-/usr ``links``: ``/lib/x`` is ``usr/lib/x`` where ``lib`` links there)."""
    for p in paths:
        out.setdefault(packagedb.in_root(p, links), package)


class _LayerWalk:
    """One layer's entries as ``ImageReader`` reads them (top layer first): what this layer adds
    to the paths upper layers hide is merged into the reader only at the layer's end."""

    def __init__(self, reader: ImageReader, name: str, window: Blob | None, counts: dict):
        self.reader, self.name, self.window, self.counts = reader, name, window, counts
        self.paths: set[str] = set()
        self.nondirs: set[str] = set()
        self.gone: set[str] = set()
        self.opaque: set[str] = set()
        # Where the bytes of this layer's regular files and hard links (visible or not) are, for
        # the hard links that name them (this layer's, and upper layers' waiting in reader._pending):
        self.held: dict[str, Member] = {}  # path -> a hidden file's member
        self.held_bytes = 0
        self.shown: dict[str, str] = {}  # path -> the name of the visible member it is
        self.sizes: dict[str, int] = {}  # path -> its size (also files with nothing to report)
        self.below: dict[str, str] = {}  # a hard link -> the path it names in the layers below
        self.pending: dict[str, list[str]] = {}  # path below -> names of links waiting for it

    def _member(self, tf: tarfile.TarFile, ti: tarfile.TarInfo, path: str) -> Member | None:
        return archives.tar_member(tf, ti, self.window, name=f"{self.reader.prefix}{self.name}!{path}")

    def entry(self, ti: tarfile.TarInfo, tf: tarfile.TarFile) -> Iterator[Member]:
        path = posixpath.normpath("/" + ti.name).lstrip("/")
        if ".." in ti.name.split("/"):
            self.counts["outside"] += 1
            return
        if not path:  # the root folder itself ("./")
            return
        if posixpath.basename(path).startswith(".wh."):
            self._whiteout(path)
            return
        if ti.isreg():
            self.reader.files += 1
            self.reader.bytes += ti.size
            self.sizes[path] = ti.size
        waiting = self.reader._pending.pop(path, ())  # upper layers' hard links naming this path
        if self.reader._hidden(path):
            if ti.islnk():
                self._link_source(ti, path)  # a later link of this layer may name it
            else:
                self._hold(tf, ti, path)
        else:
            self.paths.add(path)
            if not ti.isdir():
                self.nondirs.add(path)
            if ti.isreg():
                self._count(ti.size)
            if ti.islnk():
                yield from self._hardlink(ti, path)
            elif ti.issym():
                self._symlink(ti, path)
            elif ti.isreg():
                yield from self._regular(tf, ti, path)
        for name in waiting:
            yield from self._linked(name, path)

    def _count(self, size: int) -> None:
        """A visible regular file, or a hard link to one, in the contents."""
        self.reader.contents[0] += 1
        self.reader.contents[1] += size

    def hides(self, path: str) -> bool:
        """Whether this layer's whiteouts, opaque folders or non-folders hide ``path`` of the
        layers below it (a hard link of an upper layer to it finds nothing there)."""
        if path in self.gone:
            return True
        d = path
        while d:
            d = posixpath.dirname(d)
            if d in self.gone or d in self.opaque or d in self.nondirs:
                return True
        return False

    def _symlink(self, ti: tarfile.TarInfo, path: str) -> None:
        self.counts["links"] += 1  # never followed: the target is reported where it lives
        target = packagedb.top_link(path, ti.linkname)
        if target is not None:  # a merged-/usr link: system packages list files through it
            self.reader.links[path] = target

    def _whiteout(self, path: str) -> None:
        self.counts["whiteouts"] += 1
        parent, base = posixpath.split(path)
        if base == ".wh..wh..opq":
            self.opaque.add(parent)
        else:
            self.gone.add(posixpath.join(parent, base[4:]))

    def _hold(self, tf: tarfile.TarFile, ti: tarfile.TarInfo, path: str) -> None:
        """A file an upper layer replaced or deleted: kept (bounded) for a hard link naming it."""
        if not ti.isreg():
            return
        self.counts["hidden"] += 1
        if self.held_bytes + ti.size <= MAX_HELD_BYTES and not _META.search(path):
            m = self._member(tf, ti, path)
            if m is not None and m.blob is not None:
                self.held[path] = m
                self.held_bytes += ti.size if self.window is None else 0

    def _link_source(self, ti: tarfile.TarInfo, path: str) -> None:
        """Record where the bytes of the hard link ``path`` are: those of the entry it names if
        this layer had one before it (a file, or a link: chains), else those of the path in the
        layers below (``below``), as ``umoci unpack`` links to what the filesystem holds there."""
        target = _link_target(ti)
        if target in self.held:
            self.held[path] = self.held[target]
        elif target in self.shown:
            self.shown[path] = self.shown[target]
        elif target in self.below:
            self.below[path] = self.below[target]
        elif target not in self.sizes:
            self.below[path] = target
        if target in self.sizes:
            self.sizes[path] = self.sizes[target]

    def _hardlink(self, ti: tarfile.TarInfo, path: str) -> Iterator[Member]:
        self._link_source(ti, path)
        yield from self._linked(f"{self.reader.prefix}{self.name}!{path}", path)

    def _linked(self, name: str, path: str) -> Iterator[Member]:
        """The member ``name`` of a visible hard link to ``path`` of this layer: the bytes of a
        hidden file (also when an upper layer deleted its name), the records of a visible one, or
        nothing yet when ``path`` is itself a link to the layers below (it waits for them)."""
        if path in self.below:
            self.pending.setdefault(self.below[path], []).append(name)
            return
        if path not in self.sizes:  # a folder or a symbolic link: nothing to follow
            self.counts["links"] += 1
            return
        self.counts["hardlinks"] += 1
        self._count(self.sizes[path])
        if path in self.held:
            yield Member(name, self.held[path].blob)
        elif path in self.shown:
            yield Member(name, alias=self.shown[path])

    def _regular(self, tf: tarfile.TarFile, ti: tarfile.TarInfo, path: str) -> Iterator[Member]:
        if _META.search(path):
            self.reader._keep_meta(tf, ti, path)
        elif _RPMDB.match(path):
            self.reader._keep_rpmdb(tf, ti, path)
        elif (db := packagedb.not_read_db(path)) is not None:
            self.reader._unread_db(db)
        else:
            m = self._member(tf, ti, path)
            if m is not None:
                self.shown[path] = m.name
                yield m


def _link_target(ti: tarfile.TarInfo) -> str:
    """The path a hard link member names, as the layer's paths are kept."""
    return posixpath.normpath("/" + ti.linkname).lstrip("/")


class _Owners(dict):
    """Path -> package, at most ``MAX_OWNED`` paths (then one note, and no more are kept)."""

    def __init__(self, notes: list[str]):
        super().__init__()
        self.notes: list[str] | None = notes

    def setdefault(self, key: str, default: Package | None = None) -> Package | None:
        if len(self) >= MAX_OWNED and key not in self:
            if self.notes is not None:
                self.notes.append(f"the image's metadata lists over {MAX_OWNED} files: the rest unattributed")
                self.notes = None
            return default
        return super().setdefault(key, default)


def _metadata(data: bytes | None, info: str) -> tuple[str, str] | None:
    name = version = None
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        if not line.strip():
            break
        if line.startswith("Name:"):
            name = line[5:].strip()
        elif line.startswith("Version:"):
            version = line[8:].strip()
    if name and version:
        return name, version
    m = re.match(r"^(.+?)-([^-]+)\.dist-info$", posixpath.basename(info))
    return (m.group(1).replace("_", "-"), m.group(2)) if m else None
