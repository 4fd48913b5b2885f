"""How a large zip on disk (a 500 MB wheel) is cut into work units of its members: the size that
makes a split worth it, the least a unit inflates to, and the cut itself (``zip_spans``).

Cheap to import (no parser, no zipfile until a zip is planned): the scanner's warm path reads its
constants.
"""

from __future__ import annotations

from fatbin_inspect.errors import InputError

# a zip this large is inspected by worker processes, each inflating about 1/(2 jobs) of its
# candidate members (at least SPAN_BYTES) straight into the parsers; the records are put together
# again in member order (the same records as one walk)
SPLIT_BYTES = 64 << 20
SPAN_BYTES = 32 << 20


def zip_spans(path: str, all_members: bool, parts: int, min_bytes: int) -> list[tuple[int, int, int]] | None:
    """Split a zip on disk (a large wheel) into about ``parts`` work units for ``reader.inspect_zip_span``:
    contiguous ``(start, stop, inflated bytes)`` ranges of central-directory indices covering it all, cut between
    wanted members so that each holds about ``1/parts`` of their inflated bytes and at least
    ``min_bytes``; a member larger than that is a unit of its own. None: not worth splitting, or
    the directory is unreadable (the whole-file path then reports that as it always has)."""
    from fatbin_inspect.containers import archives

    try:
        with archives.open_zip(path) as zf:
            infos = zf.infolist()
    except (InputError, OSError):
        return None
    wanted = [(i, info.file_size) for i, info in enumerate(infos) if archives.zip_wanted(info, all_members)]
    total = sum(size for _, size in wanted)
    target = max(min_bytes, total // max(1, parts))
    spans, start, acc = [], 0, 0
    for i, size in wanted:
        if acc >= min_bytes and acc + size > target:
            spans.append((start, i, acc))
            start, acc = i, 0
        acc += size
    spans.append((start, len(infos), acc))
    return spans if len(spans) > 1 else None
