"""The one exception hierarchy of fatbin-inspect.

``FatbinInspectError`` is the root. Errors about an input carry the byte ``offset`` where the
problem was seen (``None`` when it concerns the whole file); the scan turns them into a per-file
error record and goes on.
"""

from __future__ import annotations


class FatbinInspectError(Exception):
    """Root of every error this package raises on purpose."""


class InputError(FatbinInspectError):
    """An input could not be read or parsed."""

    def __init__(self, message: str, offset: int | None = None):
        super().__init__(message)
        self.message = message
        self.offset = offset

    def __str__(self) -> str:
        if self.offset is None:
            return self.message
        return f"{self.message} (at offset {self.offset:#x})"


class TruncatedError(InputError):
    """A declared size or offset points past the bytes that exist."""


class CorruptError(InputError):
    """Bytes are present but do not follow the format."""


class LimitExceeded(InputError):
    """A safety limit (decompressed size, archive depth, member count) was reached."""


class BudgetExceeded(LimitExceeded):
    """The budget of one top-level input (inflated bytes, time) is spent: nothing more of it is read."""


class UnreadableError(InputError):
    """The operating system refused to give us the bytes (permissions, FIFO, device...)."""


class NotLoaded(FatbinInspectError):
    """A parser asked a sparse image (``formats/cubin.py``'s ``sparse_image``) for bytes it did not
    keep. Never escapes the reader: it decodes the whole payload and parses again."""


class UsageError(FatbinInspectError):
    """The user asked for something that cannot be done (bad GPU name, bad option value)."""


class DataError(FatbinInspectError):
    """The packaged compatibility data is missing or inconsistent."""


class DeviceError(FatbinInspectError):
    """No GPU / driver / cuda-python where one is needed (verify, --gpu auto)."""
