"""One fatbin entry's payload: its stored bytes read and inflated (``payload``), and a SASS or PTX
entry decoded into the facts its image holds (``decode_entry``: the cubin's ABI, toolkit and
kernels, the PTX target and kernels). Each file's ``Budget`` bounds what its entries inflate to.
``kernel_names`` reads a record's bytes again to name the kernels of some of its fatbins.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import mmap
import os
from collections.abc import Iterable, Iterator

from fatbin_inspect.containers import detect
from fatbin_inspect.errors import InputError, NotLoaded
from fatbin_inspect.formats import cubin as cubin_mod
from fatbin_inspect.formats import ptx as ptx_mod
from fatbin_inspect.formats.binio import Blob, open_blob
from fatbin_inspect.formats.decompress import MAX_DECODED, Budget, decode, zstd_parts, zstd_reused
from fatbin_inspect.formats.demangle import demangle
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, KIND_TILE, CubinInfo, Entry, FileReport, Kernel
from fatbin_inspect.inventory import member_path


def payload(blob: Blob, entry: Entry, budget: Budget | None = None) -> bytes:
    """The entry's image, decompressed (LTO-IR is opaque and returned as stored)."""
    raw = _stored(blob, entry, budget)
    if entry.kind not in (KIND_SASS, KIND_PTX, KIND_TILE):  # Tile IR is zstd/LZ4-compressed like PTX
        return raw
    return decode(entry.compression, raw, entry.size, entry.offset)


def _stored(blob: Blob, entry: Entry, budget: Budget | None) -> bytes:
    raw = blob.read(entry.payload_offset, entry.stored_size, "entry payload")
    _charge(entry, budget)
    return raw


def _charge(entry: Entry, budget: Budget | None) -> None:
    """Count what a compressed entry that is decoded inflates to against its file's budget."""
    if budget is not None and entry.compression != "none" and entry.kind in (KIND_SASS, KIND_PTX, KIND_TILE):
        budget.spend(entry.size, entry.offset)


def _parsed_cubin(
    blob: Blob, entry: Entry, kernels: bool, resources: bool, budget: Budget | None
) -> tuple[CubinInfo, tuple[Kernel, ...] | None]:
    """``parse_cubin`` of a SASS entry. A zstd one is decoded into a reused buffer
    (``zstd_reused``), one larger than that into a ``SparseImage`` (``docs/format.md`` §2.5):
    a worker decoding libtorch_cuda.so held its largest cubin whole (41 MB), and now 8 MB of
    it. What these cannot answer as the whole image would (another layout, a frame that does
    not decode) is decoded and parsed whole, so the record is the same either way. The frame
    is decoded from the mapping itself (``Blob.window``), not from a copy of it (libtorch_cuda.so:
    332 MB of frames; the copies were ~2 % of a ``--kernels`` decode's CPU profile)."""
    if entry.compression == "zstd" and entry.size <= MAX_DECODED:
        with blob.window(entry.payload_offset, entry.stored_size, "entry payload") as frame:
            _charge(entry, budget)
            return _parsed_zstd(frame, entry, kernels, resources)
    data = decode(entry.compression, _stored(blob, entry, budget), entry.size, entry.offset)
    return cubin_mod.parse_cubin(data, kernels=kernels, resources=resources, demangle=demangle)


def _parsed_zstd(
    frame: memoryview, entry: Entry, kernels: bool, resources: bool
) -> tuple[CubinInfo, tuple[Kernel, ...] | None]:
    """``_parsed_cubin`` of a zstd ``frame`` (a view it must not keep)."""
    if (buf := zstd_reused(frame, entry.size)) is not None:
        return cubin_mod.parse_cubin(buf, kernels, resources, demangle, entry.size)
    span = functools.partial(cubin_mod.table_span, size=entry.size)
    parts = zstd_parts(frame, entry.size, cubin_mod.SPARSE_PREFIX, span)
    if parts is not None:
        img = cubin_mod.SparseImage(parts[0], cubin_mod.SPARSE_PREFIX, parts[1], parts[2], entry.size)
        with contextlib.suppress(NotLoaded):
            return cubin_mod.parse_cubin(img, kernels, resources, demangle)
    data = decode(entry.compression, bytes(frame), entry.size, entry.offset)
    return cubin_mod.parse_cubin(data, kernels=kernels, resources=resources, demangle=demangle)


def decode_entry(
    blob: Blob, entry: Entry, kernels: bool, resources: bool = True, budget: Budget | None = None
) -> Entry:
    """Fill ``cubin``/``kernels``/``ptx_target`` from the payload; a failure is ``decode_error``.
    ``budget`` (one per file) bounds the bytes all its compressed entries may inflate to."""
    if entry.kind not in (KIND_SASS, KIND_PTX):
        return entry
    try:
        if entry.kind == KIND_SASS:
            info, ks = _parsed_cubin(blob, entry, kernels, resources, budget)
            if info.sm != entry.sm and entry.header_size:
                raise InputError(
                    f"cubin e_flags say sm_{info.sm}, fatbin header says sm_{entry.sm}", entry.offset
                )
            return dataclasses.replace(entry, cubin=info, kernels=ks)
        data = _mapped_text(blob, entry) or payload(blob, entry, budget)
        hdr = ptx_mod.parse_header(data)
        ks = _demangled(ptx_mod.kernels(data)) if kernels else None
        return dataclasses.replace(entry, ptx_target=hdr.target, kernels=ks)
    except InputError as exc:
        return dataclasses.replace(entry, decode_error=str(exc))
    except Exception as exc:  # pragma: no cover - parser bug on hostile bytes
        return dataclasses.replace(entry, decode_error=f"internal error: {exc}")


def _mapped_text(blob: Blob, entry: Entry) -> mmap.mmap | None:
    """A standalone PTX file's own mapping (searched in place, not copied), or None."""
    buf = blob.buf
    whole = blob.base == 0 and entry.payload_offset == 0 and entry.stored_size == len(buf)
    if entry.kind == KIND_PTX and entry.compression == "none" and isinstance(buf, mmap.mmap) and whole:
        return buf
    return None


def _demangled(ks: tuple[Kernel, ...]) -> tuple[Kernel, ...]:
    # the constructor, not dataclasses.replace: ~100k kernels in one large library
    return tuple(
        Kernel(k.name, demangle(k.name), k.registers, k.shared, k.constant0, k.max_threads, k.local)
        for k in ks
    )


def kernel_names(report: FileReport, offsets: Iterable[int]) -> dict[int, list[str]] | None:
    """The kernel names of ``report``'s fatbins at ``offsets``, decoded from their payloads (kernel
    names only) read again from where the record came from: a file on disk, or a member of a zip
    (a wheel) on disk, that member alone inflated. None when the record's bytes cannot be had that
    way (a member of a member, of a tar or an image); a fatbin with an entry that does not decode
    is left out (not known)."""
    blob = _record_blob(report.path)
    if blob is None:
        return None
    wanted = set(offsets)
    decoded = {
        fb.offset: [decode_entry(blob, e, kernels=True, resources=False) for e in fb.entries]
        for fb in report.fatbins
        if fb.offset in wanted
    }
    return {
        offset: [k.name for e in entries for k in e.kernels or ()]
        for offset, entries in decoded.items()
        if not any(e.decode_error for e in entries)
    }


def entry_images(report: FileReport, offsets: Iterable[int]) -> Iterator[tuple[int, bytes]]:
    """(offset, decompressed image) of ``report``'s entries at ``offsets``, one at a time (one
    budget for the record), read again from where the record came from, as ``kernel_names``
    reads them. Nothing when the record's bytes cannot be had that way; an image that does not
    decode is left out (the listing already said what is wrong with it)."""
    blob = _record_blob(report.path)
    if blob is None:
        return
    wanted, budget = set(offsets), Budget(blob.size)
    for fb in report.fatbins:
        for e in fb.entries:
            if e.offset in wanted:
                try:
                    image = payload(blob, e, budget)
                except InputError:
                    continue
                yield e.offset, image


def _record_blob(path: str) -> Blob | None:
    """The bytes the record at ``path`` was read from: a file on disk, or a member of a zip on
    disk (``zip_member_blob``); None for anything else."""
    names = member_path.split(path)
    if len(names) == 2 and os.path.isfile(names[0]):
        return zip_member_blob(names[0], names[1])
    if len(names) != 1 or not os.path.isfile(path):
        return None
    try:
        return open_blob(path)
    except InputError:
        return None


def zip_member_blob(path: str, name: str) -> Blob | None:
    """The bytes of the member ``name`` of the zip (a wheel) on disk at ``path``, that member
    alone inflated (within the usual member bounds); None when the file is no zip, the member is
    not there or does not inflate. What the judging reads to name a member's kernels when only
    some of its fatbins need decoding (``kernel_names``)."""
    from fatbin_inspect.containers import archives

    try:
        blob = open_blob(path)
        if detect(blob.head(512)) != "zip":
            return None
        zf = archives.open_zip(blob.stream())
        infos = zf.infolist()
        index = archives.zip_index(infos, name)
        if index is None:
            return None
        for m in archives.zip_members(blob, all_members=True, span=(index, index + 1), zf=zf):
            return m.blob if m.error is None else None
    except InputError:
        return None
    return None
