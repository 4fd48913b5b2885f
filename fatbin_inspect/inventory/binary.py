"""The record of one host binary (ELF, PE/COFF, ``ar`` member), raw fatbin, standalone cubin or
PTX file: its layout read, compressed sections inflated, its fatbins found (``hidden``) and
decoded as ``Options`` ask (``decoding``), its linked CUDA libraries, static cudart and CPU.
"""

from __future__ import annotations

import dataclasses
import os

from fatbin_inspect.containers import Layout, Region, has_static_cudart, machine_of
from fatbin_inspect.containers import layout as layout_of
from fatbin_inspect.errors import CorruptError, InputError
from fatbin_inspect.formats import cubin as cubin_mod
from fatbin_inspect.formats import ptx as ptx_mod
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.formats.decompress import Budget, decode
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, Fatbin, FileReport, bare_entry
from fatbin_inspect.inventory.decoding import decode_fatbins
from fatbin_inspect.inventory.hidden import code_ranges, found_fatbins
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.record_errors import error_of


def inspect_binary(
    path: str,
    fmt: str,
    blob: Blob,
    opts: Options,
    budget: Budget | None = None,
    delegated: frozenset[tuple[int, int]] = frozenset(),
    disk: str | None = None,
) -> tuple[FileReport, Blob]:
    """The record of a host binary, raw fatbin, cubin or PTX file: fatbins walked in their
    sections, then found by magic outside them (``opts.scan_hidden``, or when no section was
    walked), then decoded as ``opts`` asks; and the bytes its offsets point into (``blob``, or
    a copy with its compressed sections inflated after its end, see ``_inflated``).
    ``delegated``: the hidden pieces of a ``HiddenSplit`` whose fatbins its slices find (not
    scanned here; ``static_cudart`` False, as the split's plan checked). ``disk``: the path of the
    file on disk ``blob`` came from, which a second process may then read too (``handoff``)."""
    if fmt in ("cubin", "ptx"):
        standalone = (_standalone_cubin(blob) if fmt == "cubin" else _standalone_ptx(blob),)
        decoded = decode_fatbins(blob, standalone, opts, budget=budget)
        return FileReport(path=path, format=fmt, size=blob.size, fatbins=tuple(decoded)), blob
    errors: list[InputError] = []
    try:
        layout = layout_of(fmt, blob)
    except InputError as exc:  # a cut download or broken section table: the bytes that exist
        errors.append(exc)  # are still magic-scanned, and the record keeps the error
        layout = Layout(fmt, (), notes=("section table unusable: fatbins found by magic scan only",))
    read, layout = _inflated(blob, layout, budget if budget is not None else Budget(blob.size))
    fatbins = found_fatbins(fmt, read, layout, opts, errors, delegated, disk)
    errors += layout.errors
    static = (
        (bool(fatbins) or fmt == "elf")  # without fatbins: a runtime without kernels (R-RT 3)
        and not delegated
        and has_static_cudart(
            read, layout.needs, [(fb.offset, fb.end) for fb in fatbins] + code_ranges(layout)
        )
    )
    # a runtime without kernels; not the cudart itself (a bundled copy: its users name it)
    own = (
        static
        and not fatbins
        and not os.path.basename(path.rsplit("!", 1)[-1]).lower().startswith("libcudart")
    )
    machine = _machine(blob, fmt)
    found = None
    if own:  # (imported here: most files link their runtime or have kernels)
        from fatbin_inspect.containers.cudart_version import static_cudart_version

        found = static_cudart_version(read, layout, machine)
    rec = FileReport(
        path=path,
        format=layout.format,
        size=blob.size,
        fatbins=tuple(decode_fatbins(read, fatbins, opts, path, toolkit_probe=static, budget=budget)),
        error=error_of(errors[0]) if errors else None,
        needs=layout.needs,
        notes=tuple(layout.notes) + _more_errors(errors),
        static_cudart=static,
        static_cudart_version=found.version if found else None,
        relocatable=fmt == "coff" or (fmt == "elf" and blob.head(18)[16:18] == b"\x01\x00"),
        machine=machine,
    )
    return rec, read


def _inflated(blob: Blob, layout: Layout, budget: Budget) -> tuple[Blob, Layout]:
    """``blob`` and ``layout`` as the fatbin walk and magic scan read them when sections are
    ``SHF_COMPRESSED`` (``containers.elf``): each compressed section that fatbins are read from is
    inflated (zlib or zstd, within ``formats.decompress``'s bounds and the input's ``budget``) into
    a copy of the file, after its end (16-aligned), and read there as the section, so every other
    offset stays the file's; its stored bytes are neither walked nor scanned. A note says where
    its fatbins' offsets start; an unknown ``ch_type``, a bomb or a stream that does not inflate
    is a note naming the section and its offset, never a silent "no device code"."""
    if not any(r.compressed is not None for r in layout.regions):
        return blob, layout
    notes, regions, pieces = list(layout.notes), [], []
    at = -(-blob.size // 16) * 16
    for r in layout.regions:
        packed = r.compressed
        if packed is None:
            regions.append(r)
            continue
        regions.append(dataclasses.replace(r, fatbin_section=False, scan=False, compressed=None))
        try:
            data = _inflate(blob, r, budget)
        except InputError as exc:
            notes.append(f"section {r.name} at {r.start:#x}: {exc.message}: its fatbins are not read")
            continue
        regions.append(dataclasses.replace(r, start=at, end=at + len(data), compressed=None))
        notes.append(
            f"section {r.name} at {r.start:#x} is {packed.method}-compressed (SHF_COMPRESSED): "
            f"{len(data):,} bytes inflated, read as if stored after the end of the file (offsets from {at:#x})"
        )
        pad = -len(data) % 16
        pieces.append(data + b"\0" * pad)
        at += len(data) + pad
    out = dataclasses.replace(layout, regions=tuple(regions), notes=tuple(notes))
    if not pieces:
        return blob, out
    whole = blob.read(0, blob.size) + b"\0" * (-blob.size % 16) + b"".join(pieces)
    return Blob(whole), out


def _inflate(blob: Blob, region: Region, budget: Budget) -> bytes:
    """The bytes of a compressed section, bounded: at most ``decompress.MAX_DECODED`` and what is
    left of the input's budget."""
    packed = region.compressed
    assert packed is not None
    if packed.ch_type < 0:
        raise CorruptError("SHF_COMPRESSED, but shorter than its compression header", region.start)
    if not packed.method:
        raise CorruptError(f"SHF_COMPRESSED with unknown ch_type {packed.ch_type}", region.start)
    try:
        budget.spend(packed.size, region.start)
        raw = blob.read(packed.data, region.end - packed.data, "compressed section")
        return decode(packed.method, raw, packed.size, region.start)
    except InputError as exc:
        raise CorruptError(
            f"{packed.method}-compressed (SHF_COMPRESSED), not inflated: {exc.message}"
        ) from None


def _more_errors(errors: list[InputError]) -> tuple[str, ...]:
    """The notes a record's first error leaves for the rest: their count, and the limits reached."""
    if len(errors) <= 1:
        return ()
    kept = [e.message for e in errors[1:] if e.message.endswith("not kept")]  # fatbin.MAX_ERRORS
    return (f"{len(errors) - 1} more fatbin errors after the first", *kept)


def _machine(blob: Blob, fmt: str) -> str | None:
    """R-HOST's fact: the CPU the host binary is built for (``containers.machine_of``)."""
    if fmt not in ("elf", "pe", "coff"):
        return None
    head = blob.head(64)
    if fmt == "pe" and len(head) == 64:
        head = blob.head(min(int.from_bytes(head[60:64], "little"), 1 << 16) + 8)
    return machine_of(head)


def _standalone_cubin(blob: Blob) -> Fatbin:
    data = blob.read(0, blob.size)
    info, _ = cubin_mod.parse_cubin(data)
    variant = "a" if info.arch_specific and info.sm >= 90 else ""
    entry = bare_entry(KIND_SASS, info.sm, variant, blob.size, (1, info.elf_abi), cubin=info)
    return Fatbin(offset=0, size=blob.size, section=None, entries=(entry,), found_by="file")


STANDALONE_HEAD = 1 << 20  # what a standalone PTX file's header is parsed from (a 1 GiB .ptx is not copied)


def _standalone_ptx(blob: Blob) -> Fatbin:
    hdr = ptx_mod.parse_header(blob.head(STANDALONE_HEAD))
    sm, variant = ptx_mod.target_arch(hdr.target) if hdr.target else (0, "")
    entry = bare_entry(KIND_PTX, sm, variant, blob.size, hdr.version, ptx_target=hdr.target)
    return Fatbin(offset=0, size=blob.size, section=None, entries=(entry,), found_by="file")
