"""Which images a store holds: the entries of an OCI index (nested indexes, platforms, tags)
or of a ``docker save`` manifest, each as an ``Image`` its checked metadata describes."""

from __future__ import annotations

import json
import posixpath
from typing import TYPE_CHECKING, Any

from fatbin_inspect.containers.oci.meta import (
    _CONTAINERD_NAME,
    _DIGEST,
    _HEX_JSON,
    _INDEX_TYPES,
    DEFAULT_PLATFORM,
    MAX_INDEX_DEPTH,
    MAX_LAYERS,
    REF_NAME,
    Image,
    Layer,
    _blob_name,
    _json,
    _matches,
    _MetaBudget,
    _platform_of,
    short_name,
)
from fatbin_inspect.containers.oci.store import Store
from fatbin_inspect.errors import CorruptError, InputError, LimitExceeded

if TYPE_CHECKING:
    from collections.abc import Callable


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
) -> dict:
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
    store: Store, desc: dict, platform: str, meta: _MetaBudget, depth: int
) -> tuple[dict | None, list[str]]:
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
) -> tuple[dict | None, list[str]]:
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
    cfg_desc: dict = manifest["config"] if isinstance(manifest.get("config"), dict) else {}
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


def _docker_config(store: Store, cfg_name: object, meta: _MetaBudget) -> tuple[dict | None, str | None]:
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
