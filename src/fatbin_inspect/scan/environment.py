"""What to scan: the running interpreter's site-packages, or the paths given, each named by kind.

A virtualenv prefix (``pyvenv.cfg``) or conda prefix (``conda-meta/``) is walked whole: conda puts
CUDA libraries in ``lib/`` beside ``lib/pythonX.Y/site-packages``, and a venv's ``lib64`` is a
symlink the walk does not follow, so nothing is read twice.

``iter_stat`` walks like ``walk.iter_files`` (same files, same skips, same order) but hands out the
``lstat`` the directory listing already paid for and the absolute path, so a warm scan of 15,000
files costs one system call per file and no path arithmetic.
"""

from __future__ import annotations

import os
import stat
import sysconfig
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional, Tuple

from fatbin_inspect.errors import UsageError


@dataclass(frozen=True)
class Root:
    path: str
    kind: str  # site-packages | venv | conda | directory | wheel | archive | file


def interpreter_site_packages() -> Tuple[str, ...]:
    """purelib and platlib of the running interpreter, once each (they are often one folder)."""
    out, seen = [], set()
    for name in ("purelib", "platlib"):
        p = sysconfig.get_paths().get(name)
        if p and os.path.isdir(p) and os.path.realpath(p) not in seen:
            seen.add(os.path.realpath(p))
            out.append(p)
    return tuple(out)


def kind_of(path: str) -> str:
    if os.path.isdir(path):
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
    if low.endswith((".tar", ".tar.gz", ".tgz", ".zip")):
        return "archive"
    return "file"


def resolve_roots(paths: Iterable[str]) -> Tuple[Root, ...]:
    paths = tuple(paths) or interpreter_site_packages()
    roots, seen = [], set()
    for p in paths:
        if not os.path.exists(p):
            raise UsageError(f"{p}: no such file or directory")
        real = os.path.realpath(p)
        if real in seen:
            continue
        seen.add(real)
        roots.append(Root(p, kind_of(p)))
    return tuple(roots)


# (path as shown, absolute path, stat or None, skip): skip is None for a regular file, else why
# the entry was skipped; the stat is None when the walk has none (a root that is a file)
StatItem = Tuple[str, str, Optional[os.stat_result], Optional[str]]


def iter_stat(root: str) -> Iterator[StatItem]:
    """Every regular file under ``root`` (sorted by name per folder), symlinks not followed."""
    if not os.path.isdir(root):
        yield root, os.path.abspath(root), None, None
        return
    seen = set()
    S_ISREG, S_ISDIR = stat.S_ISREG, stat.S_ISDIR

    def visit(d: str, ad: str, st) -> Iterator[StatItem]:
        if st is None:
            try:
                st = os.stat(d)
            except OSError as exc:
                yield d, ad, None, f"unreadable directory: {exc.strerror}"
                return
        key = (st.st_dev, st.st_ino)
        if key in seen:
            yield d, ad, None, "directory already visited (symlink loop): skipped"
            return
        seen.add(key)
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield d, ad, None, f"unreadable directory: {exc.strerror}"
            return
        prefix = ad if ad.endswith(os.sep) else ad + os.sep
        for e in entries:
            try:
                if e.is_symlink():
                    if not os.path.exists(e.path):  # False for a loop (ELOOP) too
                        yield e.path, prefix + e.name, None, "symlink loop or dangling symlink: skipped"
                    continue  # the target is scanned where it lives, or is outside the tree
                est = e.stat(follow_symlinks=False)
            except OSError as exc:
                yield e.path, prefix + e.name, None, f"unreadable: {exc.strerror}"
                continue
            mode = est.st_mode
            if S_ISREG(mode):
                yield e.path, prefix + e.name, est, None
            elif S_ISDIR(mode):
                yield from visit(e.path, prefix + e.name, est)
            else:
                yield e.path, prefix + e.name, None, "not a regular file (FIFO, device or socket): skipped"

    yield from visit(root, os.path.abspath(root), None)
