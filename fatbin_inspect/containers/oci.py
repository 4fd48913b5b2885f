"""Container images: OCI image layouts, OCI archives, ``docker save`` tarballs and registries.

* An OCI image layout (as ``skopeo copy ... oci:DIR:TAG`` or ``umoci`` writes it) is a folder
  holding ``oci-layout`` (``{"imageLayoutVersion": "1.0.0"}``), ``index.json`` (an image index:
  ``{"schemaVersion": 2, "manifests": [{"mediaType", "digest": "sha256:<hex>", "size",
  "platform": {...}, "annotations": {"org.opencontainers.image.ref.name": TAG}}]}``) and
  ``blobs/sha256/<hex>``. Each entry of ``index.json`` is one image (umoci's layouts start with
  an empty ``base`` tag beside the real ones); an entry may itself be an index
  (multi-platform), whose entries are the platforms of that image. A manifest lists its
  ``config`` (``{"os", "architecture", "variant", "rootfs": {"diff_ids"}}``) and ``layers``,
  bottom first.
* An OCI archive is that layout in a tar; ``docker save`` of Docker 25+ writes it too, beside a
  ``manifest.json``. The legacy ``docker save`` tar (and skopeo's ``docker-archive:``) has only
  ``manifest.json`` (``[{"Config": "<hex>.json", "RepoTags", "Layers": [...]}]``, bottom first):
  its layers are named by no digest, the config's ``rootfs.diff_ids`` (sha256 of each layer's
  uncompressed tar) are what they are checked against.
* Layers are tars, gzip'd, zstd'd or plain. Applied in order they give the image's filesystem:
  a later layer's file replaces an earlier one at the same path, ``.wh.NAME`` deletes ``NAME``
  from the layers below, and ``.wh..wh..opq`` in a folder hides everything the layers below put
  there (OCI image spec, "Whiteouts").

Every blob is checked against its digest before its content is trusted: metadata (manifests,
indexes, configs) is hashed once read (it is small and read whole), a layer is hashed as it
streams, and its files are reported only when its last byte matched (a mismatch is an error
naming the blob). All the metadata of one image (its manifests, indexes and config, and the
``*.dist-info`` and ``conda-meta`` files of its layers) is held to ``MAX_META_BYTES`` together,
not only file by file.

The layers are walked top (last) first, each read once, streaming: a file is reported when no
upper layer replaced or deleted it, so the scan sees exactly the final filesystem. Members are
named ``LAYER!PATH`` (``blobs/sha256/<hex>!usr/lib/libx.so``), and ``IMAGE!LAYER!PATH`` where a
layout or archive holds several images: each record says which image and layer its file came
from. Symlinks are never followed (a link out of the image reads nothing). A hard link is what
``umoci unpack`` makes of it: the file its target path holds when the link is made, that is the
entry of its own layer before it (a file, or a link: chains and fan-outs), else that path in the
layers below (a link waits in ``ImageReader._pending`` until the walk reaches the layer that has
it; a whiteout, an opaque folder or a non-folder in between leaves it naming nothing). When an
upper layer deleted or replaced the target's path, the link still shows the target's bytes, as
the final filesystem does; a link to itself, to another link naming it, or to nothing is never
followed. Whiteouts and opaque whiteouts hide what the layers below hold at every level, the
root's ``.wh..wh..opq`` included (``tests/containers/test_layers_umoci.py`` holds the walk to ``umoci unpack``).
Paths with ``..`` are skipped. Python (``*.dist-info/RECORD``) and conda
(``conda-meta/*.json``) metadata of the final filesystem attribute the files to distributions,
then its dpkg and rpm databases (``containers.packagedb``; an ``rpmdb.sqlite`` is spooled to a
private temporary file, at most ``packagedb.RPMDB_MAX`` bytes, to be opened).
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from fatbin_inspect.containers import archives, packagedb
from fatbin_inspect.containers.archives import Member
from fatbin_inspect.errors import CorruptError, InputError, LimitExceeded, UnreadableError
from fatbin_inspect.formats.binio import Blob, open_blob
from fatbin_inspect.formats.model import Package

if TYPE_CHECKING:
    import tarfile
    from collections.abc import Callable, Collection, Iterable
    from typing import BinaryIO


class Store(Protocol):
    """Where an image's blobs are (``DirStore``, ``TarStore``, ``registry.RegistryStore``): the
    blob ``name`` (a ``Blob``, or a registry's stream of a layer), None when it has none."""

    def get(self, name: str, kind: str = "layer") -> Any: ...


MAX_LAYERS = 500  # Docker refuses more than 127; a registry image past this is hostile
MAX_JSON_BYTES = 8 << 20
MAX_META_BYTES = 64 << 20  # all metadata of one image together (real images: well under 1 MB)
MAX_OWNED = 1_000_000  # paths the metadata of one image attributes (a large conda env: 200,000)
MAX_HELD_BYTES = 2 << 30  # hidden files kept in one layer for the hard links that name them
MAX_INDEX_DEPTH = 4  # index -> index -> manifest is the deepest real layout
MAX_PATHS = 4_000_000  # paths remembered from upper layers, all layers together
DEFAULT_PLATFORM = "linux/amd64"  # picked from a multi-platform index when none is asked for
REF_NAME = "org.opencontainers.image.ref.name"
_CONTAINERD_NAME = "io.containerd.image.name"  # Docker 25+ docker save's full name
_DIGEST = re.compile(r"^sha256:([0-9a-f]{64})$")
_HEX_JSON = re.compile(r"^(?:blobs/sha256/)?([0-9a-f]{64})(?:\.json)?$")
_INDEX_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
_META = re.compile(
    r"(?:^|/)(?:[^/]+\.dist-info/(?:RECORD|METADATA)|conda-meta/[^/]+\.json)$"
    r"|^var/lib/dpkg/(?:status|info/[^/]+\.list)$"
)
_RPMDB = re.compile(
    r"^(?:var/lib/rpm|usr/lib/sysimage/rpm)/(?:rpmdb\.sqlite(?:-wal)?|Packages|Packages\.db)$"
)


def is_layout_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "oci-layout")) and os.path.isfile(
        os.path.join(path, "index.json")
    )


def is_image_names(names: Collection[str]) -> bool:
    """A tar holding an OCI layout or a ``docker save`` manifest."""
    return "manifest.json" in names or ("oci-layout" in names and "index.json" in names)


class DirStore:
    """Blobs of a layout folder; names are checked and never resolved outside the folder."""

    def __init__(self, root: str):
        self.root = os.path.realpath(root)

    def get(self, name: str, kind: str = "layer") -> Blob | None:
        """The blob ``name``; ``kind`` (layer, manifest, index, config) matters to registries only."""
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
        512-byte read per member before it is walked as a tar). A symlink member (skopeo's
        ``docker-archive`` links ``<id>/layer.tar`` to ``<hex>.tar``) names its target's bytes."""
        import tarfile

        entries: dict[str, tuple[int, int]] = {}
        links: dict[str, str] = {}
        try:
            with tarfile.open(fileobj=blob.stream(), mode="r:") as tf:
                for count, ti in enumerate(tf, 1):
                    if count > archives.MAX_MEMBERS:
                        raise LimitExceeded(f"more than {archives.MAX_MEMBERS} members")
                    _index_member(ti, entries, links)
        except (LimitExceeded, CorruptError):
            raise
        except Exception as exc:  # tarfile.ReadError and friends on hostile bytes
            raise CorruptError(f"not a readable tar archive: {exc}") from None
        for name, target in links.items():  # one level: a link to a regular member of the tar
            if target in entries and name not in entries:
                entries[name] = entries[target]
        return cls(blob, entries)

    def get(self, name: str, kind: str = "layer") -> Blob | None:
        hit = self.entries.get(posixpath.normpath(name))
        return None if hit is None else self.blob.view(hit[0], hit[1], name)


def _index_member(ti: tarfile.TarInfo, entries: dict[str, tuple[int, int]], links: dict[str, str]) -> None:
    """A tar member into ``entries`` (a regular file: its data's offset and size) or ``links``
    (a symbolic or hard link: the member it names)."""
    name = posixpath.normpath(ti.name.lstrip("/"))
    if ti.isreg():
        entries[name] = (ti.offset_data, ti.size)
    elif ti.issym() or ti.islnk():
        base = posixpath.dirname(name) if ti.issym() else ""
        links[name] = posixpath.normpath(posixpath.join(base, ti.linkname))


# ----------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Layer:
    name: str  # its name in the store: blobs/sha256/<hex>, or <id>/layer.tar in a docker save
    digest: str | None  # what its stored bytes hash to (OCI); None: a docker save layer
    size: int | None  # the size its descriptor declares
    diff_id: str | None = None  # sha256 of its uncompressed tar (the config's rootfs.diff_ids)
    media_type: str = ""


@dataclass(frozen=True)
class Image:
    """One image of a layout, archive or registry, as its metadata (checked) describes it."""

    name: str | None  # its tag (OCI ref.name), docker RepoTags, registry reference; None: untagged
    digest: str | None  # the manifest's digest (a docker save manifest has none)
    platform: str  # os/architecture[/variant] from its config ("?" when it states none)
    layers: tuple[Layer, ...] = ()
    config: str | None = None  # the config's digest
    error: str | None = None  # why it cannot be read (a platform other than asked, a bad blob...)
    size: int = 0  # bytes of its blobs: manifest, config and layers

    @property
    def label(self) -> str:
        digest = f" {self.digest[:19]}" if self.digest else ""
        platform = f" {self.platform}" if self.platform != "?" else ""
        return f"{self.name or '(untagged)'}{digest}{platform}"

    def facts(self) -> dict[str, Any]:
        """The image as plain data (scan output)."""
        return {
            "name": self.name,
            "digest": self.digest,
            "platform": self.platform,
            "config": self.config,
            "size": self.size,
            "error": self.error,
            "layers": [
                {"digest": lay.digest, "diff_id": lay.diff_id, "size": lay.size, "media_type": lay.media_type}
                for lay in self.layers
            ],
        }


class _MetaBudget:
    """Bytes of metadata one image may hold, every kind together (``MAX_META_BYTES``)."""

    def __init__(self, limit: int = MAX_META_BYTES):
        self.left = limit

    def take(self, n: int, what: str) -> None:
        if n > self.left:
            raise LimitExceeded(f"{what}: the image's metadata is over {MAX_META_BYTES} bytes in all")
        self.left -= n


def loads(data: bytes, what: str) -> Any:
    """JSON from bytes, any failure (bad UTF-8, deep nesting, bad syntax) a ``CorruptError``."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise CorruptError(f"{what} is not JSON: {str(exc)[:120]}") from None


def check_digest(data: bytes, digest: str | None, what: str) -> None:
    if digest is None:
        return
    import hashlib  # here, not at the top: OpenSSL's start-up is paid only where images are read

    got = "sha256:" + hashlib.sha256(data).hexdigest()
    if got != digest:
        raise CorruptError(f"{what} {digest}: its bytes hash to {got}, not to its digest")


def _json(
    store: Store,
    name: str,
    digest: str | None = None,
    meta: _MetaBudget | None = None,
    what: str = "",
    kind: str = "config",
) -> Any:
    """A JSON blob, checked against ``digest`` before it is parsed; None when it is missing."""
    blob = store.get(name, kind)
    if blob is None:
        return None
    what = what or name
    if blob.size > MAX_JSON_BYTES:
        raise LimitExceeded(f"{what} of {blob.size} bytes, over the {MAX_JSON_BYTES}-byte limit")
    if meta is not None:
        meta.take(blob.size, what)
    data = blob.read(0, blob.size, name)
    check_digest(data, digest, what)
    return loads(data, what)


def _blob_name(digest: object) -> str:
    m = _DIGEST.match(digest) if isinstance(digest, str) else None
    if not m:
        raise CorruptError(f"digest {str(digest)[:80]!r} is not sha256:<64 hex digits>")
    return f"blobs/sha256/{m.group(1)}"


def _platform_of(p: object) -> str:
    if not isinstance(p, dict):
        return ""
    return "/".join(
        str(p[k]) for k in ("os", "architecture", "variant") if isinstance(p.get(k), str) and p[k]
    )


def _matches(have: str, want: str) -> bool:
    h, w = have.split("/"), want.split("/")
    return h[:2] == w[:2] and (len(w) < 3 or h[2:3] == w[2:3])


def short_name(name: str) -> str:
    """A docker reference without the default registry (``docker.io/library/x:t`` -> ``x:t``)."""
    for prefix in ("docker.io/library/", "docker.io/", "index.docker.io/library/"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def images(store: Store, platform: str = "", select: str | None = None) -> tuple[list[Image], list[str]]:
    """The images of a store: every entry of an OCI index (or the one named ``select``: a tag,
    ``@DIGEST`` or ``@N``, the N-th), else every image of a ``docker save`` manifest (or the one
    whose RepoTags hold ``select``). ``platform``: what a multi-platform index gives (default
    ``DEFAULT_PLATFORM``) and what each image's config must say when given. An image that cannot
    be read carries its ``error``; notes say what was chosen."""
    notes: list[str] = []
    index = _json(store, "index.json") if store.get("oci-layout") is not None else None
    if index is not None:
        out = _oci_images(store, index, platform, select, notes)
    else:
        docker = _json(store, "manifest.json")
        if not isinstance(docker, list):
            raise CorruptError("manifest.json is not a list of images")
        out = [_docker_image(store, img, platform) for img in _select(docker, select, _docker_names)]
    if len(out) > 1:
        notes.append(f"{len(out)} images: " + ", ".join(i.name or "(untagged)" for i in out))
    return out, notes


def _oci_images(store: Store, index: Any, platform: str, select: str | None, notes: list[str]) -> list[Image]:
    """The images of an OCI index: entries of one name (or none) are the platforms of one image."""
    groups: dict = {}
    for m in _select(_index_entries(index, "index.json"), select, _oci_names):
        groups.setdefault(_oci_name(m), []).append(m)
    return [_oci_image(store, ms, platform, notes) for ms in groups.values()]


def _index_entries(index: Any, what: str) -> list[Any]:
    manifests = index.get("manifests") if isinstance(index, dict) else None
    if not isinstance(manifests, list) or not manifests:
        raise CorruptError(f"{what}: the image index lists no manifests")
    if len(manifests) > MAX_LAYERS:
        raise LimitExceeded(f"{what}: {len(manifests)} manifests, over the {MAX_LAYERS} limit")
    return manifests


def _oci_names(m: Any) -> list[str]:
    ann = m.get("annotations") if isinstance(m, dict) else None
    ann = ann if isinstance(ann, dict) else {}
    names = [v for k in (REF_NAME, _CONTAINERD_NAME) if isinstance(v := ann.get(k), str)]
    return names + [short_name(n) for n in names if short_name(n) != n]


def _oci_name(m: Any) -> str | None:
    """An index entry's first name (its tag), None for an untagged one."""
    names = _oci_names(m)
    return names[0] if names else None


def _docker_names(img: Any) -> list[str]:
    tags = img.get("RepoTags") if isinstance(img, dict) else None
    tags = [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []
    return tags + [short_name(t) for t in tags if short_name(t) != t]


def _named(entry: Any, select: str, names: Callable[[Any], list[str]]) -> bool:
    """``entry`` is named ``select``: one of its names, or ``@`` and a prefix of its digest."""
    if select in names(entry):
        return True
    return (
        isinstance(entry, dict)
        and select.startswith("@")
        and str(entry.get("digest", "")).startswith(select[1:])
    )


def _nth(entries: list[Any], select: str) -> Any:
    i = int(select[1:])
    if i >= len(entries):
        raise CorruptError(f"no image {select}: it holds {len(entries)}")
    return entries[i]


def _select(entries: list[Any], select: str | None, names: Callable[[Any], list[str]]) -> list[Any]:
    if select is None:
        return entries
    if select.startswith("@") and select[1:].isdigit():
        return [_nth(entries, select)]
    hits = [e for e in entries if _named(e, select, names)]
    if not hits:
        have = ", ".join(n for e in entries for n in names(e)[:1]) or "none"
        raise CorruptError(f"no image named {select!r} (it holds: {have})")
    return hits[:1]


def _oci_image(store: Store, entries: list[Any], platform: str, notes: list[str]) -> Image:
    entry = entries[0]
    name = _oci_name(entry)
    meta = _MetaBudget()
    try:
        if not all(isinstance(e, dict) for e in entries):
            raise CorruptError("index.json: an entry is not an object")
        desc = _platform_entry(store, entries, name, platform or DEFAULT_PLATFORM, meta, notes)
        digest = desc.get("digest")
        manifest = _json(store, _blob_name(digest), digest, meta, "image manifest", "manifest")
        if manifest is None:
            raise CorruptError(f"image manifest {digest}: blob missing")
        return _from_manifest(
            store, manifest, name, digest, platform, meta, _platform_of(desc.get("platform"))
        )
    except InputError as exc:
        return Image(name, entry.get("digest") if isinstance(entry, dict) else None, "?", error=str(exc))


def _platform_entry(
    store: Store, entries: list[Any], name: str | None, want: str, meta: _MetaBudget, notes: list[str]
) -> dict[str, Any]:
    """The manifest descriptor for platform ``want`` among the entries of one image (a note
    names the platforms when there are several); CorruptError naming them when none is ``want``."""
    if len(entries) > 1:
        desc, listed = _among(store, entries, want, meta, 0)
    else:
        desc, listed = _pick(store, entries[0], want, meta, 0)
    if desc is None:
        raise CorruptError(f"no {want} image in the index (it has {', '.join(listed) or 'none'})")
    if len(listed) > 1:
        notes.append(
            f"{name or 'image'}: index of {len(listed)} platforms ({', '.join(listed)}): "
            f"{_platform_of(desc.get('platform')) or want} scanned"
        )
    return desc


def _pick(
    store: Store, desc: dict[str, Any], platform: str, meta: _MetaBudget, depth: int
) -> tuple[dict[str, Any] | None, list[str]]:
    """The manifest descriptor for ``platform`` under ``desc`` (itself when it is a manifest), and
    every platform the indexes on the way list (a nested index's too)."""
    if desc.get("mediaType") not in _INDEX_TYPES:
        return desc, []
    if depth >= MAX_INDEX_DEPTH:
        raise LimitExceeded(f"image indexes nested deeper than {MAX_INDEX_DEPTH}")
    digest = desc.get("digest")
    sub = _json(store, _blob_name(digest), digest, meta, "image index", "index")
    if sub is None:
        raise CorruptError(f"image index {digest}: blob missing")
    return _among(store, _index_entries(sub, f"image index {digest}"), platform, meta, depth)


def _among(
    store: Store, entries: list[Any], platform: str, meta: _MetaBudget, depth: int
) -> tuple[dict[str, Any] | None, list[str]]:
    listed: list[str] = []
    fallback = None
    for m in entries:
        if not isinstance(m, dict):
            continue
        name = _platform_of(m.get("platform"))
        if m.get("mediaType") in _INDEX_TYPES:
            found, more = _pick(store, m, platform, meta, depth + 1)
            listed += more
            if found is not None:
                return found, listed
            continue
        if name:
            listed.append(name)
            if _matches(name, platform):
                return m, listed
        elif fallback is None:
            fallback = m  # an entry without a platform: taken when none matches
    return fallback, listed


def _from_manifest(
    store: Store,
    manifest: Any,
    name: str | None,
    digest: str | None,
    platform: str,
    meta: _MetaBudget,
    declared: str = "",
) -> Image:
    what = f"image manifest {digest}"
    if not isinstance(manifest, dict) or not isinstance(manifest.get("layers"), list):
        raise CorruptError(f"{what} lists no layers")
    cfg_desc: dict[str, Any] = manifest["config"] if isinstance(manifest.get("config"), dict) else {}
    cfg_digest = cfg_desc.get("digest")
    config = None
    if cfg_digest is not None:
        config = _json(store, _blob_name(cfg_digest), cfg_digest, meta, "image config")
    layers = _manifest_layers(manifest["layers"], _diff_ids(config), what)
    size = _size(cfg_desc) + len(json.dumps(manifest)) + sum(lay.size or 0 for lay in layers)
    _check_count(layers)
    actual = _platform_of(config) or declared or "?"
    image = Image(name, digest, actual, tuple(layers), cfg_digest, None, size)
    return _check_platform(image, platform, declared)


def _manifest_layers(descs: list, diff_ids: list | None, what: str) -> list[Layer]:
    """The layers a manifest lists, bottom first, each with its ``diff_id`` when the config has it."""
    layers = []
    for i, lay in enumerate(descs):
        if not isinstance(lay, dict):
            raise CorruptError(f"{what}: layer {i} is not an object")
        d = lay.get("digest")
        diff_id = diff_ids[i] if diff_ids and i < len(diff_ids) else None
        layers.append(Layer(_blob_name(d), d, _size(lay), diff_id, str(lay.get("mediaType", ""))))
    return layers


def _size(desc: object) -> int:
    v = desc.get("size") if isinstance(desc, dict) else None
    return v if type(v) is int and v >= 0 else 0


def _diff_ids(config: Any) -> list | None:
    rootfs = config.get("rootfs") if isinstance(config, dict) else None
    ids = rootfs.get("diff_ids") if isinstance(rootfs, dict) else None
    if not isinstance(ids, list) or not all(isinstance(d, str) and _DIGEST.match(d) for d in ids):
        return None
    return ids


def _check_platform(image: Image, platform: str, declared: str = "") -> Image:
    """An image whose config says another platform than asked (or than its index entry
    declares) is not scanned as the one asked: its error names both."""
    import dataclasses

    if declared and image.platform != "?" and not _matches(image.platform, declared):
        why = f"its config says {image.platform}, its index entry {declared}"
        return dataclasses.replace(image, error=f"image {image.name or image.digest}: {why}")
    if platform and image.platform != "?" and not _matches(image.platform, platform):
        why = f"is {image.platform} (its config), not {platform} (--platform)"
        return dataclasses.replace(image, error=f"image {image.name or image.digest} {why}")
    return image


def _docker_image(store: Store, img: Any, platform: str) -> Image:
    tags = _docker_names(img)
    name = ", ".join(dict.fromkeys(short_name(t) for t in tags)) or None
    try:
        if not isinstance(img, dict) or not isinstance(img.get("Layers"), list):
            raise CorruptError("manifest.json: an image lists no Layers")
        cfg_name = img.get("Config")
        config, cfg_digest = _docker_config(store, cfg_name, _MetaBudget())
        layers = _docker_layers(store, _docker_layer_names(img["Layers"]), _diff_ids(config), cfg_name)
        size = sum(lay.size or 0 for lay in layers)
        image = Image(name, None, _platform_of(config) or "?", tuple(layers), cfg_digest, None, size)
        return _check_platform(image, platform)
    except InputError as exc:
        return Image(name, None, "?", error=str(exc))


def _docker_config(
    store: Store, cfg_name: object, meta: _MetaBudget
) -> tuple[dict[str, Any] | None, str | None]:
    """A ``docker save`` image's config and its digest (the image ID, from its name
    ``<hex>.json``); ``(None, None)`` for a name that is no path inside the archive."""
    if not isinstance(cfg_name, str) or ".." in cfg_name.split("/") or cfg_name.startswith("/"):
        return None, None
    m = _HEX_JSON.match(cfg_name)
    cfg_digest = f"sha256:{m.group(1)}" if m else None  # the image ID is the config's sha256
    return _json(
        store, posixpath.normpath(cfg_name), cfg_digest, meta, f"image config {cfg_name}"
    ), cfg_digest


def _docker_layers(
    store: Store, names: tuple[str, ...], diff_ids: list | None, cfg_name: object
) -> list[Layer]:
    """The layers of a ``docker save`` image: named by their paths, sized by their members."""
    if diff_ids is not None and len(diff_ids) != len(names):
        raise CorruptError(f"image config {cfg_name}: {len(diff_ids)} diff_ids for {len(names)} layers")
    layers = []
    for i, n in enumerate(names):
        blob = store.get(n)
        layers.append(Layer(n, None, None if blob is None else blob.size, diff_ids[i] if diff_ids else None))
    return layers


def _docker_layer_names(layers: list) -> tuple:
    names = []
    for lay in layers:
        if not isinstance(lay, str) or lay.startswith("/") or ".." in lay.split("/"):
            raise CorruptError(f"manifest.json layer {str(lay)[:80]!r} is no path inside the archive")
        names.append(posixpath.normpath(lay))
    return _check_count(names)


def _check_count(names: list[Any]) -> tuple[Any, ...]:
    if len(names) > MAX_LAYERS:
        raise LimitExceeded(f"image of {len(names)} layers, over the {MAX_LAYERS}-layer limit")
    return tuple(names)


# ------------------------------------------------------------------------------- the layers
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
        fh = tf.extractfile(ti)  # a regular member: never None
        self.meta[path] = fh.read(ti.size) if fh is not None else b""

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


def open_store(path: str) -> DirStore:
    if not is_layout_dir(path):
        raise UnreadableError("not an OCI image layout (no oci-layout and index.json)")
    return DirStore(path)
