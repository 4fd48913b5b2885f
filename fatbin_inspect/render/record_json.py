"""Records -> JSON: plain dicts (``file_dict``, ``entry_dict`` ...: the contract of
``inventory.schema.json``, whose field names are fixed and only ever added to) and the same
texts written faster from the records (``entry_pretty``, ``fatbin_compact``, ``kernels_json``).
Below the documents that hold them (``inventory_json``, ``scan_json``) and ``record_pieces``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from json.encoder import encode_basestring_ascii as _str_json  # json.dumps' own (C)
from typing import Any

from fatbin_inspect.formats.model import CubinInfo, Entry, Fatbin, FileReport, Kernel, Package
from fatbin_inspect.formats.records import as_dict
from fatbin_inspect.render.escape import hex_if_not_utf8, utf8, utf8_json
from fatbin_inspect.render.json_encode import COMPACT, pretty


def kernel_dict(k: Kernel) -> dict[str, Any]:
    d: dict[str, Any] = {"name": k.name, "demangled": k.demangled}
    if k.registers is not None:
        d["registers"] = k.registers
    if k.shared is not None:
        d["shared"] = k.shared
    if k.constant0 is not None:
        d["constant0"] = k.constant0
    if k.local is not None:
        d["local"] = k.local
    if k.max_threads is not None:
        d["max_threads"] = list(k.max_threads)
    return d


# a kernel's name recurs in its fatbin's cubins, one per architecture (libtorch_cuda.so: 145k
# kernels, 23k names): each name's '{"name":...,"demangled":...' encoded once (the two strings
# were a quarter of the encoding). Emptied when full: 512 names, ~0.6 MB a worker, answer 74 % of
# libtorch_cuda.so's kernels (2,048: 83 %, but +4 MB of the process tree's peak)
_heads: dict[str, tuple[str | None, str]] = {}
HEADS_MAX = 512


def kernels_json(kernels: tuple[Kernel, ...]) -> str:
    """``json.dumps([kernel_dict(k) for k in kernels], separators=(",", ":"))``, byte for byte,
    faster: written with the C string encoder ``json.dumps`` uses, without a dict per kernel,
    each name and its demangled form encoded once, the most of
    ``list --kernels --format json``'s encoding. A kernel with every field and a 3-value
    ``max_threads`` is one f-string, as one without it (one f-string is faster than building
    the pieces). The text is already
    ``escape.utf8_json``'s: each name's head passes through it when encoded (a scan of the
    whole text after was 2.6 % of ``list --kernels --format json``'s CPU on libtorch_cuda.so).
    Each field written as ``kernel_dict`` writes it: tests/formats/test_cubin_fast_paths.py compares
    the two."""
    return "".join(kernels_json_pieces(kernels))


KERNELS_PER_PIECE = 256  # (~230 KB of libtorch_cuda.so's text)


def kernels_json_pieces(kernels: tuple[Kernel, ...]) -> Iterator[str]:
    """``kernels_json(kernels)`` in pieces of ``KERNELS_PER_PIECE`` kernels, each cut between
    two kernels (so ``escape.utf8_json`` of each is that of the whole), made as they are taken.
    Whole, an entry of 4,320 kernels was ~4 MB of text held three times over (the kernels'
    strings, their join, its bytes): most of what a worker of ``list --kernels`` freed in a
    slice and ``workers.trim_heap`` gave back, to be faulted in again."""
    if not kernels:
        yield "[]"
        return
    n = len(kernels)
    for lo in range(0, n, KERNELS_PER_PIECE):
        out = _kernel_texts(kernels[lo : lo + KERNELS_PER_PIECE])
        out[0] = ("," if lo else "[") + out[0]  # (each piece's text is copied once, by the join)
        if lo + KERNELS_PER_PIECE >= n:
            out[-1] += "]"
        yield ",".join(out)


def _kernel_texts(kernels: tuple[Kernel, ...]) -> list[str]:
    """Each kernel's ``kernel_dict`` as compact JSON text (``kernels_json``)."""
    out: list[str] = []
    put, heads = out.append, _heads
    for k in kernels:  # (f-strings: one copy of the text; `+` copied each partial string again)
        dm, r, sh, c, lo, mt = k.demangled, k.registers, k.shared, k.constant0, k.local, k.max_threads
        known = heads.get(k.name)
        if known is not None and known[0] == dm:
            head = known[1]
        else:
            head = f'{{"name":{_str_json(k.name)},"demangled":{"null" if dm is None else _str_json(dm)}'
            if "\\udc" in head:  # (a name's only strings: the rest of a kernel's text is digits)
                head = utf8_json(head)
            if len(heads) >= HEADS_MAX:
                heads.clear()
            heads[k.name] = (dm, head)
        if r is not None and sh is not None and c is not None and lo is not None:
            if mt is None:
                put(f'{head},"registers":{r},"shared":{sh},"constant0":{c},"local":{lo}}}')
                continue
            if len(mt) == 3:  # (the parser's record: 74 % of libtorch_cuda.so's kernels)
                x, y, z = mt
                put(
                    f'{head},"registers":{r},"shared":{sh},"constant0":{c},"local":{lo},"max_threads":[{x},{y},{z}]}}'
                )
                continue
        parts = [head]
        if r is not None:
            parts.append(f',"registers":{r}')
        if sh is not None:
            parts.append(f',"shared":{sh}')
        if c is not None:
            parts.append(f',"constant0":{c}')
        if lo is not None:
            parts.append(f',"local":{lo}')
        if mt is not None:
            parts.append(',"max_threads":[' + ",".join(map(int.__repr__, mt)) + "]")
        parts.append("}")
        put("".join(parts))
    return out


def cubin_dict(c: CubinInfo | None) -> dict[str, Any] | None:
    return None if c is None else as_dict(c)


def entry_dict(e: Entry, with_kernels: bool = True) -> dict[str, Any]:
    """``with_kernels=False``: ``"kernels"`` is null, as for an entry without them."""
    return {
        "offset": e.offset,
        "kind": e.kind,
        "arch": e.arch,
        "sm": e.sm,
        "variant": e.variant or None,
        "compression": e.compression,
        "stored_size": e.stored_size,
        "size": e.size,
        "ptx_isa": e.ptx_isa,
        "tile_ir_version": e.tile_ir_version,
        "code_version": list(e.code_version),
        "elf_abi": e.code_version[1] if e.kind == "sass" else None,
        "relocatable_ptx": e.relocatable_ptx,
        "host": e.host,
        "debug": e.debug,
        "identifier": e.identifier,
        "options": e.options,
        "flags": e.flags,
        "cubin": cubin_dict(e.cubin),
        "ptx_target": e.ptx_target,
        "decode_error": e.decode_error,
        "kernels": None if e.kernels is None or not with_kernels else [kernel_dict(k) for k in e.kernels],
    }


def entry_pretty(e: Entry, ind: str) -> str | None:
    """``json_encode.pretty(entry_dict(e))`` at the depth whose keys' lines start with ``ind`` (a
    newline and spaces), byte for byte, before ``escape.utf8_json``; None for an entry with a
    decoded cubin or kernels (left to ``pretty``). One f-string per entry: much faster than the
    dict and the general encoder (a scan's cold JSON of the six wheels' 37,500 entries was as
    much CPU as parsing them). Each field written as ``entry_dict`` writes it:
    tests/render/test_render_fast_paths.py compares the two."""
    if e.cubin is not None or e.kernels is not None:
        return None
    cv, v = e.code_version, e.variant
    cvi = ind + "  "
    return (
        f'{{{ind}"offset": {e.offset},{ind}"kind": {_str_json(e.kind)},{ind}"arch": {_str_json(e.arch)},'
        f'{ind}"sm": {e.sm},{ind}"variant": {_str_json(v) if v else "null"},'
        f'{ind}"compression": {_str_json(e.compression)},{ind}"stored_size": {e.stored_size},'
        f'{ind}"size": {e.size},{ind}"ptx_isa": {_opt_str(e.ptx_isa)},'
        f'{ind}"tile_ir_version": {_opt_str(e.tile_ir_version)},'
        f'{ind}"code_version": [{cvi}{cv[0]},{cvi}{cv[1]}{ind}],'
        f'{ind}"elf_abi": {cv[1] if e.kind == "sass" else "null"},'
        f'{ind}"relocatable_ptx": {"true" if e.relocatable_ptx else "false"},'
        f'{ind}"host": {_opt_str(e.host)},{ind}"debug": {"true" if e.debug else "false"},'
        f'{ind}"identifier": {_opt_str(e.identifier)},{ind}"options": {_opt_str(e.options)},'
        f'{ind}"flags": {e.flags},{ind}"cubin": null,{ind}"ptx_target": {_opt_str(e.ptx_target)},'
        f'{ind}"decode_error": {_opt_str(e.decode_error)},{ind}"kernels": null{ind[:-2]}}}'
    )


def entry_compact(e: Entry) -> str | None:
    """``json.dumps(entry_dict(e), separators=(",", ":"))``, byte for byte, before
    ``escape.utf8_json``; None for an entry with a decoded cubin or kernels. ``entry_pretty``
    without the indentation: a large listing is written compact (``list --format json`` of
    libcublasLt.so.13's 6,120 entries: its dicts and ``json.dumps`` were a quarter of the run).
    Its own f-string, not ``entry_pretty``'s with the separators as values: that one template
    was 15 % (pretty) and 40 % (compact) slower per entry. tests/render/test_render_fast_paths.py
    compares the two."""
    if e.cubin is not None or e.kernels is not None:
        return None
    cv, v = e.code_version, e.variant
    return (
        f'{{"offset":{e.offset},"kind":{_str_json(e.kind)},"arch":{_str_json(e.arch)},"sm":{e.sm},'
        f'"variant":{_str_json(v) if v else "null"},"compression":{_str_json(e.compression)},'
        f'"stored_size":{e.stored_size},"size":{e.size},"ptx_isa":{_opt_str(e.ptx_isa)},'
        f'"tile_ir_version":{_opt_str(e.tile_ir_version)},"code_version":[{cv[0]},{cv[1]}],'
        f'"elf_abi":{cv[1] if e.kind == "sass" else "null"},'
        f'"relocatable_ptx":{"true" if e.relocatable_ptx else "false"},"host":{_opt_str(e.host)},'
        f'"debug":{"true" if e.debug else "false"},"identifier":{_opt_str(e.identifier)},'
        f'"options":{_opt_str(e.options)},"flags":{e.flags},"cubin":null,'
        f'"ptx_target":{_opt_str(e.ptx_target)},"decode_error":{_opt_str(e.decode_error)},"kernels":null}}'
    )


def _opt_str(s: str | None) -> str:
    return "null" if s is None else _str_json(s)


_FATBIN_LEAD = ("section", "offset", "size", "found_by")  # then the other fields: entries
FATBIN_PRETTY_FIELDS = (*_FATBIN_LEAD, "entries")  # the fields fatbin_pretty writes, by name


def writes_fields(fatbins: Sequence[Fatbin]) -> bool:
    """``fatbin_pretty`` and ``fatbin_compact`` write every field of these records (none of a
    future field is dropped; else the general path writes them)."""
    return {f.name for f in dataclasses.fields(fatbins[0])} == set(FATBIN_PRETTY_FIELDS)


def fatbin_pretty(fb: Fatbin, ind: str) -> str:
    """``json_encode.pretty(fatbin_dict(fb))`` at the depth whose keys' lines start with ``ind``,
    before ``escape.utf8_json``, when the record's fields are ``FATBIN_PRETTY_FIELDS`` (the
    caller checks); each entry by ``entry_pretty``, else by ``pretty`` of its dict."""
    ei = ind + "  "
    texts = [entry_pretty(e, ei + "  ") or pretty(entry_dict(e), len(ei) // 2) for e in fb.entries]
    return _fatbin_text(fb, ind, ": ", "[" + ei + ("," + ei).join(texts) + ind + "]" if texts else "[]")


def fatbin_compact(fb: Fatbin) -> str:
    """``json.dumps(fatbin_dict(fb), separators=(",", ":"))`` before ``escape.utf8_json``, when
    the record's fields are ``FATBIN_PRETTY_FIELDS`` (the caller checks); each entry by
    ``entry_compact``, else by ``json.dumps`` of its dict."""
    entries = ",".join(entry_compact(e) or json.dumps(entry_dict(e), separators=COMPACT) for e in fb.entries)
    return _fatbin_text(fb, "", ":", "[" + entries + "]")


def _fatbin_text(fb: Fatbin, ind: str, colon: str, entries: str) -> str:
    """A fatbin's record around its ``entries`` text: ``fatbin_pretty``'s (``ind`` a newline and
    spaces, ``colon`` ": ") and ``fatbin_compact``'s (both "") framing, one per fatbin."""
    section = "null" if fb.section is None else _str_json(fb.section)
    return (
        f'{{{ind}"section"{colon}{section},{ind}"offset"{colon}{fb.offset},{ind}"size"{colon}{fb.size},'
        f'{ind}"found_by"{colon}{_str_json(fb.found_by)},{ind}"entries"{colon}{entries}{ind[:-2]}}}'
    )


def fatbin_dict(fb: Fatbin) -> dict[str, Any]:
    return as_dict(fb, lead=_FATBIN_LEAD, convert={"entries": _entry_dicts})


def _entry_dicts(entries: tuple[Entry, ...]) -> list[dict[str, Any]]:
    return [entry_dict(e) for e in entries]


def file_dict(r: FileReport) -> dict[str, Any]:
    raw = hex_if_not_utf8(r.path)
    d: dict[str, Any] = {"path": r.path if raw is None else utf8(r.path)}
    if raw is not None:  # the path's exact bytes, hex, where "path" shows U+FFFD for some
        d["path_bytes"] = raw
    d.update(
        format=r.format,
        size=r.size,
        distribution=r.distribution,
        error=None if r.error is None else as_dict(r.error),
        needs=list(r.needs),
        machine=r.machine,
        notes=list(r.notes),
        package=package_dict(r.package),
        fatbins=[fatbin_dict(fb) for fb in r.fatbins],
    )
    return d


def package_dict(p: Package | None) -> dict[str, Any] | None:
    return None if p is None else dataclasses.asdict(p)
