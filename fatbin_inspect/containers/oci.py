"""Container images: OCI image layouts, OCI archives and ``docker save`` tarballs, read in place.

* An OCI image layout (as ``skopeo copy ... oci:DIR`` writes it) is a folder holding
  ``oci-layout`` (``{"imageLayoutVersion": "1.0.0"}``), ``index.json`` (an image index:
  ``{"schemaVersion": 2, "manifests": [{"mediaType", "digest": "sha256:<hex>", "size",
  "platform": {"os", "architecture", "variant"}}]}``) and ``blobs/sha256/<hex>``. A manifest
  (``application/vnd.oci.image.manifest.v1+json``) lists ``layers`` bottom first; an entry of an
  index may itself be an index (``application/vnd.oci.image.index.v1+json``, multi-platform).
* An OCI archive is that layout in a tar; ``docker save`` of Docker 25+ writes it too, beside a
  ``manifest.json``. The legacy ``docker save`` tar has only ``manifest.json``
  (``[{"Config", "RepoTags", "Layers": ["<id>/layer.tar", ...]}]``, bottom first).
* Layers are tars, gzip'd, zstd'd or plain. Applied in order they give the image's filesystem:
  a later layer's file replaces an earlier one at the same path, ``.wh.NAME`` deletes ``NAME``
  from the layers below, and ``.wh..wh..opq`` in a folder hides everything the layers below put
  there (OCI image spec, "Whiteouts").

The layers are walked top (last) first, each read once, streaming: a file is reported when no
upper layer replaced or deleted it, so the scan sees exactly the final filesystem. Members are
named ``LAYER!PATH`` (``blobs/sha256/<hex>!usr/lib/libx.so``): each record says which layer its
file came from. Symlinks and hard links are never followed (a link out of the image reads
nothing); paths with ``..`` are skipped. Python (``*.dist-info/RECORD``) and conda
(``conda-meta/*.json``) metadata of the final filesystem attribute the files to distributions.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from fatbin_inspect.containers import archives
from fatbin_inspect.containers.archives import Member
from fatbin_inspect.errors import CorruptError, LimitExceeded, UnreadableError
from fatbin_inspect.formats.binio import Blob, open_blob
from fatbin_inspect.formats.model import Package

MAX_LAYERS = 500  # Docker refuses more than 127; a registry image past this is hostile
MAX_JSON_BYTES = 8 << 20
MAX_INDEX_DEPTH = 4  # index -> index -> manifest is the deepest real layout
MAX_PATHS = 4_000_000  # paths remembered from upper layers, all layers together
DEFAULT_PLATFORM = "linux/amd64"
_DIGEST = re.compile(r"^sha256:([0-9a-f]{64})$")
_INDEX_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
_META = re.compile(r"(?:^|/)(?:[^/]+\.dist-info/(?:RECORD|METADATA)|conda-meta/[^/]+\.json)$")


def is_layout_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "oci-layout")) and os.path.isfile(
        os.path.join(path, "index.json")
    )


def is_image_names(names) -> bool:
    """A tar holding an OCI layout or a ``docker save`` manifest."""
    return "manifest.json" in names or ("oci-layout" in names and "index.json" in names)


class DirStore:
    """Blobs of a layout folder; names are checked and never resolved outside the folder."""

    def __init__(self, root: str):
        self.root = os.path.realpath(root)

    def get(self, name: str) -> Blob | None:
        path = os.path.realpath(os.path.join(self.root, name))
        if not path.startswith(self.root + os.sep):
            raise CorruptError(f"{name}: outside the image layout")
        if not os.path.isfile(path):
            return None
        return open_blob(path)


class TarStore:
    """Members of an uncompressed image tar, as windows into it (the headers are read once)."""

    def __init__(self, blob: Blob, entries: dict[str, tuple[int, int]]):
        self.blob, self.entries = blob, entries

    @classmethod
    def index(cls, blob: Blob) -> TarStore:
        """Read the headers only, seeking over the data (a plain tar that is no image costs one
        512-byte read per member before it is walked as a tar)."""
        import tarfile

        entries = {}
        try:
            with tarfile.open(fileobj=blob.stream(), mode="r:") as tf:
                for count, ti in enumerate(tf, 1):
                    if count > archives.MAX_MEMBERS:
                        raise LimitExceeded(f"more than {archives.MAX_MEMBERS} members")
                    if ti.isreg():
                        entries[posixpath.normpath(ti.name.lstrip("/"))] = (ti.offset_data, ti.size)
        except (LimitExceeded, CorruptError):
            raise
        except Exception as exc:  # tarfile.ReadError and friends on hostile bytes
            raise CorruptError(f"not a readable tar archive: {exc}") from None
        return cls(blob, entries)

    def get(self, name: str) -> Blob | None:
        hit = self.entries.get(posixpath.normpath(name))
        return None if hit is None else self.blob.view(hit[0], hit[1], name)


@dataclass(frozen=True)
class Image:
    label: str  # "linux/amd64 sha256:1a2b3c4d5e6f" or the docker RepoTags
    layers: tuple[str, ...]  # store names of the layer blobs, bottom first


def _json(store, name: str):
    blob = store.get(name)
    if blob is None:
        return None
    if blob.size > MAX_JSON_BYTES:
        raise LimitExceeded(f"{name} of {blob.size} bytes, over the {MAX_JSON_BYTES}-byte limit")
    try:
        return json.loads(blob.read(0, blob.size, name))
    except ValueError as exc:
        raise CorruptError(f"{name} is not JSON: {exc}") from None


def _blob_name(digest) -> str:
    m = _DIGEST.match(digest) if isinstance(digest, str) else None
    if not m:
        raise CorruptError(f"digest {str(digest)[:80]!r} is not sha256:<64 hex digits>")
    return f"blobs/sha256/{m.group(1)}"


def images(store, platform: str = DEFAULT_PLATFORM) -> tuple[list[Image], list[str]]:
    """The images of a store, each with its layers: the OCI index's manifest for ``platform``,
    else the ``docker save`` manifest's images. Notes say what was chosen."""
    notes: list[str] = []
    index = _json(store, "index.json") if store.get("oci-layout") is not None else None
    if index is not None:
        manifest, label = _pick(store, index, platform, notes, 0)
        if manifest is None:
            return [], notes
        layers = manifest.get("layers") if isinstance(manifest, dict) else None
        if not isinstance(layers, list):
            raise CorruptError(f"image manifest {label} lists no layers")
        return [
            Image(
                label,
                _layer_names(store, [lay.get("digest") if isinstance(lay, dict) else None for lay in layers]),
            )
        ], notes
    docker = _json(store, "manifest.json")
    if not isinstance(docker, list):
        raise CorruptError("manifest.json is not a list of images")
    out = []
    for i, img in enumerate(docker):
        if not isinstance(img, dict) or not isinstance(img.get("Layers"), list):
            raise CorruptError(f"manifest.json image {i} lists no Layers")
        tags = img.get("RepoTags") or [f"image {i}"]
        names = []
        for lay in img["Layers"]:
            if not isinstance(lay, str) or lay.startswith("/") or ".." in lay.split("/"):
                raise CorruptError(f"manifest.json layer {str(lay)[:80]!r} is no path inside the archive")
            names.append(posixpath.normpath(lay))
        out.append(Image(", ".join(map(str, tags)), _check_count(names)))
    return out, notes


def _layer_names(store, digests) -> tuple[str, ...]:
    return _check_count([_blob_name(d) for d in digests])


def _check_count(names) -> tuple[str, ...]:
    if len(names) > MAX_LAYERS:
        raise LimitExceeded(f"image of {len(names)} layers, over the {MAX_LAYERS}-layer limit")
    return tuple(names)


def _pick(store, index, platform: str, notes: list[str], depth: int):
    if depth > MAX_INDEX_DEPTH:
        raise LimitExceeded(f"image indexes nested deeper than {MAX_INDEX_DEPTH}")
    manifests = index.get("manifests") if isinstance(index, dict) else None
    if not isinstance(manifests, list) or not manifests:
        raise CorruptError("image index lists no manifests")
    want = platform.split("/")
    chosen, seen = None, []
    for m in manifests:
        if not isinstance(m, dict):
            continue
        p = m.get("platform") if isinstance(m.get("platform"), dict) else {}
        name = "/".join(str(x) for x in (p.get("os"), p.get("architecture"), p.get("variant")) if x)
        if name:
            seen.append(name)
        if m.get("mediaType") in _INDEX_TYPES:
            sub = _json(store, _blob_name(m.get("digest")))
            if sub is None:
                raise CorruptError(f"{m.get('digest')}: index blob missing")
            found, label = _pick(store, sub, platform, notes, depth + 1)
            if found is not None:
                return found, label
            continue
        if (p.get("os"), p.get("architecture")) == (want[0], want[1] if len(want) > 1 else None) and (
            len(want) < 3 or p.get("variant") == want[2]
        ):
            chosen = m
            break
        if not p and chosen is None:
            chosen = m  # a single-platform layout often states no platform
    if chosen is None:
        if depth == 0:
            raise CorruptError(f"no {platform} image in the index (it has {', '.join(seen) or 'none'})")
        return None, None
    label = f"{platform} {chosen.get('digest', '?')[:19]}"
    manifest = _json(store, _blob_name(chosen.get("digest")))
    if manifest is None:
        raise CorruptError(f"{chosen.get('digest')}: manifest blob missing")
    if len(seen) > 1:
        notes.append(f"index of {len(seen)} platforms ({', '.join(seen)}): {platform} scanned")
    return manifest, label


class ImageReader:
    """The visible regular files of an image's layers, top layer first, each layer read once;
    ``meta`` collects the Python and conda metadata files of the final filesystem."""

    def __init__(self, store, image: Image):
        self.store, self.image = store, image
        self.meta: dict[str, bytes] = {}
        self.notes: list[str] = []
        self._paths: set[str] = set()  # every path an upper layer has (files, folders, links)
        self._nondirs: set[str] = set()  # upper files and links: nothing below them shows
        self._gone: set[str] = set()  # deleted by an upper whiteout
        self._opaque: set[str] = set()  # folders an upper layer made opaque

    def _hidden(self, path: str) -> bool:
        if path in self._paths or path in self._gone:
            return True
        d = posixpath.dirname(path)
        while d:
            if d in self._nondirs or d in self._gone or d in self._opaque:
                return True
            d = posixpath.dirname(d)
        return False

    def members(self) -> Iterator[Member]:
        hidden = whiteouts = links = outside = 0
        layers = self.image.layers
        for pos in range(len(layers) - 1, -1, -1):
            name = layers[pos]
            blob = self.store.get(name)
            if blob is None:
                raise CorruptError(f"layer {name} is missing from the image")
            stream = archives.decompressed(blob, f"layer {name}")
            plain = not isinstance(stream, io.BufferedReader)  # a plain tar: members are windows
            paths, nondirs, gone, opaque = set(), set(), set(), set()
            for ti, tf in archives.tar_entries(stream):
                path = posixpath.normpath("/" + ti.name).lstrip("/")
                if not path or path == "." or ".." in ti.name.split("/"):
                    outside += 1
                    continue
                base = posixpath.basename(path)
                parent = posixpath.dirname(path)
                if base.startswith(".wh."):
                    whiteouts += 1
                    if base == ".wh..wh..opq":
                        opaque.add(parent)
                    else:
                        gone.add(posixpath.join(parent, base[4:]))
                    continue
                if self._hidden(path):
                    if ti.isreg():
                        hidden += 1
                    continue
                paths.add(path)
                if not ti.isdir():
                    nondirs.add(path)
                if ti.issym() or ti.islnk():
                    links += 1  # never followed: the target is reported where it lives
                    continue
                if not ti.isreg():
                    continue
                if _META.search(path) and ti.size <= MAX_JSON_BYTES:
                    self.meta[path] = tf.extractfile(ti).read(ti.size)
                    continue
                m = archives.tar_member(tf, ti, blob if plain else None, name=f"{name}!{path}")
                if m is not None:
                    yield m
            self._paths |= paths
            self._nondirs |= nondirs
            self._gone |= gone
            self._opaque |= opaque
            if len(self._paths) > MAX_PATHS:
                raise LimitExceeded(f"more than {MAX_PATHS} paths in the image's layers")
        self.notes.append(
            f"image {self.image.label}: {len(layers)} layers, {whiteouts} whiteouts, "
            f"{hidden} files replaced or deleted by upper layers, {links} links not followed"
            + (f", {outside} entries outside the image skipped" if outside else "")
        )

    def owners(self) -> dict[str, Package]:
        """Image path -> the distribution or conda package that lists it (final filesystem)."""
        out: dict[str, Package] = {}
        for path, data in sorted(self.meta.items()):
            text = data.decode("utf-8", "replace")
            if path.endswith("/RECORD"):
                info = posixpath.dirname(path)
                label = _metadata(self.meta.get(info + "/METADATA"), info)
                if label is None:
                    continue
                base = posixpath.dirname(info)
                for line in text.splitlines():
                    rel = line.rsplit(",", 2)[0].strip('"')
                    if rel:
                        out.setdefault(
                            posixpath.normpath(posixpath.join(base, rel)), Package("python", *label)
                        )
            elif "/conda-meta/" in "/" + path and path.endswith(".json"):
                try:
                    doc = json.loads(text)
                except ValueError:
                    continue
                if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
                    continue
                prefix = posixpath.dirname(posixpath.dirname(path))
                pkg = Package("conda", doc["name"], str(doc.get("version", "?")), str(doc.get("build", "")))
                for f in doc.get("files", ()):
                    if isinstance(f, str):
                        out.setdefault(posixpath.normpath(posixpath.join(prefix, f)), pkg)
        return out


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


def open_store(path: str) -> DirStore:
    if not is_layout_dir(path):
        raise UnreadableError("not an OCI image layout (no oci-layout and index.json)")
    return DirStore(path)
