"""The one place that writes files: reports (``--output``), extracted images, the job summary.

- A report is written to a temporary file beside the target and renamed over it, so a reader
  never sees half a report and a failed run leaves the old one. Over an existing file, Linux's
  ``renameat2(RENAME_EXCHANGE)`` swaps the two names and the old bytes are then unlinked: on
  ext4 a rename over a file first writes back the new file's data (``auto_da_alloc``),
  which the swap does not ask for; elsewhere ``os.replace``. A
  target that is a symbolic link, a FIFO, a device or a socket is refused (``refuse_special``):
  never written through, never waited on (``-o -`` is standard output; ``os.devnull`` alone is
  let through).
- No output may be one of the inputs (same device and inode): ``list x.so -o x.so`` is refused
  before anything is written.
- An extracted image is created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` relative to the output
  folder, opened once with ``O_NOFOLLOW`` (a folder that is a symbolic link is refused): an
  existing file or a planted symlink is never written through; ``force`` replaces it by rename.
- The job summary (``$GITHUB_STEP_SUMMARY``) is appended only to a regular file, opened with
  ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` before a byte is written.
- Text is encoded as UTF-8; a character that cannot be (an undecodable file name byte that
  escaped ``render.escape``) becomes ``?`` instead of an encoding error and an empty file.
- Failures are ``UsageError``s that say what is wrong ("cannot write report.json: Permission
  denied"), not internal errors.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import sys
import tempfile
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import IO

from fatbin_inspect.errors import UsageError
from fatbin_inspect.render.escape import shown

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def refuse_inputs(output: str, inputs: Iterable[str]) -> None:
    """UsageError when ``output`` is the same file as one of ``inputs`` (archive members, named
    ``CONTAINER!MEMBER``, count as their container)."""
    target = _identity(output)
    if target is None:
        return
    from fatbin_inspect.inventory.member_path import container

    for p in inputs:
        if _identity(p) == target or ("!" in p and _identity(container(p)) == target):
            raise UsageError(f"refusing to write {shown(output)}: it is an input ({shown(p)})")


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words (None for a regular file or a directory)."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "not a regular file"


def refuse_special(path: str, what: str = "write") -> os.stat_result | None:
    """UsageError when ``path`` is a symbolic link, FIFO, device or socket (its ``lstat``, not
    followed); its ``lstat`` otherwise, None when it does not exist. ``os.devnull`` passes."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    kind = _kind(st.st_mode)
    if kind is not None and path != os.devnull:
        hint = " (-o - writes to standard output)" if what == "write" else ""
        raise UsageError(f"refusing to {what} {shown(path)}: it is {kind}{hint}")
    return st


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "replace")


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


@contextlib.contextmanager
def open_report(output: str | None, inputs: Iterable[str] = (), replace: bool = False) -> Iterator[IO[bytes]]:
    """The report's destination as a binary stream: stdout (``output`` None or ``-``), or a
    temporary file beside ``output`` renamed over it when the body finishes (on an error it is
    removed and ``output`` keeps its old bytes). ``inputs`` is read before the stream opens and
    again before the rename (a list the command fills as it reads is checked in full).
    ``output`` a symbolic link, FIFO, device or socket is refused (``refuse_special``), unless
    ``replace`` (``extract --force``): then the rename replaces it, never following it."""
    if not output or output == "-":
        with _stdout() as out:
            yield out
        return
    inputs = inputs if isinstance(inputs, list) else list(inputs)
    refuse_inputs(output, inputs)
    if output == os.devnull:
        with open(output, "wb") as fh:
            yield fh
        return
    st = None if replace else refuse_special(output)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UsageError(f"cannot write {shown(output)}: it is a directory")
    with _renamed_into_place(output, inputs) as fh:
        yield fh


@contextlib.contextmanager
def _stdout() -> Iterator[IO[bytes]]:
    out = sys.stdout.buffer
    sys.stdout.flush()
    try:
        yield out
    finally:
        out.flush()


@contextlib.contextmanager
def _renamed_into_place(output: str, inputs: list) -> Iterator[IO[bytes]]:
    """A temporary file beside ``output``, renamed over it when the body finishes (``inputs``
    checked again first); removed on an error."""
    folder, name = os.path.dirname(output) or ".", os.path.basename(output)
    try:
        fd, made = tempfile.mkstemp(prefix=f".{name[:40]}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise UsageError(f"cannot write {shown(output)}: {exc.strerror or exc}") from None
    tmp: str | None = made  # None once renamed into place
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            yield fh
        refuse_inputs(output, inputs)
        _into_place(made, output)
        tmp = None
    except OSError as exc:
        raise UsageError(f"cannot write {shown(output)}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _into_place(made: str, output: str) -> None:
    """``made`` renamed to ``output`` atomically: swapped with an existing regular file, whose
    bytes (now named ``made``) are unlinked; else (nothing there, no ``renameat2``, a file
    system without the swap, or what was there turned out not to be a regular file, which is
    swapped back) ``os.replace``."""
    if _exchange(made, output):
        try:
            regular = stat.S_ISREG(os.lstat(made).st_mode)
        except OSError:
            regular = False
        if regular:
            with contextlib.suppress(OSError):
                os.unlink(made)
            return
        if not _exchange(made, output):
            raise OSError(f"{made}: could not be swapped back")
    os.replace(made, output)


def _exchange(a: str, b: str) -> bool:
    """Swap the names ``a`` and ``b`` (both in one folder), or False."""
    call = _renameat2()
    if call is None:
        return False
    return call(-100, os.fsencode(a), -100, os.fsencode(b), 2) == 0  # AT_FDCWD, RENAME_EXCHANGE


@functools.cache
def _renameat2() -> Callable[[int, bytes, int, bytes, int], int] | None:
    """glibc's ``renameat2`` (2.28 and newer), or None."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        call = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


def write_report(text: str, output: str | None, inputs: Iterable[str] = ()) -> None:
    """``text`` to ``output`` (atomically, see ``open_report``), or to stdout."""
    with open_report(output, inputs) as out:
        out.write(_encode(text))


def _replace(folder: str, name: str, data: bytes, shown_as: str) -> None:
    """Write ``data`` to ``name`` in ``folder`` through a temporary file and a rename."""
    with open_report(os.path.join(folder, name), replace=True) as out:
        out.write(data)


class OutputFolder:
    """Where ``extract`` writes: a folder opened once; each file is created in it by name only."""

    def __init__(self, path: str, force: bool = False, inputs: Iterable[str] = ()):
        self.path = path
        self.force = force
        self.inputs = tuple(inputs)
        refuse_special(path.rstrip("/") or path, "write into")
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create {shown(path)}: {exc.strerror or exc}") from None
        try:  # opened once, not followed: each file is created relative to this folder
            self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC)
        except OSError as exc:
            raise UsageError(f"cannot write into {shown(path)}: {exc.strerror or exc}") from None
        weakref.finalize(self, os.close, self.fd)

    def write(self, name: str, data: bytes) -> None:
        """Create ``name`` (a single path component) holding ``data``; OSError on failure."""
        if not name or "/" in name or name in (".", "..") or (os.sep != "/" and os.sep in name):
            raise OSError(f"not a plain file name: {name!r}")
        if len(os.fsencode(name)) > 255:
            raise OSError(f"file name of {len(os.fsencode(name))} bytes is over the 255-byte limit")
        target = os.path.join(self.path, name)
        if self.force:
            refuse_inputs(target, self.inputs)
            _replace(self.path, name, data, target)
            return
        try:
            fd = os.open(
                name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666, dir_fd=self.fd
            )
        except FileExistsError:
            raise OSError("exists already (--force replaces it)") from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)


def append_summary(path: str, text: str) -> None:
    """Append the Markdown job summary to ``$GITHUB_STEP_SUMMARY`` (a regular file the runner
    created; a symbolic link, FIFO, device or socket there is refused, never written through)."""
    refuse_special(path, "append the job summary to")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        raise UsageError(f"cannot append the job summary to {shown(path)}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as fh:
        kind = _kind(os.fstat(fd).st_mode)  # swapped in since the lstat: still never written
        if kind is not None and path != os.devnull:
            raise UsageError(f"refusing to append the job summary to {shown(path)}: it is {kind}")
        fh.write(_encode(text))
