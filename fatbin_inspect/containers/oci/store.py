"""Where an image's blobs are: an OCI image layout folder (``DirStore``) or a tar of one, an OCI
archive or a ``docker save`` (``TarStore``); ``registry.RegistryStore`` is the third kind."""

from __future__ import annotations

import os
import posixpath
from typing import TYPE_CHECKING, Any, Protocol

from fatbin_inspect.containers import archives
from fatbin_inspect.errors import CorruptError, LimitExceeded, UnreadableError
from fatbin_inspect.formats.binio import Blob, open_blob

if TYPE_CHECKING:
    import tarfile
    from collections.abc import Collection


class Store(Protocol):
    """Where an image's blobs are (``DirStore``, ``TarStore``, ``registry.RegistryStore``): the
    blob ``name`` (a ``Blob``, or a registry's stream of a layer), None when it has none."""

    def get(self, name: str, kind: str = "layer") -> Any: ...


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


def open_store(path: str) -> DirStore:
    if not is_layout_dir(path):
        raise UnreadableError("not an OCI image layout (no oci-layout and index.json)")
    return DirStore(path)
