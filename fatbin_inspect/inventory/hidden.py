"""Where a binary's fatbins are: walked strictly in its fatbin sections, then found by a
validated magic scan in the other data sections and the bytes no section covers (the hidden
fatbins of cuBLASLt's ``.cask_resource``, cuFFT's ``.ldata``: docs/format.md §1.4). The largest
hidden pieces may be scanned by a second process meanwhile (``handoff``). ``magic_ranges`` tells
a scan where any fatbin of a file may be.
"""

from __future__ import annotations

from collections.abc import Iterator

from fatbin_inspect.containers import Layout, detect
from fatbin_inspect.containers import layout as layout_of
from fatbin_inspect.errors import InputError
from fatbin_inspect.formats import fatbin as fatbin_mod
from fatbin_inspect.formats import mapguard
from fatbin_inspect.formats.binio import Blob, gaps, open_blob
from fatbin_inspect.formats.model import Fatbin
from fatbin_inspect.inventory import handoff
from fatbin_inspect.inventory.handoff import Piece, Scanned
from fatbin_inspect.inventory.options import Options


def found_fatbins(
    fmt: str,
    blob: Blob,
    layout: Layout,
    opts: Options,
    errors: list[InputError],
    delegated: frozenset[tuple[int, int]] = frozenset(),
    disk: str | None = None,
) -> list[Fatbin]:
    """The fatbins of a binary in file order, each once (several headers may point at one):
    walked strictly in the fatbin sections (a raw fatbin file: all of it), then magic-scanned in
    the other data sections and the bytes no section covers. Errors are appended to ``errors``,
    in that order. ``disk``: the file ``blob`` came from, whose largest hidden pieces a second
    process may scan meanwhile (``handoff.handed_off``; each piece is scanned whole from its start
    either way)."""
    sections = fatbin_ranges(layout)
    walked = [(a, b) for a, b, _ in sections]
    hidden: list[Piece] = []
    if fmt != "fatbin" and (opts.scan_hidden or not sections):
        hidden = [p for p in hidden_pieces(blob, layout, walked) if p[:2] not in delegated]
    with handoff.handed_off(disk, blob, hidden, sum(b - a for a, b in walked), opts, _scan_pieces) as away:
        fatbins: list[Fatbin] = []
        for start, end, name in sections:  # overlapping section headers: each byte walked once
            found, errs = fatbin_mod.walk(blob, start, end, name, strict=True)
            blob.release(start, end)
            fatbins += found
            errors += errs
        if fmt == "fatbin":
            found, errs = fatbin_mod.walk(blob, 0, blob.size, None, strict=True)
            fatbins += found
            errors += errs
        scanned = {i: _scan_piece(blob, piece) for i, piece in enumerate(hidden) if i not in away}
        scanned.update(away.results(lambda i: _scan_piece(blob, hidden[i])))
    for i in range(len(hidden)):
        found, errs = scanned[i]
        fatbins += found
        errors += errs
    fatbins = list({fb.offset: fb for fb in fatbins}.values())  # headers pointing at one fatbin
    fatbins.sort(key=lambda fb: fb.offset)
    return fatbins


def _scan_piece(blob: Blob, piece: Piece) -> Scanned:
    """The fatbins the magic scan finds in one hidden piece, and its errors (limits reached)."""
    errors: list[InputError] = []
    found = [fb for chunk in scan_chunks(blob, *piece, errors) for fb in chunk]
    return found, errors


def fatbin_ranges(layout: Layout) -> list[Piece]:
    """The fatbin sections, overlapping ones merged (each byte walked once)."""
    return _union([(r.start, r.end, r.name) for r in layout.regions if r.fatbin_section])


def hidden_pieces(blob: Blob, layout: Layout, walked: list[tuple[int, int]]) -> list[Piece]:
    """The ``(start, end, section)`` pieces the magic scan reads, in file order: the data
    sections and the bytes no section covers, less the ``walked`` fatbin sections."""
    scannable: list[Piece] = [
        (r.start, r.end, r.name) for r in layout.regions if r.scan and not r.fatbin_section
    ]
    outside: list[Piece] = [
        (a, b, None) for a, b in gaps([(r.start, r.end) for r in layout.regions], blob.size)
    ]
    return [
        (a, b, name) for start, end, name in _union(scannable + outside) for a, b in gaps(walked, end, start)
    ]


SCAN_CHUNK = fatbin_mod.RELEASE_EVERY  # (64 MB: a scan worker held 57-64 MB of libcublasLt.so.13's pages)


def scan_chunks(
    blob: Blob, start: int, end: int, section: str | None, errors: list[InputError], until: int | None = None
) -> Iterator[list[Fatbin]]:
    """Magic-scan ``[start, end)`` a chunk at a time (the fatbins starting before ``until``, when
    given); a fatbin may run past its chunk (it is bounded by ``end``). As ``fatbin.walk`` looks
    at every magic before its end, the chunks' sizes do not change what is found. Pages already scanned are dropped from this process's resident set
    (``MADV_DONTNEED`` on a read-only file mapping only unmaps them; the page cache keeps them), so
    resident memory does not grow with the file size. A scan's only errors are limits reached."""
    pos, until = start, end if until is None else until
    while pos < until:
        stop = min(until, pos + SCAN_CHUNK)
        found, errs = fatbin_mod.walk(blob, pos, stop, section, strict=False, found_by="scan", limit=end)
        errors += errs
        yield found
        nxt = max([stop] + [fb.end for fb in found])
        blob.release(pos, nxt)
        pos = nxt


def _scan_pieces(path: str, size: int, pieces: list[Piece]) -> list[Scanned] | None:
    """``handoff.HandOff``'s child: ``_scan_piece`` of each of ``pieces`` of the file at ``path``; None
    when it is no longer ``size`` bytes or shrank while it was read."""
    blob = open_blob(path)
    if blob.size != size:
        return None
    before = mapguard.faults()
    out = [_scan_piece(blob, piece) for piece in pieces]
    return out if mapguard.faults() == before else None


def magic_ranges(fmt: str, blob: Blob) -> list[tuple[int, int]] | None:
    """The byte ranges where ``binary.inspect_binary`` may find a fatbin: all but the code and linker
    tables of an ELF or PE/COFF file whose section table reads (the whole blob for other
    formats), its fatbin sections first: a search for any magic mostly ends in the first bytes
    there (libcublasLt.so.13 has 44 MB of ``.rodata`` before its ``.nv_fatbin``; over the six
    extracted wheels 131 MB were searched, now 36 MB). None: a section fatbins are read from is
    compressed (no magic shows in it), or the section table does not read (a cut download: its
    record carries the error, never "no device code"), so only reading the file tells."""
    if fmt == "ar":
        return None if _ar_compressed(blob) else [(0, blob.size)]
    layout = plain_layout(fmt, blob)
    if layout is None:
        return None
    code = code_ranges(layout)
    walked = [(a, b) for a, b, _ in fatbin_ranges(layout)]
    first = [(a, b) for start, end in walked for a, b in gaps(code, end, start)]
    return first + [(a, b) for start, end in gaps(code, blob.size) for a, b in gaps(walked, end, start)]


def plain_layout(fmt: str, blob: Blob) -> Layout | None:
    """The host binary's sections, or None where only reading the whole file tells what it holds:
    a section is compressed (no magic shows in it), or the section table does not read."""
    try:
        layout = layout_of(fmt, blob)
    except InputError:
        return None
    return None if any(r.compressed is not None for r in layout.regions) else layout


def _ar_compressed(blob: Blob) -> bool:
    """An ``ar`` member is an ELF object with a compressed section fatbins are read from (its
    members are windows into the archive: nothing is copied)."""
    from fatbin_inspect.containers import archives

    try:
        for m in archives.ar_members(blob):
            if m.blob is None or detect(m.blob.head(512)) != "elf":
                continue
            try:
                if any(r.compressed is not None for r in layout_of("elf", m.blob).regions):
                    return True
            except InputError:
                continue
    except InputError:
        return False
    return False


def code_ranges(layout: Layout) -> list[tuple[int, int]]:
    """Code and linker tables: no fatbin is found there, nor a host string."""
    return [(r.start, r.end) for r in layout.regions if not r.scan and not r.fatbin_section]


def _union(ranges: list[Piece]) -> list[Piece]:
    """Overlapping ``(start, end, name)`` ranges merged (named after the first): 4,096 section
    headers over the same bytes are scanned once, not 4,096 times."""
    out: list[Piece] = []
    for start, end, name in sorted(ranges, key=lambda r: (r[0], -r[1])):
        if out and start < out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end, out[-1][2])
            continue
        out.append((start, end, name))
    return out
