"""Walking directory trees: regular files only, symlinks not followed into loops, never written."""

from __future__ import annotations

import os
import stat
from typing import Iterator, Tuple

# (path, note): note is None for a file to inspect, else why it was skipped
Item = Tuple[str, "str | None"]


def iter_files(root: str, follow_links: bool = False) -> Iterator[Item]:
    """Yield every regular file under ``root`` (sorted, deterministic), and skips with a reason."""
    seen = set()

    def visit(d: str) -> Iterator[Item]:
        try:
            st = os.stat(d)
        except OSError as exc:
            yield d, f"unreadable directory: {exc.strerror}"
            return
        key = (st.st_dev, st.st_ino)
        if key in seen:
            yield d, "directory already visited (symlink loop): skipped"
            return
        seen.add(key)
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield d, f"unreadable directory: {exc.strerror}"
            return
        for e in entries:
            try:
                if e.is_symlink():
                    if not os.path.exists(e.path):  # False for a loop (ELOOP) too
                        yield e.path, "symlink loop or dangling symlink: skipped"
                        continue
                    if not follow_links:
                        continue  # the target is scanned where it lives, or is outside the tree
                if e.is_dir(follow_symlinks=follow_links):
                    yield from visit(e.path)
                    continue
                mode = e.stat(follow_symlinks=follow_links).st_mode
            except OSError as exc:
                yield e.path, f"unreadable: {exc.strerror}"
                continue
            if stat.S_ISREG(mode):
                yield e.path, None
            elif not stat.S_ISDIR(mode):
                yield e.path, "not a regular file (FIFO, device or socket): skipped"

    if os.path.isdir(root):
        yield from visit(root)
    else:
        yield root, None
