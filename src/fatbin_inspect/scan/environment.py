"""What to scan: the running interpreter's site-packages, or the paths given, each named by kind.

A virtualenv prefix (``pyvenv.cfg``) or conda prefix (``conda-meta/``) is walked whole: conda puts
CUDA libraries in ``lib/`` beside ``lib/pythonX.Y/site-packages``, and a venv's ``lib64`` is a
symlink the walk does not follow, so nothing is read twice.

``iter_stat`` walks like ``walk.iter_files`` (same files, same skips, same order) but hands out the
``lstat`` the directory listing already paid for and the absolute path, so a warm scan of 15,000
files costs one system call per file and no path arithmetic.
"""

from __future__ import annotations

import operator
import os
import stat
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional, Tuple

from fatbin_inspect.errors import UsageError


@dataclass(frozen=True)
class Root:
    path: str
    kind: str  # site-packages | venv | conda | directory | wheel | archive | file


def interpreter_site_packages() -> Tuple[str, ...]:
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


_SCANDIR_FD = os.scandir in os.supports_fd  # stat by name relative to an open folder (fstatat)


def _entries(d: str) -> list:
    """``[(name, lstat or None, note)]`` of a folder, sorted by name; ``note``: "symlink", or why
    the entry could not be stat'ed. Each stat is taken relative to the open folder where the
    platform allows, so the kernel resolves one name per file, not the whole path."""
    out = []
    fd = os.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)) if _SCANDIR_FD else None
    try:
        with os.scandir(d if fd is None else fd) as it:
            for e in sorted(it, key=operator.attrgetter("name")):
                try:
                    if e.is_symlink():
                        out.append((e.name, None, "symlink"))
                    else:
                        out.append((e.name, e.stat(follow_symlinks=False), None))
                except OSError as exc:
                    out.append((e.name, None, f"unreadable: {exc.strerror}"))
    finally:
        if fd is not None:
            os.close(fd)
    return out


def iter_stat(root: str) -> Iterator[StatItem]:
    """Every regular file under ``root`` (sorted by name per folder, depth first), symlinks not
    followed; one loop over a stack of folders, not a generator per folder level."""
    if not os.path.isdir(root):
        yield root, os.path.abspath(root), None, None
        return
    seen = set()
    S_ISREG, S_ISDIR, sep, exists = stat.S_ISREG, stat.S_ISDIR, os.sep, os.path.exists

    def listing(d: str, ad: str, st):
        """(entries iterator, shown prefix, absolute prefix), or why the folder is skipped."""
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return "directory already visited (symlink loop): skipped"
        seen.add(key)
        try:
            entries = _entries(d)
        except OSError as exc:
            return f"unreadable directory: {exc.strerror}"
        return iter(entries), d if d.endswith(sep) else d + sep, ad if ad.endswith(sep) else ad + sep

    aroot = os.path.abspath(root)
    try:
        top = listing(root, aroot, os.stat(root))
    except OSError as exc:
        top = f"unreadable directory: {exc.strerror}"
    if isinstance(top, str):
        yield root, aroot, None, top
        return
    stack = [top]
    while stack:
        entries, shown, prefix = stack[-1]
        for name, est, note in entries:
            if note is not None:
                if note != "symlink":
                    yield shown + name, prefix + name, None, note
                elif not exists(shown + name):  # False for a loop (ELOOP) too
                    yield shown + name, prefix + name, None, "symlink loop or dangling symlink: skipped"
                continue  # a symlink's target is scanned where it lives, or is outside the tree
            mode = est.st_mode
            if S_ISREG(mode):
                yield shown + name, prefix + name, est, None
            elif S_ISDIR(mode):
                sub = listing(shown + name, prefix + name, est)
                if isinstance(sub, str):
                    yield shown + name, prefix + name, None, sub
                    continue
                stack.append(sub)
                break
            else:
                yield shown + name, prefix + name, None, "not a regular file (FIFO, device or socket): skipped"
        else:
            stack.pop()
