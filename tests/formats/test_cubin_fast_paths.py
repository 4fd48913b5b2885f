"""The cubin parser's and the kernel JSON's fast paths (issue 26, row 5) give what a plain reading
of the format gives: each is compared here with a walk written from docs/format.md §3 (``.nv.info``
records: u8 format, u8 attribute, u16 value; format 4 (SVAL) means that many data bytes follow),
on generated records, and the JSON with ``json.dumps`` of ``kernel_dict``."""

from __future__ import annotations

import array
import dataclasses
import json
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fatbin_inspect.formats import cubin as C
from fatbin_inspect.formats.model import Entry, Kernel, fast_kernel
from fatbin_inspect.render import jsondump, record_pieces
from fatbin_inspect.render import record_json as inv_json
from fatbin_inspect.render.escape import utf8_json
from fatbin_inspect.render.record_json import entry_dict, kernel_dict, kernels_json


def _walk(data: bytes):
    """(position, format, attribute, value, SVAL data) of each record, as the format reads."""
    pos = 0
    while pos + 4 <= len(data):
        fmt, attr, v = data[pos], data[pos + 1], data[pos + 2] | data[pos + 3] << 8
        size = v if fmt == 4 else 0
        yield pos, fmt, attr, v, data[pos + 4 : pos + 4 + size]
        pos += 4 + size


def _sval_spec(data: bytes, attribute: int):
    return next((d for _p, f, a, _v, d in _walk(data) if f == 4 and a == attribute), None)


def _resources_spec(data: bytes):
    regs: dict[int, int] = {}
    frame: dict[int, int] = {}
    for pos, f, a, v, _d in _walk(data):
        if f == 4 and a in (C.NVI_REGCOUNT, C.NVI_FRAME_SIZE) and v >= 8 and pos + 12 <= len(data):
            sym, amount = struct.unpack_from("<II", data, pos + 4)
            (regs if a == C.NVI_REGCOUNT else frame)[sym] = amount
    return regs, frame


_ATTRS = st.sampled_from([C.NVI_MAX_THREADS, C.NVI_REGCOUNT, C.NVI_FRAME_SIZE, 0x17, 0x1C, 0x5F, 0x04])


@st.composite
def _record(draw) -> bytes:
    fmt = draw(st.sampled_from([1, 2, 3, 4, 4, 4, 0, 9]))
    attr = draw(st.one_of(_ATTRS, st.integers(0, 255)))
    if fmt != 4:
        return bytes((fmt, attr)) + draw(st.binary(min_size=2, max_size=2))
    # mostly the lengths ptxas writes (the pattern's), sometimes odd or longer ones
    v = draw(st.one_of(st.sampled_from([0, 4, 8, 8, 8, 12, 16, 24, 64]), st.integers(0, 300)))
    return bytes((4, attr)) + struct.pack("<H", v) + draw(st.binary(min_size=v, max_size=v))


@st.composite
def _section(draw) -> bytes:
    data = b"".join(draw(st.lists(_record(), max_size=40)))
    cut = draw(st.one_of(st.none(), st.integers(0, len(data))))  # a cut section, or stray bytes
    tail = draw(st.binary(max_size=5))
    return (data if cut is None else data[:cut]) + tail


@settings(max_examples=150, deadline=None)
@given(_section(), st.sampled_from([C.NVI_MAX_THREADS, 0x17, 0x04]))
def test_sval_finds_the_record_the_walk_finds(data, attribute):
    assert C._sval(data, attribute) == _sval_spec(data, attribute)


@settings(max_examples=150, deadline=None)
@given(_section())
def test_global_resources_equal_the_walk(data):
    assert C._global_resources(data) == _resources_spec(data)


def test_global_resources_of_a_long_uniform_run_with_one_other_record():
    """cuBLASLt 13's global ``.nv.info``: 8-byte SVAL records around one format-3 record."""
    recs = [
        struct.pack("<BBHII", 4, (C.NVI_REGCOUNT, C.NVI_FRAME_SIZE, 0x12)[i % 3], 8, i, 100 + i)
        for i in range(300)
    ]
    data = b"".join(recs[:150]) + bytes((3, 0x5F, 1, 0)) + b"".join(recs[150:])
    regs, frame = C._global_resources(data)
    assert (regs, frame) == _resources_spec(data)
    assert regs[297] == 397 and frame[298] == 398 and len(regs) == 100


_NAME_PART = st.text(alphabet=".abcnvifo_\xe9", max_size=12)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            _NAME_PART,
            st.tuples(st.sampled_from(C.LOOKED_UP + (".nv.inf", ".text.")), _NAME_PART).map("".join),
        ),
        max_size=8,
    ),
    st.booleans(),
    st.lists(st.integers(0, 120), max_size=12),
)
def test_section_names_are_cut_as_the_elf_specification_reads_them(parts, final_nul, offsets):
    """Of the names the parser looks up (``LOOKED_UP``), the last section of each, an offset
    into the middle of a name (a suffix shared with a longer one) included; a kernel's
    ``.nv.info.K``, ``.nv.shared.K`` and ``.nv.constant0.K`` in maps of their own, by ``K``."""
    raw = "\0".join(parts).encode("latin-1") + (b"\0" if final_nul else b"")
    starts = [sum(len(p) + 1 for p in parts[:i]) for i in range(len(parts))]
    offsets = offsets + starts + starts[::2]  # every name, some twice (the last section wins)

    def spec(raw, offs):  # a name runs from its offset to the next NUL or the table's end
        table = raw.decode("latin-1")
        names = {table[o:].split("\0")[0]: i for i, o in enumerate(offs)}
        looked = {n: i for n, i in names.items() if n.startswith(C.LOOKED_UP)}
        kernel = (".nv.info.", ".nv.shared.", ".nv.constant0.")
        by_kernel = [{n[len(p) :]: i for n, i in looked.items() if n.startswith(p)} for p in kernel]
        return ({n: i for n, i in looked.items() if not n.startswith(kernel)}, *by_kernel)

    # as the parser calls it (an array), and again after another table or other offsets: the
    # map kept from the cubin before is used only for the same table and the same offsets
    same, other = array.array("I", offsets), array.array("I", offsets[::-1])
    for args in ((raw, same), (raw, same), (raw, other), (raw + b"x\0", other), (raw, other), (raw, same)):
        assert C._names(*args) == spec(*args)


def test_kernel_symbols_are_the_entry_functions_in_symbol_order():
    """Symbols of every type/binding/st_other, a name without its NUL at the table's end."""
    kinds = [(0x12, 0x10), (0x12, 0x00), (0x11, 0x10), (0x22, 0x10), (0x02, 0x13), (0x10, 0x10), (0x12, 0xF0)]
    strtab = b"\0" + b"".join(b"k%d\0" % i for i in range(len(kinds) - 1)) + b"last"
    offs = [1 + 3 * i for i in range(len(kinds))]
    syms = b"".join(struct.pack("<IBBHQQ", o, info, other, 0, 0, 0) for o, (info, other) in zip(offs, kinds))
    syms += b"\x01" * 7  # a cut symbol is no symbol
    elf = _FakeElf(syms, strtab)
    expected = [
        (i, strtab[o : strtab.find(b"\0", o) if strtab.find(b"\0", o) >= 0 else None].decode())
        for i, (o, (info, other)) in enumerate(zip(offs, kinds))
        if info & 0xF == C.STT_FUNC and other & C.STO_CUDA_ENTRY
    ]
    assert C._kernel_symbols(elf) == expected == [(0, "k0"), (3, "k3"), (4, "k4"), (6, "last")]


class _FakeElf:
    """Just what ``_kernel_symbols`` reads of an ``_Elf``: sections 1 (.symtab) and 2 (.strtab)."""

    def __init__(self, symtab: bytes, strtab: bytes):
        self._sections = {1: symtab, 2: strtab}
        self.by_name = {".symtab": 1}
        self.sh_link = [0, 2, 0]
        self.sh_offset = [0, 0, 0]
        self.shnum = 3

    def _bytes(self, idx: int) -> bytes:
        return self._sections[idx]


def test_fast_kernel_is_the_record_the_constructor_makes():
    values = ("_Z1kv", "k()", 32, 1024, 360, (128, 1, 1), 16)
    k = fast_kernel(*values)
    assert k == Kernel(*values) and hash(k) == hash(Kernel(*values))
    assert [getattr(k, f.name) for f in dataclasses.fields(Kernel)] == list(values)
    assert dataclasses.replace(k, registers=1).registers == 1


_NAMES = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20
) | st.sampled_from(
    ["plain", 'quo"te', "back\\slash", "ctl\x01\x7f", "\udcff lone", "\ud83d\ude00 pair", "\u00e9\u4e2d"]
)
_INT = st.none() | st.integers(0, 2**40)


_KERNEL = st.builds(
    Kernel,
    _NAMES,
    st.none() | _NAMES,
    _INT,
    _INT,
    _INT,
    st.none()
    | st.tuples(st.integers(0, 1024), st.integers(0, 64), st.integers(0, 64))
    | st.lists(st.integers(0, 1024), max_size=4).map(tuple),  # (another length: not the fast path)
    _INT,
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(_KERNEL, max_size=6))
def test_kernels_json_is_json_dumps_of_kernel_dicts(kernels):
    expected = utf8_json(json.dumps([kernel_dict(k) for k in kernels], separators=(",", ":")))
    assert kernels_json(tuple(kernels)) == expected


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_KERNEL, max_size=9), st.integers(1, 4))
def test_kernels_json_pieces_are_cut_between_kernels(monkeypatch, kernels, per):
    """The pieces join to the whole text, with no lone surrogate escape to rewrite (as
    ``record_pieces.entry_texts`` writes them); one piece per ``KERNELS_PER_PIECE`` kernels, one
    for none."""
    monkeypatch.setattr(inv_json, "KERNELS_PER_PIECE", per)
    pieces = list(inv_json.kernels_json_pieces(tuple(kernels)))
    expected = utf8_json(json.dumps([kernel_dict(k) for k in kernels], separators=(",", ":")))
    assert "".join(pieces) == expected
    assert len(pieces) == max(1, -(-len(kernels) // per))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.sampled_from(["k0", "k1", "k2", 'q"k', "_Zv"]), st.none() | st.sampled_from(["a", "b"])),
        max_size=12,
    ),
    st.integers(1, 3),
)
def test_kernels_json_of_a_recurring_name_with_another_demangled_form(monkeypatch, pairs, heads_max):
    """The per-name head memo: a name seen before with another demangled form (or none) is
    encoded again, and a full memo is emptied, never served stale."""
    monkeypatch.setattr(inv_json, "HEADS_MAX", heads_max)
    inv_json._heads.clear()
    ks = tuple(Kernel(n, d, 1, 2, 3, None, 4) for n, d in pairs)
    expected = utf8_json(json.dumps([kernel_dict(k) for k in ks], separators=(",", ":")))
    assert kernels_json(ks) == expected
    assert kernels_json(ks) == expected  # the second time from the memo
    assert len(inv_json._heads) <= heads_max


def test_entry_json_is_the_entry_dicts_text():
    e = Entry(
        offset=16, kind="sass", kind_code=2, sm=90, variant="a", compression="zstd", stored_size=10, size=20,
        flags=0, code_version=(1, 8), header_size=64, payload_offset=80, host="linux", debug=False,
        identifier="x.cu", options=None,
        kernels=(Kernel("_Z1kv", "k()", 8, 0, 360, None, 0), Kernel("x\udcff", None, None, 0, None, (64, 1, 1), None)),
    )  # fmt: skip
    for entry in (e, dataclasses.replace(e, kernels=()), dataclasses.replace(e, kernels=None)):
        assert record_pieces.entry_json(entry) == jsondump.to_json(entry_dict(entry), separators=(",", ":"))
