"""The inventory JSON's fast paths (issue 26, row 2) write what the general path writes: a file's
pretty text built from its records (``record_pieces.file_pretty``, ``record_json.entry_pretty``)
equals ``jsondump.pretty`` of ``file_dict``, byte for byte, on generated records whose strings
hold quotes, backslashes, control and non-ASCII characters and undecodable bytes (lone
surrogates), whose optional fields are None, and whose entries have a decoded cubin or kernels
(those go to the general path)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fatbin_inspect.formats.model import CubinInfo, Entry, Fatbin, FileError, FileReport, Kernel, Package
from fatbin_inspect.render import jsondump, record_json, record_pieces
from fatbin_inspect.render.record_json import entry_compact, entry_dict, entry_pretty, file_dict

# strings as file names and header fields hold them: os.fsdecode's lone surrogates included
_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from('a_."\\/\n\t\x00\x7f\xe9\u202e\U0001f600\udc80\udcff\ud800'),
        st.characters(codec="utf-8"),
    ),
    max_size=12,
)
_OPT = st.one_of(st.none(), _TEXT)
_INT = st.one_of(st.integers(0, 2**64), st.sampled_from([0, 1, 7 * 10**40]))

_KERNEL = st.builds(
    Kernel,
    name=_TEXT,
    demangled=_OPT,
    registers=st.one_of(st.none(), st.integers(0, 255)),
    shared=st.one_of(st.none(), st.integers(0, 2**20)),
    constant0=st.one_of(st.none(), st.integers(0, 2**16)),
    max_threads=st.one_of(st.none(), st.tuples(st.integers(1, 1024), st.integers(1, 4), st.integers(1, 4))),
    local=st.one_of(st.none(), st.integers(0, 2**16)),
)


@st.composite
def _entry(draw) -> Entry:
    kind = draw(st.sampled_from(["sass", "ptx", "tile", "ltoir", "unknown"]))
    decoded = draw(st.sampled_from(["none", "none", "cubin", "kernels"]))
    cubin = kernels = None
    if decoded == "cubin":
        fields = dataclasses.fields(CubinInfo)
        cubin = CubinInfo(**{f.name: draw(_field_value(f)) for f in fields})
    elif decoded == "kernels":
        kernels = tuple(draw(st.lists(_KERNEL, max_size=3)))
    return Entry(
        offset=draw(_INT),
        kind=kind,
        kind_code=draw(st.sampled_from([1, 2, 8, 0x40, 0x80])),
        sm=draw(st.integers(0, 1000)),
        variant=draw(st.sampled_from(["", "a", "f"])),
        compression=draw(st.sampled_from(["none", "lz4", "zstd"])),
        stored_size=draw(_INT),
        size=draw(_INT),
        flags=draw(_INT),
        code_version=(draw(st.integers(0, 0xFFFF)), draw(st.integers(0, 255))),
        header_size=64,
        payload_offset=draw(_INT),
        host=draw(st.one_of(st.none(), st.sampled_from(["linux", "windows", "mac"]), _TEXT)),
        debug=draw(st.booleans()),
        identifier=draw(_OPT),
        options=draw(_OPT),
        relocatable_ptx=draw(st.booleans()),
        cubin=cubin,
        kernels=kernels,
        ptx_target=draw(_OPT),
        decode_error=draw(_OPT),
    )


def _field_value(f: dataclasses.Field):
    """A value for a field of ``CubinInfo`` by its annotation (ints, strings, tuples of them)."""
    t = str(f.type)
    if t.startswith("tuple"):
        inner = _TEXT if "str" in t else st.integers(0, 2**32)
        return st.lists(inner, max_size=3).map(tuple)
    if "int" in t:
        return st.integers(0, 2**32) if "None" not in t else st.one_of(st.none(), st.integers(0, 2**32))
    if "bool" in t:
        return st.booleans()
    return _OPT if "None" in t else _TEXT


_FATBIN = st.builds(
    Fatbin,
    offset=_INT,
    size=_INT,
    section=st.one_of(st.none(), st.sampled_from([".nv_fatbin", "__nv_relfatbin"]), _TEXT),
    entries=st.lists(_entry(), max_size=4).map(tuple),
    found_by=st.sampled_from(["section", "scan"]),
)

_REPORT = st.builds(
    FileReport,
    path=_TEXT,
    format=st.sampled_from(["elf", "zip", "fatbin", "cubin"]),
    size=_INT,
    fatbins=st.lists(_FATBIN, max_size=3).map(tuple),
    error=st.one_of(st.none(), st.builds(FileError, message=_TEXT, offset=st.one_of(st.none(), _INT))),
    needs=st.lists(_TEXT, max_size=2).map(tuple),
    notes=st.lists(_TEXT, max_size=2).map(tuple),
    distribution=st.one_of(st.none(), _TEXT),
    package=st.one_of(st.none(), st.builds(Package, kind=st.just("conda"), name=_TEXT, version=_TEXT)),
    machine=st.one_of(st.none(), st.just("x86_64")),
)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(_REPORT, st.integers(0, 3))
def test_file_pretty_is_pretty_of_file_dict(report, depth):
    fast = record_pieces.file_pretty(report, depth)
    assert fast == jsondump.pretty(file_dict(report), depth)
    json.loads(fast)  # and strict JSON: no lone surrogate left


@settings(max_examples=100, deadline=None)
@given(_entry(), st.integers(0, 4))
def test_entry_pretty_is_pretty_of_entry_dict(e, depth):
    text = entry_pretty(e, "\n" + "  " * (depth + 1))
    if e.cubin is not None or e.kernels is not None:
        assert text is None
    else:
        assert text is not None
        assert record_pieces.utf8_json(text) == jsondump.pretty(entry_dict(e), depth)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(_REPORT, st.integers(1, 4))
def test_file_pieces_are_compact_json_of_file_dict(report, run):
    """The compact record (``list --format json`` of a large inventory), in runs of any length."""
    old = record_pieces.COMPACT_RUN
    record_pieces.COMPACT_RUN = run
    try:
        fast = b"".join(record_pieces.file_pieces(report))
    finally:
        record_pieces.COMPACT_RUN = old
    assert fast == jsondump.to_json(file_dict(report), separators=(",", ":")).encode()
    json.loads(fast)


@settings(max_examples=100, deadline=None)
@given(_entry())
def test_entry_compact_is_compact_json_of_entry_dict(e):
    text = entry_compact(e)
    if e.cubin is not None or e.kernels is not None:
        assert text is None
    else:
        assert text is not None
        assert record_pieces.utf8_json(text) == jsondump.to_json(entry_dict(e), separators=(",", ":"))


def test_a_fatbin_field_the_fast_path_does_not_write_sends_it_to_the_general_path(monkeypatch):
    """The fatbin's fields are written by name: a record with a field the fast path does not
    write (a future one) is written by ``pretty`` of its dict, never without the field."""
    e = Entry(1, "sass", 2, 90, "a", "none", 8, 8, 0, (1, 8), 64, 65, "linux", False, None, None)
    report = FileReport("lib.so", "elf", 100, fatbins=(Fatbin(0, 8, ".nv_fatbin", (e,), "scan"),))
    assert set(record_json.FATBIN_PRETTY_FIELDS) == {f.name for f in dataclasses.fields(Fatbin)}
    monkeypatch.setattr(record_json, "FATBIN_PRETTY_FIELDS", ("section", "offset", "size", "entries"))
    assert record_pieces.file_pretty(report, 2) == jsondump.pretty(file_dict(report), 2)
    assert '"found_by": "scan"' in record_pieces.file_pretty(report, 2)
    compact = b"".join(record_pieces.file_pieces(report))
    assert compact == jsondump.to_json(file_dict(report), separators=(",", ":")).encode()
    assert b'"found_by":"scan"' in compact
