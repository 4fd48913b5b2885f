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

Modules: ``store`` (layout folders and tars), ``meta`` (records, limits, checked JSON), ``select``
(indexes, manifests, platforms), ``reader`` (layers, whiteouts, hard links, attribution).
"""

from __future__ import annotations

from fatbin_inspect.containers.oci.meta import (
    _DIGEST,
    MAX_JSON_BYTES,
    MAX_META_BYTES,
    REF_NAME,
    Image,
    Layer,
    check_digest,
    loads,
    short_name,
)
from fatbin_inspect.containers.oci.reader import Hashing, ImageReader
from fatbin_inspect.containers.oci.select import images
from fatbin_inspect.containers.oci.store import (
    DirStore,
    Store,
    TarStore,
    is_image_names,
    is_layout_dir,
    open_store,
)

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_META_BYTES",
    "REF_NAME",
    "_DIGEST",
    "DirStore",
    "Hashing",
    "Image",
    "ImageReader",
    "Layer",
    "Store",
    "TarStore",
    "check_digest",
    "images",
    "is_image_names",
    "is_layout_dir",
    "loads",
    "open_store",
    "short_name",
]
