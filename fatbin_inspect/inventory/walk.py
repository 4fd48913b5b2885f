"""Walking directory trees: regular files only, symlinks not followed into loops, never written.

``iter_stat`` hands out, with each path, the ``lstat`` the directory listing already paid for and
the absolute path, so a warm scan of 15,000 files costs one system call per file; ``iter_files``
is the same walk for commands that only need paths.
"""

from __future__ import annotations

import operator
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# (path, note): note is None for a file to inspect, else why it was skipped
Item = tuple[str, str | None]


def iter_files(root: str) -> Iterator[Item]:
    """Yield every regular file under ``root`` (sorted, deterministic), and skips with a reason."""
    for path, _abs, _st, note in iter_stat(root):
        yield path, note


# (path as shown, absolute path, stat or None, skip): skip is None for a regular file, else why
# the entry was skipped; the stat is None when the walk has none (a root that is a file)
StatItem = tuple[str, str, os.stat_result | None, str | None]


_LAYOUT = {"oci-layout", "index.json"}  # an OCI image layout folder holds both files
_SCANDIR_FD = os.scandir in os.supports_fd  # stat by name relative to an open folder (fstatat)


DANGLING = "symlink loop or dangling symlink: skipped"

# (name, lstat or None, note) of one folder entry: see ``_entries``
Entry = tuple[str, os.stat_result | None, str | None]
# a folder being walked: (its entries, shown prefix, absolute prefix)
_Open = tuple[Iterator[Entry], str, str]


def _entries(d: str) -> list[Entry]:
    """``[(name, lstat or None, note)]`` of a folder, sorted by name; ``note``: "symlink" (one
    that resolves: its target is scanned where it lives, or is outside the tree), ``DANGLING``,
    or why the entry could not be stat'ed. Each stat is taken relative to the open folder where
    the platform allows, so the kernel resolves one name per file, not the whole path."""
    out: list[Entry] = []
    fd = os.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)) if _SCANDIR_FD else None
    try:
        with os.scandir(d if fd is None else fd) as it:
            for e in sorted(it, key=operator.attrgetter("name")):
                try:
                    if e.is_symlink():
                        live = os.path.exists(os.path.join(d, e.name))  # False for a loop (ELOOP) too
                        out.append((e.name, None, "symlink" if live else DANGLING))
                    else:
                        out.append((e.name, e.stat(follow_symlinks=False), None))
                except OSError as exc:
                    out.append((e.name, None, f"unreadable: {exc.strerror}"))
    finally:
        if fd is not None:
            os.close(fd)
    return out


SPECIAL = "not a regular file (FIFO, device or socket): skipped"


def _special(path: str) -> str | None:
    """Why a file named as a root is skipped unopened (a FIFO, device or socket: opening a FIFO
    would wait for a writer), or None (a regular file, or no file: an image reference)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return None if stat.S_ISREG(mode) else SPECIAL


# what ``iter_stat`` tells its ``listed`` of each folder it reaches: (the folder as shown, its
# ``_entries``), or why it is not walked (a str), or None for an input that is not walked file by
# file (an image layout folder; a root that is a regular file)
Listed = Callable[[str, "list[Entry] | str | None"], None]


def _ignored(_folder: str, _entries: list | str | None) -> None:
    """The ``Listed`` of a walk nobody listens to."""


def iter_stat(root: str, listed: Listed | None = None) -> Iterator[StatItem]:
    """Every regular file under ``root`` (sorted by name per folder, depth first), symlinks not
    followed; one loop over a stack of folders, not a generator per folder level. An OCI image
    layout folder (``oci-layout`` and ``index.json``) is one item, without a stat. ``listed``,
    when given, sees each folder's listing as it is made (``Listed``): all a digest of the walk
    needs, without a look at each item."""
    tell = _ignored if listed is None else listed
    if not os.path.isdir(root):
        special = _special(root)
        tell(root, special)
        yield root, os.path.abspath(root), None, special
        return
    seen = set()
    S_ISREG, S_ISDIR, sep = stat.S_ISREG, stat.S_ISDIR, os.sep

    def listing(d: str, ad: str, st: os.stat_result | None = None) -> _Open | str | None:
        """(entries iterator, shown prefix, absolute prefix), or why the folder is skipped (None:
        an OCI image layout, one input read as an image, not file by file). ``st``: the folder's
        stat, taken here when not given."""
        entries, why = None, None
        try:
            key = ((st := st or os.stat(d)).st_dev, st.st_ino)
            if key in seen:
                why = "directory already visited (symlink loop): skipped"
            else:
                seen.add(key)
                entries = _entries(d)
        except OSError as exc:
            why = f"unreadable directory: {exc.strerror}"
        if entries is not None and {name for name, _st, note in entries if note is None} >= _LAYOUT:
            entries = None
        tell(d, why if entries is None else entries)
        if entries is None:
            return why
        return iter(entries), d if d.endswith(sep) else d + sep, ad if ad.endswith(sep) else ad + sep

    aroot = os.path.abspath(root)
    top = listing(root, aroot)
    if top is None or isinstance(top, str):
        yield root, aroot, None, top
        return
    stack = [top]
    while stack:
        entries, shown, prefix = stack[-1]
        for name, est, note in entries:
            if est is None:  # a symlink, or an entry not stat'ed: its note says which (``_entries``)
                if note != "symlink":
                    yield shown + name, prefix + name, None, note
                continue  # a symlink's target is scanned where it lives, or is outside the tree
            mode = est.st_mode
            if S_ISREG(mode):
                yield shown + name, prefix + name, est, None
            elif S_ISDIR(mode):
                sub = listing(shown + name, prefix + name, est)
                if sub is None or isinstance(sub, str):
                    yield shown + name, prefix + name, None, sub
                    continue
                stack.append(sub)
                break
            else:
                yield shown + name, prefix + name, None, SPECIAL
        else:
            stack.pop()


# ---------------------------------------------------------------------- image references
@dataclass(frozen=True)
class ImageRef:
    """An input named the way skopeo names images: ``oci:DIR[:TAG]``, ``oci-archive:FILE[:TAG]``,
    ``docker-archive:FILE[:NAME|@N]``, ``docker://HOST/REPO[:TAG|@DIGEST]`` (or ``registry://``),
    a bare ``DIR:TAG`` / ``FILE:TAG`` whose part before the last ``:`` exists, or ``-`` (stdin)."""

    transport: str  # oci | oci-archive | docker-archive | docker | stdin | path
    path: str  # the folder or file; HOST/REPO[:TAG] for docker
    select: str | None = None  # the tag, docker reference or @N asked for; None: every image


_TRANSPORTS = ("oci-archive:", "docker-archive:", "oci:")


def image_ref(arg: str) -> ImageRef | None:
    """The reference ``arg`` names, or None when it is a plain path (a path that exists is
    always a path, whatever its name looks like)."""
    if arg == "-":
        return ImageRef("stdin", "-")
    for scheme in ("docker://", "registry://"):
        if arg.startswith(scheme):
            return ImageRef("docker", arg[len(scheme) :])
    if os.path.lexists(arg):
        return None
    for t in _TRANSPORTS:
        if arg.startswith(t):
            rest = arg[len(t) :]
            path, _, select = rest.partition(":")  # skopeo splits at the first ':'
            return ImageRef(t[:-1], path, select or None)
    path, sep, select = arg.rpartition(":")  # a tag holds no ':'
    if sep and path and select and "/" not in select and os.path.exists(path):
        return ImageRef("path", path, select)
    return None
