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

import time
import zlib

from fatbin_inspect.errors import BudgetExceeded, CorruptError, LimitExceeded

MAX_DECODED = 256 << 20  # 256 MiB: no real entry comes near (largest seen: a few MB)
MAX_FILE_RATIO = 1000  # decoded bytes per input byte, per file, beyond one MAX_DECODED entry
INPUT_SECONDS = 600.0  # wall-clock time one top-level input may take (the largest real wheel: ~30 s)
LZ4_MAX_RATIO = 255
ZSTD_CHUNK = 4 << 20

_zstd = None


def _zstd_decompressor():
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
