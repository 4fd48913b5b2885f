"""The one place that writes files: reports (``--output``), extracted images, the job summary.

- A report is written to a temporary file beside the target and renamed over it, so a reader
  never sees half a report and a failed run leaves the old one; the rename replaces a symlink
  planted at the target, never the file it points to. A FIFO or device (``-o /dev/stdout``) is
  written in place.
- No output may be one of the inputs (same device and inode): ``list x.so -o x.so`` is refused
  before anything is written.
- An extracted image is created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` relative to the open
  output folder: an existing file or a planted symlink is never written through; ``force``
  replaces it by rename instead.
- Text is encoded as UTF-8; a character that cannot be (an undecodable file name byte that
  escaped ``render.escape``) becomes ``?`` instead of an encoding error and an empty file.
- Failures are ``UsageError``s that say what is wrong ("cannot write report.json: Permission
  denied"), not internal errors.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
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


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "replace")


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


@contextlib.contextmanager
def open_report(output: str | None, inputs: Iterable[str] = ()) -> Iterator[IO[bytes]]:
    """The report's destination as a binary stream: stdout (``output`` None or ``-``), or a
    temporary file beside ``output`` renamed over it when the body finishes (on an error it is
    removed and ``output`` keeps its old bytes). ``inputs`` is read before the stream opens and
    again before the rename (a list the command fills as it reads is checked in full)."""
    if not output or output == "-":
        out = sys.stdout.buffer
        sys.stdout.flush()
        try:
            yield out
        finally:
            out.flush()
        return
    inputs = inputs if isinstance(inputs, list) else list(inputs)
    refuse_inputs(output, inputs)
    try:
        st = os.stat(output)
    except OSError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UsageError(f"cannot write {shown(output)}: it is a directory")
    if st is not None and not stat.S_ISREG(st.st_mode):  # /dev/stdout, a FIFO: written in place
        try:
            fh = open(output, "wb")
        except OSError as exc:
            raise UsageError(f"cannot write {shown(output)}: {exc.strerror or exc}") from None
        with fh:
            yield fh
        return
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
        os.replace(made, output)
        tmp = None
    except OSError as exc:
        raise UsageError(f"cannot write {shown(output)}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_report(text: str, output: str | None, inputs: Iterable[str] = ()) -> None:
    """``text`` to ``output`` (atomically, see ``open_report``), or to stdout."""
    with open_report(output, inputs) as out:
        out.write(_encode(text))


def _replace(folder: str, name: str, data: bytes, shown_as: str) -> None:
    """Write ``data`` to ``name`` in ``folder`` through a temporary file and a rename."""
    with open_report(os.path.join(folder, name)) as out:
        out.write(data)


class OutputFolder:
    """Where ``extract`` writes: a folder opened once; each file is created in it by name only."""

    def __init__(self, path: str, force: bool = False, inputs: Iterable[str] = ()):
        self.path = path
        self.force = force
        self.inputs = tuple(inputs)
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create {shown(path)}: {exc.strerror or exc}") from None
        if not os.path.isdir(path):
            raise UsageError(f"cannot write into {shown(path)}: not a directory")

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
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666)
        except FileExistsError:
            raise OSError("exists already (--force replaces it)") from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)


def append_summary(path: str, text: str) -> None:
    """Append the Markdown job summary to ``$GITHUB_STEP_SUMMARY`` (a file the runner created)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o666)
    except OSError as exc:
        raise UsageError(f"cannot append the job summary to {shown(path)}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as fh:
        fh.write(_encode(text))
