"""Bounded decoding of fatbin entry payloads (docs/format.md §2.5).

LZ4 entries are a raw LZ4 *block* (no frame) and must be cut to ``compressed_size`` first: the
payload is zero-padded to 8 and the padding breaks the block decoder. Zstandard entries are
frames with the content size present. The declared uncompressed size is never trusted for
allocation: it must be under ``limit``; an LZ4 block cannot inflate more than ``LZ4_MAX_RATIO``
times (one extra length byte per 255 output bytes), so a larger claim is refused before the
decoder allocates it; a zstd frame whose own content size equals the claim is decoded in one
call (at most ``limit`` bytes allocated: the fast path for real cubins), any other is read in
chunks (memory grows only with real output), at most one byte past the claim. The result must
have exactly the declared size.
"""

from __future__ import annotations

import mmap
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

from fatbin_inspect.errors import BudgetExceeded, CorruptError, LimitExceeded

MAX_DECODED = 256 << 20  # 256 MiB: no real entry comes near (largest seen: a few MB)
MAX_FILE_RATIO = 1000  # decoded bytes per input byte, per file, beyond one MAX_DECODED entry
INPUT_SECONDS = 600.0  # wall-clock time one top-level input may take (the largest real wheel: far less)
LZ4_MAX_RATIO = 255
ZSTD_CHUNK = 4 << 20

_zstd = None


def _zstd_decompressor() -> Any:
    global _zstd
    if _zstd is None:
        import zstandard

        _zstd = zstandard.ZstdDecompressor()
    return _zstd


class Budget:
    """What one top-level input may cost, across every level of archive nesting: inflated and
    decoded bytes ``MAX_DECODED + MAX_FILE_RATIO * size`` (zip/tar.gz members, gzip streams and
    fatbin entries all draw on it) and ``INPUT_SECONDS`` of wall-clock time.

    Each entry is capped at ``MAX_DECODED``, but thousands of tiny entries (a 20-byte zstd frame
    can claim 16 MiB of zeros) or a 35 KB zip nesting 16 x 16 x 16 x 16 members of 64 MiB zeros
    (4 TiB) could still cost hours; real files decode to a few times their size, so this caps
    the work at a fixed multiple of the input, and the clock caps whatever the bytes do not.
    """

    __slots__ = ("deadline", "left", "limit")

    def __init__(self, input_size: int, seconds: float | None = None):
        self.left = self.limit = MAX_DECODED + MAX_FILE_RATIO * input_size
        self.deadline = time.monotonic() + (INPUT_SECONDS if seconds is None else seconds)

    def spend(self, n: int, offset: int | None = None) -> None:
        if n > self.left:
            raise BudgetExceeded(
                f"inflation budget of this input spent ({self.limit} bytes: 256 MiB + "
                f"{MAX_FILE_RATIO}x its size, all nesting levels together)",
                offset,
            )
        self.left -= n
        self.check(offset)

    def check(self, offset: int | None = None) -> None:
        if time.monotonic() > self.deadline:
            raise BudgetExceeded(f"time budget of this input spent ({INPUT_SECONDS:g} s)", offset)


def _decode_lz4(data: bytes, expected_size: int, offset: int | None) -> bytes:
    import lz4.block

    if expected_size > LZ4_MAX_RATIO * len(data) + 64:
        raise CorruptError(
            f"lz4 block of {len(data)} bytes cannot inflate to the declared {expected_size} bytes",
            offset,
        )
    return lz4.block.decompress(data, uncompressed_size=expected_size)


def _decode_zlib(data: bytes, expected_size: int, offset: int | None) -> bytes:
    """An SHF_COMPRESSED ELF section's stream: zlib format (RFC 1950)."""
    return zlib.decompressobj().decompress(data, expected_size + 1)


def _decode_zstd(data: bytes, expected_size: int, offset: int | None) -> bytes:
    import zstandard

    declared = zstandard.frame_content_size(data)
    if declared > expected_size:  # -1 (absent) is fine: the chunked read bounds it
        raise CorruptError(f"zstd frame declares {declared} bytes, entry header says {expected_size}", offset)
    if declared == expected_size:  # exact size known and already bounded: one C call
        return _zstd_decompressor().decompress(data, max_output_size=expected_size)
    return _zstd_bounded(data, expected_size)


# method -> (data, expected size, offset) -> at most expected size + 1 bytes
DECODERS = {"lz4": _decode_lz4, "zstd": _decode_zstd, "zlib": _decode_zlib}


def decode(
    method: str, data: bytes, expected_size: int, offset: int | None = None, limit: int = MAX_DECODED
) -> bytes:
    """Decode ``data`` with ``method`` ('none' or a key of ``DECODERS``) to exactly
    ``expected_size`` bytes (zlib and zstd: at most one byte more is ever inflated)."""
    if method == "none":
        return data
    if expected_size <= 0:
        raise CorruptError(f"{method} entry declares uncompressed size {expected_size}", offset)
    if expected_size > limit:
        raise LimitExceeded(
            f"{method} entry declares {expected_size} uncompressed bytes, over the {limit}-byte limit",
            offset,
        )
    decoder = DECODERS.get(method)
    if decoder is None:
        raise CorruptError(f"unknown compression {method!r}", offset)
    try:
        out = decoder(data, expected_size, offset)
    except (CorruptError, LimitExceeded):
        raise
    except Exception as exc:  # lz4.block.LZ4BlockError, zstandard.ZstdError, MemoryError
        raise CorruptError(f"{method} payload does not decode: {exc}", offset) from None
    if len(out) != expected_size:
        raise CorruptError(
            f"{method} payload decoded to {len(out)} bytes, header says {expected_size}", offset
        )
    return out


REUSED_MAX = 8 << 20  # the largest output zstd_reused decodes into the reused buffer
STREAM_CHUNK = 256 << 10  # what zstd_parts drops passes through a buffer this large


class _Reused(threading.local):
    """One thread's output buffer (an anonymous mapping: only pages written become resident) and
    zstd contexts, kept from one entry to the next."""

    buf: mmap.mmap  # these three are set together by the thread's first ``get``
    scratch: bytearray
    dctx: Any
    ready = False

    def get(self) -> _Reused:
        if not self.ready:
            import zstandard

            self.buf = mmap.mmap(-1, REUSED_MAX + 1, flags=mmap.MAP_PRIVATE)
            self.scratch = bytearray(STREAM_CHUNK)
            self.dctx = zstandard.ZstdDecompressor()
            self.ready = True
        return self


_reused = _Reused()


def zstd_reused(data: bytes | memoryview, size: int) -> mmap.mmap | None:
    """``data``, a zstd frame declaring ``size`` (1 to ``REUSED_MAX``) bytes, decoded into the
    first ``size`` bytes of this thread's reused buffer, valid until its next use (what is read
    from it must be copied out); None when the frame does not decode to exactly ``size`` bytes
    (``decode`` then says why). A fresh ``bytes`` per cubin costs as much to decode, but glibc
    keeps what is freed: a worker decoding libtorch_cuda.so's 2,975 cubins (5 GB) grew to
    ~70 MB. The frame, whole in memory and of known size, is decoded in one pass (libzstd's
    single-pass case of streaming), so this is as fast as ``decompress``."""
    if not 0 < size <= REUSED_MAX:
        return None
    import zstandard

    state = _reused.get()
    view = memoryview(state.buf)
    try:
        if zstandard.frame_content_size(data) != size:
            return None
        with state.dctx.stream_reader(data) as reader:
            if reader.readinto(view[: size + 1]) != size or reader.readinto(view[size : size + 1]):
                return None
    except zstandard.ZstdError:
        return None
    finally:
        view.release()
    return state.buf


def zstd_parts(
    data: bytes | memoryview, size: int, head: int, span: Callable[[memoryview], tuple[int, int]]
) -> tuple[mmap.mmap, bytes, int] | None:
    """Decode ``data``, a zstd frame declaring ``size`` bytes (more than ``REUSED_MAX``), keeping
    only its first ``head`` bytes (at most ``REUSED_MAX``) and the span ``span(first bytes) ->
    (start, end)`` names: ``(the reused buffer, holding the head; the span's bytes; start)``,
    or None when it does not decode to exactly ``size`` bytes. The rest passes through a small
    buffer and is dropped; libzstd holds the frame's window (8 MiB in NVIDIA's cubins), kept in
    this thread's context for the next frame."""
    import zstandard

    state = _reused.get()
    view, chunk = memoryview(state.buf), memoryview(state.scratch)
    try:
        if not (size > REUSED_MAX and zstandard.frame_content_size(data) == size):
            return None
        with state.dctx.stream_reader(data) as reader:
            pos, head = 0, min(head, REUSED_MAX)
            while pos < head and (n := reader.readinto(view[pos:head])):
                pos += n
            start, end = span(view[:pos])
            kept = bytearray()
            while pos <= size and (n := reader.readinto(chunk)):
                a, b = max(pos, start), min(pos + n, end)
                if a < b:
                    kept += chunk[a - pos : b - pos]
                pos += n
    except zstandard.ZstdError:
        return None
    finally:
        view.release()
        chunk.release()
    if pos != size:
        return None
    return state.buf, bytes(kept), max(start, head) if kept else size


def _zstd_bounded(data: bytes, expected_size: int) -> bytes:
    """Decode one zstd frame, reading at most ``expected_size + 1`` bytes of output."""
    out = bytearray()
    with _zstd_decompressor().stream_reader(data) as reader:
        while len(out) <= expected_size:
            chunk = reader.read(min(ZSTD_CHUNK, expected_size + 1 - len(out)))
            if not chunk:
                break
            out += chunk
    return bytes(out)
