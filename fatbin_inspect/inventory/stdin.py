"""Standard input as an input (``docker save IMG | fatbin-inspect scan -``): a pipe or a regular
file only, never empty; a pipe copied, bounded by a cap and the free space where it is kept."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fatbin_inspect.formats.binio import Blob

MAX_STDIN_BYTES = 64 << 30  # a docker save of the largest real images is a few tens of GB
# the free space a copy of standard input leaves in its temporary folder (for everyone else)
STDIN_SPARE_BYTES = 256 << 20
# set by ``close_stdin`` (the command line found descriptor 0 closed and put /dev/null there, so
# no file the run opens takes it): ``stdin_blob`` then says so instead of reading that file
_stdin_closed = False


def close_stdin() -> None:
    """Descriptor 0 was closed when the process started (``cmd <&-``): ``-`` reads nothing."""
    global _stdin_closed
    _stdin_closed = True


def _stdin_kind(fd: int) -> os.stat_result:
    """The stat of standard input when it is a pipe or a regular file; ``UnreadableError``
    naming what it is otherwise: closed, a terminal, a device (``/dev/null`` and ``/dev/zero``
    too: neither is an image), a socket or a folder."""
    from fatbin_inspect.errors import UnreadableError

    if _stdin_closed:
        raise UnreadableError("standard input is closed: give an image on a pipe or from a file")
    try:
        st = os.fstat(fd)
    except OSError as exc:
        raise UnreadableError(f"standard input: {exc.strerror}") from None
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISREG(st.st_mode):
        return st
    if os.isatty(fd):
        what = "a terminal"
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        what = "a device"
    elif stat.S_ISSOCK(st.st_mode):
        what = "a socket"
    else:
        what = "not a pipe or a regular file"
    raise UnreadableError(f"standard input is {what}: give an image on a pipe or from a file")


def stdin_limit(free: int) -> int:
    """The most bytes of a pipe kept: ``MAX_STDIN_BYTES``, and no more than leaves
    ``STDIN_SPARE_BYTES`` of the ``free`` bytes of the folder the copy is kept in."""
    return max(0, min(MAX_STDIN_BYTES, free - STDIN_SPARE_BYTES))


def stdin_blob(fd: int = 0) -> Blob:
    """Standard input (``docker save IMG | fatbin-inspect scan -``) as a ``Blob``: a pipe or a
    regular file only (``_stdin_kind``), and not empty. A regular file (``< image.tar``) is
    mapped where it is. A pipe cannot be: a ``docker save`` tar puts ``manifest.json`` (which
    says what the layers are) after the layers, so the stream is copied, at most
    ``stdin_limit`` bytes (``MAX_STDIN_BYTES`` and the temporary folder's free space), into a
    file in a private temporary folder (mode 0700), unlinked at once (nothing is left behind,
    whatever happens) and mapped; the copy is then read as a file, layer by layer."""
    import mmap
    import tempfile

    from fatbin_inspect.errors import LimitExceeded, UnreadableError
    from fatbin_inspect.formats.binio import Blob

    st = _stdin_kind(fd)
    if stat.S_ISREG(st.st_mode):
        if not st.st_size:
            raise UnreadableError("standard input is an empty file")
        mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        return Blob(mm, 0, st.st_size, owner=mm)
    folder = tempfile.mkdtemp(prefix="fatbin-inspect-stdin-")  # 0700: this user's alone
    path = os.path.join(folder, "stdin.tar")
    out = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        os.unlink(path)
        os.rmdir(folder)
        vfs = os.fstatvfs(out)
        limit = stdin_limit(vfs.f_bavail * vfs.f_frsize)
        total = 0
        while True:
            chunk = os.read(fd, 4 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise LimitExceeded(
                    f"standard input past {limit} bytes (at most {MAX_STDIN_BYTES}, and"
                    f" {STDIN_SPARE_BYTES} of {os.path.dirname(folder)}'s free space left to others)"
                )
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view) :]
        if total == 0:
            raise UnreadableError("standard input is empty (the pipe gave no bytes)")
        mm = mmap.mmap(out, 0, access=mmap.ACCESS_READ)
        return Blob(mm, 0, total, owner=mm)
    except OSError as exc:
        raise UnreadableError(f"standard input: cannot keep a copy: {exc.strerror}") from None
    finally:
        os.close(out)
