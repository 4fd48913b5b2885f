"""An image's records (``Image``, ``Layer``), the limits on its metadata, and its JSON blobs,
checked against their digests before they are parsed."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from fatbin_inspect.containers.oci.store import Store
from fatbin_inspect.errors import CorruptError, LimitExceeded

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

    def facts(self) -> dict:
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
