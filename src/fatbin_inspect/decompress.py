"""Bounded decoding of fatbin entry payloads (FORMAT.md §2.6).

LZ4 entries are a raw LZ4 *block* (no frame) and must be cut to ``compressed_size`` first: the
payload is zero-padded to 8 and the padding breaks the block decoder. Zstandard entries are
frames with the content size present. The declared uncompressed size is checked against
``MAX_DECODED`` before anything is allocated, and the result must have exactly that size.
"""

from __future__ import annotations

from fatbin_inspect.errors import CorruptError, LimitExceeded

MAX_DECODED = 256 << 20  # 256 MiB: no real entry comes near (largest seen: a few MB)

_zstd = None


def _zstd_decompressor():
    global _zstd
    if _zstd is None:
        import zstandard

        _zstd = zstandard.ZstdDecompressor()
    return _zstd


def decode(method: str, data: bytes, expected_size: int, offset: int = None,
           limit: int = MAX_DECODED) -> bytes:
    """Decode ``data`` with ``method`` ('lz4'|'zstd'|'none') to exactly ``expected_size`` bytes."""
    if method == "none":
        return data
    if expected_size <= 0:
        raise CorruptError(f"{method} entry declares uncompressed size {expected_size}", offset)
    if expected_size > limit:
        raise LimitExceeded(
            f"{method} entry declares {expected_size} uncompressed bytes, over the {limit}-byte limit",
            offset,
        )
    try:
        if method == "lz4":
            import lz4.block

            out = lz4.block.decompress(data, uncompressed_size=expected_size)
        elif method == "zstd":
            import zstandard

            declared = zstandard.frame_content_size(data)
            if declared > expected_size:  # -1 (absent) is fine: max_output_size bounds it
                raise CorruptError(
                    f"zstd frame declares {declared} bytes, entry header says {expected_size}", offset
                )
            out = _zstd_decompressor().decompress(data, max_output_size=expected_size)
        else:
            raise CorruptError(f"unknown compression {method!r}", offset)
    except (CorruptError, LimitExceeded):
        raise
    except Exception as exc:  # lz4.block.LZ4BlockError, zstandard.ZstdError, MemoryError
        raise CorruptError(f"{method} payload does not decode: {exc}", offset) from None
    if len(out) != expected_size:
        raise CorruptError(
            f"{method} payload decoded to {len(out)} bytes, header says {expected_size}", offset
        )
    return out
