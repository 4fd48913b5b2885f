"""One ELF file's hidden fatbins read by several workers (scanning.elf_split) give the bytes one
worker gives: the scan's text, the cache's record data and the summary; and the magic scan finds
the same fatbins however its range is cut (fatbin.walk looks at every magic before its end)."""

from __future__ import annotations

import random
import struct

import pytest
from builders import cubin, elf64, entry, fatbin, ptx_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fatbin_inspect.formats.binio import Blob, open_blob
from fatbin_inspect.inventory import hidden, slices
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.render.scan_json import file_rest, file_rest_parts
from fatbin_inspect.scanning import ScanOptions, cache, elf_split, scan, units, worker

MAGIC = struct.pack("<I", 0xBA55ED50)


def _fatbin(rng: random.Random, fake_magic: bool) -> bytes:
    """A fatbin of one to three entries; with ``fake_magic`` a PTX payload holding a plausible
    fatbin header (a false hit a slice starting inside it may take for a fatbin)."""
    entries = []
    for _ in range(rng.randint(1, 3)):
        sm = rng.choice([75, 80, 86, 90, 100])
        if rng.random() < 0.5:
            entries.append(entry(2, sm, cubin(sm), code=(1, 8)))
        else:
            text = (
                ptx_text(target=f"sm_{sm}")
                + b"// "
                + bytes(rng.randrange(32, 127) for _ in range(rng.randint(0, 300)))
            )
            if fake_magic:
                inner = fatbin([entry(1, sm, b".version 9.0\n.target sm_80\n")])
                text += b"\n" + inner + b"\n"
            entries.append(entry(1, sm, text))
    return fatbin(entries)


def _library(seed: int, count: int, fake_every: int, gap: int) -> bytes:
    """An x86-64 library: one fatbin in .nv_fatbin, ``count`` in a large data section (found by
    the magic scan, as cuFFT's in .ldata), back to back with zero padding to ``gap``, and a
    .rodata with text in it."""
    rng = random.Random(seed)
    data = bytearray()
    for i in range(count):
        data += _fatbin(rng, fake_every > 0 and i % fake_every == 0)
        data += b"\0" * (-len(data) % gap)
    return elf64(
        [
            (".rodata", 1, b"host strings " * 50),
            (".nv_fatbin", 1, _fatbin(rng, False)),
            (".ldata", 1, bytes(data)),
        ]
    )


@pytest.fixture
def small_split(monkeypatch):
    """Split thresholds scaled down to the synthetic libraries."""
    monkeypatch.setattr(slices, "SPLIT_HIDDEN", 2048)
    monkeypatch.setattr(slices, "PIECE_MIN", 2048)
    monkeypatch.setattr(slices, "SLICE_MIN", 256)
    monkeypatch.setattr(hidden, "SCAN_CHUNK", 1024)


OPTS = [
    {"kernels": False, "details": False, "jobs": 1, "probe_small": False, "platform": "", "digests": False},
    {"kernels": False, "details": False, "jobs": 1, "probe_small": True, "platform": "", "digests": False},
]


def _whole(path: str, opts) -> list[tuple]:
    return worker.inspect_batch([(path, (0,))], opts, file_rest, False, True)[0][2]


def _split(path: str, opts, parts: int):
    split = elf_split.plan(path, opts, parts)
    assert split is not None and len(split.slices) > 1
    results = [
        elf_split.inspect_part(path, split, i, opts, file_rest_parts, True)
        for i in range(len(split.slices) + 1)
    ]
    return elf_split.join(path, results, split)


def _unpacked(encs):
    ((item, data, text, rec),) = encs
    assert rec is None
    return (
        item,
        cache.unpack(data, cache.packed_size(data)),
        cache.unpack(text, cache.packed_size(text), True),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 1 << 30),
    count=st.integers(6, 60),
    fake_every=st.sampled_from([0, 1, 3]),
    gap=st.sampled_from([8, 32]),
    parts=st.integers(2, 24),
    probe=st.booleans(),
)
def test_split_gives_the_whole_files_bytes(tmp_path, small_split, seed, count, fake_every, gap, parts, probe):
    """Slices cut anywhere (inside fatbins, inside false hits) join to the record one worker
    makes: the same summary item, record data and scan text; or the join declines (None) and
    the scan reads the file whole."""
    path = str(tmp_path / f"lib{seed}.so")
    with open(path, "wb") as f:
        f.write(_library(seed, count, fake_every, gap))
    opts = OPTS[probe]
    joined = _split(path, opts, parts)
    whole = _whole(path, opts)
    if joined is None:  # (a false hit across a slice's resume point: the file is read whole)
        assert fake_every
        return
    assert _unpacked(joined) == _unpacked(whole)


def test_split_keeps_fatbins_a_false_hit_would_hide(tmp_path, small_split):
    """Every fatbin holds a plausible header in its payload: slices starting inside one drop
    their first, false, fatbins (``slices.chained``) and the join still equals the whole file."""
    path = str(tmp_path / "lib.so")
    with open(path, "wb") as f:
        f.write(_library(7, 80, 1, 32))
    joined = _split(path, OPTS[0], 16)
    assert joined is not None
    assert _unpacked(joined) == _unpacked(_whole(path, OPTS[0]))
    split = elf_split.plan(path, OPTS[0], 16)
    found = [
        elf_split.inspect_part(path, split, i, OPTS[0], None, False) for i in range(1, len(split.slices) + 1)
    ]
    keep = slices.chained(split, [list(zip(p.starts, p.ends)) for p in found])
    assert keep is not None and any(keep)  # some slice did begin with a false hit


def test_marker_in_a_slice_reads_the_file_whole(tmp_path, small_split):
    """The static cudart marker between two hidden fatbins: that slice says so, the join
    declines, and the whole file's record (static_cudart true) is the answer."""
    rng = random.Random(3)
    data = b"".join(_fatbin(rng, False) for _ in range(20))
    half = len(data) // 2
    cut = data.index(MAGIC, half)
    data = data[:cut] + b"/cudart.shm.%d\0\0\0\0" + data[cut:]
    path = str(tmp_path / "lib.so")
    with open(path, "wb") as f:
        f.write(elf64([(".nv_fatbin", 1, _fatbin(rng, False)), (".ldata", 1, data)]))
    assert _split(path, OPTS[0], 8) is None
    (rec,) = worker.inspect_file(path, Options())
    assert rec.static_cudart and len(rec.fatbins) == 21


def test_split_scan_equals_unsplit_scan_in_a_pool(tmp_path, small_split, monkeypatch):
    """End to end, two worker processes: ``scan`` with an encoder gives the same texts, summaries
    and cache rows whether the library is split or not, cold and warm."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(3):
        (tree / f"lib{i}.so").write_bytes(_library(i, 120, 4, 32))
    joins = []
    real = elf_split.join
    monkeypatch.setattr(elf_split, "join", lambda *a, **k: joins.append(1) or real(*a, **k))
    monkeypatch.setattr(units, "SPLIT_BYTES", 1)

    def run(jobs, cache_dir):
        opts = ScanOptions(
            inventory=OPTS[1],
            jobs=jobs,
            cache_dir=cache_dir,
            summary=True,
            encoder=file_rest,
            encoder_parts=file_rest_parts,
        )
        res = scan([str(tree)], opts)
        return res.reports, list(res.texts())

    one = run(1, None)
    assert not joins
    cold = run(2, str(tmp_path / "cache"))
    assert len(joins) == 3
    warm = run(2, str(tmp_path / "cache"))
    assert one == cold == warm


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 1 << 30), fake_every=st.sampled_from([0, 2]))
def test_magic_scan_is_the_same_in_any_chunks(seed, fake_every):
    """``hidden.scan_chunks`` finds the same fatbins with chunks of any size: a fatbin whose header
    starts in the last 16 bytes of a chunk, or whose magic runs across its end, is found (the
    walk once stopped 16 bytes short of a chunk's end and the next chunk began after it)."""
    rng = random.Random(seed)
    data = bytearray()
    for i in range(12):
        data += _fatbin(rng, fake_every > 0 and i % fake_every == 0)
        data += b"\0" * rng.choice([0, 8, 24])
    blob = Blob(bytes(data))

    def found(size):
        old, hidden.SCAN_CHUNK = hidden.SCAN_CHUNK, size
        try:
            errors: list = []
            return [fb.offset for part in hidden.scan_chunks(blob, 0, blob.size, None, errors) for fb in part]
        finally:
            hidden.SCAN_CHUNK = old

    whole = found(1 << 30)
    assert len(whole) >= 12
    for chunk in range(17, 700, 3):
        assert found(chunk) == whole, chunk


def test_plan_leaves_alone_what_it_cannot_split(tmp_path, small_split):
    """No plan: a small hidden section, decoded payloads (kernels), a host file that is not ELF."""
    path = str(tmp_path / "lib.so")
    with open(path, "wb") as f:
        f.write(_library(1, 40, 0, 32))
    assert elf_split.plan(path, OPTS[0], 8) is not None
    assert elf_split.plan(path, dict(OPTS[0], kernels=True), 8) is None
    assert elf_split.plan(path, dict(OPTS[0], digests=True), 8) is None
    small = str(tmp_path / "small.so")
    with open(small, "wb") as f:
        f.write(_library(1, 1, 0, 32))
    assert elf_split.plan(small, OPTS[0], 8) is None
    assert slices.hidden_split("elf", open_blob(path), Options(), 1) is None


@pytest.mark.parametrize("probe", [False, True])
def test_slices_of_many_fatbins_pack_the_rest(tmp_path, small_split, probe):
    """Slices of many fatbins hand their items past the first ``FIRST_CODES`` packed; the join
    unpacks them into the file's frame: the same bytes as one worker's."""
    path = str(tmp_path / "lib.so")
    with open(path, "wb") as f:
        f.write(_library(11, 200, 5, 32))
    split = elf_split.plan(path, OPTS[probe], 3)
    parts = [
        elf_split.inspect_part(path, split, i, OPTS[probe], file_rest_parts, True)
        for i in range(len(split.slices) + 1)
    ]
    assert sum(p.text.rest is not None and p.data.rest is not None for p in parts[1:]) >= 2
    joined = elf_split.join(path, parts, split)
    assert joined is not None and _unpacked(joined) == _unpacked(_whole(path, OPTS[probe]))


def test_a_part_of_a_replaced_file_declines(tmp_path, small_split):
    """A part checks the file's stat once it has read it: another file at the path (here: the
    key the scan planned with is not the file's) makes it decline, and the file is read whole."""
    import os

    path = str(tmp_path / "lib.so")
    with open(path, "wb") as f:
        f.write(_library(5, 40, 0, 32))
    split = elf_split.plan(path, OPTS[0], 4)
    key = cache.stat_key(os.stat(path))
    assert elf_split.inspect_part(path, split, 1, OPTS[0], file_rest_parts, True, key) is not None
    assert (
        elf_split.inspect_part(path, split, 1, OPTS[0], file_rest_parts, True, (*key[:4], key[4] + 1)) is None
    )


def test_parts_of_a_file_that_shrank_decline(tmp_path, small_split):
    """The file cut after the plan: no part vouches for it (the whole file's unit then gives its
    record of a cut file)."""
    path = str(tmp_path / "lib.so")
    with open(path, "wb") as f:
        f.write(_library(6, 40, 0, 32))
    split = elf_split.plan(path, OPTS[0], 4)
    with open(path, "r+b") as f:
        f.truncate(split.size - 100)
    parts = [
        elf_split.inspect_part(path, split, i, OPTS[0], file_rest_parts, True)
        for i in range(len(split.slices) + 1)
    ]
    assert parts == [None] * len(parts)
    assert elf_split.join(path, parts, split) is None
