"""What the scan's walk gives for one root, as records: files to look at, runs of files settled
by their stat alone, entries it could not read or skipped, and an image's facts.

A folder's files whose stat is the one a cache row was written for (``ScanCache.preload``) are
settled here, in runs of at most 256, and never reach the loop one by one: the warm path of a
tree is this walk and nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from fatbin_inspect.inventory.roots import Root
from fatbin_inspect.inventory.walk import Listed, iter_stat

MIN_SIZE = 64  # smaller than a fatbin header + one entry header, or than a PTX header
SETTLED_RUN = 256

IMAGE_KINDS = ("oci-image", "registry", "archive", "image", "file")


class Seen(NamedTuple):
    """A regular file to look at: ``apath`` its absolute path (the cache key's), ``st`` its stat
    when the walk had it; ``fmt`` its format when known without reading it (an image); ``key``
    its cache key when no stat gives it (a registry image), ``stat_of`` the file whose stat does
    (a layout's index.json: the blobs are content-addressed); ``size`` its true size when the
    stat's is not (an image layout: its blobs)."""

    path: str
    apath: str
    st: os.stat_result | None
    fmt: str | None = None
    key: tuple[int, ...] | None = None
    stat_of: str | None = None
    size: int | None = None


class Settled(NamedTuple):
    """``n`` files of ``nbytes`` with nothing to report (too small, or cached as no binary)."""

    n: int
    nbytes: int


class Unreadable(NamedTuple):
    """An entry the walk could not read (an error record)."""

    path: str
    why: str


class Skipped(NamedTuple):
    """An entry that is no regular file (a FIFO, a symlink loop): counted, and named under
    ``--strict``."""

    path: str
    why: str


Entry = Seen | Settled | Unreadable | Skipped


def walk(root: str, known: Mapping[str, tuple[Any, ...]], listed: Listed | None = None) -> Iterator[Entry]:
    """The entries under ``root``; ``known``: ``ScanCache.preload``'s keys of the files there."""
    n = nbytes = 0  # files settled by their stat alone, not yet given
    for path, apath, st, skip in iter_stat(root, listed):
        if st is not None:
            size = st.st_size
            if size >= MIN_SIZE:
                k = known.get(apath)
                if (
                    k is None
                    or k[5] is not None
                    or k[2] != size
                    or k[3] != st.st_mtime_ns
                    or k[4] != st.st_ctime_ns
                    or k[1] != st.st_ino
                    or k[0] != st.st_dev
                ):
                    yield Seen(path, apath, st)
                    continue
            n += 1
            nbytes += size
            if n >= SETTLED_RUN:
                yield Settled(n, nbytes)
                n = nbytes = 0
        elif skip is None:  # a root that is a file or an image layout
            yield Seen(path, apath, None)
        elif skip.startswith("unreadable"):
            yield Unreadable(path, skip)
        else:
            yield Skipped(path, skip)
    yield Settled(n, nbytes)


class ImageRoot(NamedTuple):
    """An image named as an input: its facts (``containers.oci.Image``), and the one unit it is
    (None: a file, walked and cached as one)."""

    images: list[Any]
    unit: Seen | None


def image_root(root: Root, platform: str) -> ImageRoot | None:
    """An image named as an input (a layout, an image tar, ``DIR:TAG``, a registry reference):
    its facts read here (metadata only); None for other roots."""
    if root.kind not in IMAGE_KINDS:
        return None
    from fatbin_inspect.inventory.reader import image_facts

    facts = image_facts(root.path, platform)
    if facts is None:
        return None
    if root.kind in ("archive", "file"):
        return ImageRoot(facts, None)
    size = sum(i.size for i in facts)
    if root.kind == "registry":  # content-addressed: the manifest digests are the key
        import hashlib

        digests = "".join(i.digest or "" for i in facts)
        tag = int(hashlib.sha256(digests.encode()).hexdigest()[:15], 16)
        return ImageRoot(facts, Seen(root.path, root.path, None, "oci", key=(0, 0, size, tag, 0), size=size))
    return ImageRoot(facts, _local_image(root.path, size))


def _local_image(path: str, size: int) -> Seen:
    """An image on disk as one unit: a layout (keyed by its index.json's stat, ``size`` the
    blobs') or an image tar, with the tag chosen in its name (``DIR:TAG``) in its key."""
    from fatbin_inspect.inventory.walk import image_ref

    ref = image_ref(path)
    where = ref.path if ref is not None else path
    apath = os.path.abspath(where) + (f":{ref.select}" if ref is not None and ref.select else "")
    if os.path.isdir(where):
        return Seen(path, apath, None, "oci", stat_of=os.path.join(where, "index.json"), size=size)
    return Seen(path, apath, None, "oci", stat_of=where)
