"""What to scan: the running interpreter's site-packages, or the paths given, each named by kind.

A virtualenv prefix (``pyvenv.cfg``) or conda prefix (``conda-meta/``) is walked whole: conda puts
CUDA libraries in ``lib/`` beside ``lib/pythonX.Y/site-packages``, and a venv's ``lib64`` is a
symlink the walk does not follow, so nothing is read twice.

Here, not in ``scanning``, because ``list`` checks its roots the same way and must not import the
scan (``scanning/__init__``) to do so. The tree walk itself is ``walk.iter_stat``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from fatbin_inspect.errors import UsageError
from fatbin_inspect.inventory.walk import ImageRef, image_ref


@dataclass(frozen=True)
class Root:
    path: str
    # site-packages | venv | conda | oci-image | image (a tar named with its tag) | registry | stdin |
    # directory | wheel | conda-package | archive | file
    kind: str


def interpreter_site_packages() -> tuple[str, ...]:
    """purelib and platlib of the running interpreter, once each (they are often one folder)."""
    import sysconfig

    out, seen = [], set()
    for name in ("purelib", "platlib"):
        p = sysconfig.get_paths().get(name)
        if p and os.path.isdir(p) and os.path.realpath(p) not in seen:
            seen.add(os.path.realpath(p))
            out.append(p)
    return tuple(out)


def kind_of(path: str) -> str:
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "oci-layout")) and os.path.isfile(
            os.path.join(path, "index.json")
        ):
            return "oci-image"
        if os.path.isfile(os.path.join(path, "pyvenv.cfg")):
            return "venv"
        if os.path.isdir(os.path.join(path, "conda-meta")):
            return "conda"
        if os.path.basename(os.path.normpath(path)) in ("site-packages", "dist-packages"):
            return "site-packages"
        return "directory"
    low = path.lower()
    if low.endswith(".whl"):
        return "wheel"
    if low.endswith((".conda", ".tar.bz2")):
        return "conda-package"
    if low.endswith((".tar", ".tar.gz", ".tgz", ".zip")):
        return "archive"
    return "file"


def resolve_roots(paths: Iterable[str]) -> tuple[Root, ...]:
    """The roots of ``paths``: folders and files, and images named the way skopeo names them
    (``walk.image_ref``: ``DIR:TAG``, ``oci-archive:FILE:TAG``, ``docker://HOST/REPO:TAG``, ``-``)."""
    paths = tuple(paths) or interpreter_site_packages()
    roots, seen = [], set()
    for p in paths:
        ref = image_ref(p)
        if ref is not None:
            seen_as = p  # an image is named by its reference
            root = Root(p, _image_kind(p, ref))
        else:
            if not os.path.exists(p):
                from fatbin_inspect.containers.index.purl import is_purl

                if is_purl(p):  # list, check, gate and diff take them before this
                    raise UsageError(
                        f"{p}: scan reads no package from an index yet (list, check, gate and diff do)"
                    )
                raise UsageError(f"{p}: no such file or directory")
            seen_as = os.path.realpath(p)
            root = Root(p, kind_of(p))
        if seen_as not in seen:
            seen.add(seen_as)
            roots.append(root)
    return tuple(roots)


def _image_kind(p: str, ref: ImageRef) -> str:
    """The kind of a root named as an image: registry, stdin, oci-image (a layout) or image (a tar)."""
    if ref.transport == "docker":
        from fatbin_inspect.containers.registry import parse

        parse(ref.path)  # a malformed reference is a usage error now, not a record
        return "registry"
    if ref.transport == "stdin":
        return "stdin"
    if not os.path.exists(ref.path):
        raise UsageError(f"{p}: {ref.path}: no such file or directory")
    return "oci-image" if os.path.isdir(ref.path) else "image"
