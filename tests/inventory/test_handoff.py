"""A large binary's hidden pieces magic-scanned by a second process while this one walks the
fatbin sections (``inventory.handoff``): the record is the one a single process makes."""

from __future__ import annotations

import random

import pytest
from builders import cubin, elf64, entry, fatbin, ptx_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fatbin_inspect.inventory import handoff, hidden
from fatbin_inspect.inventory.handoff import hand_off
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path

MB = 1 << 20


def test_hand_off_balances_the_pieces():
    # libcublasLt.so.13: 139 MB of .nv_fatbin; .rodata, .cask_resource, .ldata and small ones hidden
    sizes = [46 * MB, 110 * MB, 1 * MB, 96 * MB, 2 * MB]
    assert hand_off(sizes, 139 * MB) == [1, 3]
    # cuFFT: one 265 MB .ldata, little else: handing it off whole would only move the work
    assert hand_off([265 * MB, 1 * MB], 4 * MB) == []
    assert hand_off([], 100 * MB) == []
    assert hand_off([10, 10], 0) == [1]


@given(st.lists(st.integers(0, 1000), max_size=12), st.integers(0, 3000))
def test_hand_off_takes_a_quarter_off_or_nothing(sizes, own):
    away = hand_off(sizes, own)
    assert away == sorted(set(away)) and all(0 <= i < len(sizes) for i in away)
    if away:
        total = own + sum(sizes)
        there = sum(sizes[i] for i in away)
        assert max(there, total - there) * 4 <= total * 3


def _fatbin(rng: random.Random) -> bytes:
    entries = []
    for _ in range(rng.randint(1, 3)):
        sm = rng.choice([75, 80, 90, 100])
        if rng.random() < 0.5:
            entries.append(entry(2, sm, cubin(sm), code=(1, 8)))
        else:
            inner = fatbin([entry(1, sm, b".version 9.0\n.target sm_80\n")]) if rng.random() < 0.3 else b""
            entries.append(entry(1, sm, ptx_text(target=f"sm_{sm}") + b"// " + inner + b"\n"))
    return fatbin(entries)


def _hidden(rng: random.Random, count: int) -> bytes:
    data = bytearray(b"\x48\xba" + fatbin([])[:8] + b"\x90" * rng.randint(0, 40))  # a movabs false hit
    for _ in range(count):
        data += _fatbin(rng) + b"\0" * rng.choice([0, 8, 24])
    return bytes(data)


def _library(seed: int, counts: list[int], cut: bool) -> bytes:
    rng = random.Random(seed)
    nv = b"".join(_fatbin(rng) for _ in range(3))
    if cut:  # a strict error in the fatbin section, before the hidden pieces' records
        nv = nv[: len(nv) - 40]
    sections = [(".rodata", 1, _hidden(rng, counts[0]))]
    sections.append((".nv_fatbin", 1, nv))
    sections += [(f".data{i}", 1, _hidden(rng, n)) for i, n in enumerate(counts[1:])]
    return elf64(sections)


@pytest.fixture
def handed(monkeypatch):
    """Hand-offs at any size, with the pieces each one took."""
    monkeypatch.setattr(handoff, "HAND_OFF_MIN", 1)
    monkeypatch.setattr(hidden, "SCAN_CHUNK", 512)
    taken: list[tuple[frozenset[int], int | None]] = []  # (pieces, child pid)
    real = handoff.HandOff.__init__

    def init(self, *args):
        real(self, *args)
        taken.append((self.indices, self.pid))

    monkeypatch.setattr(handoff.HandOff, "__init__", init)
    return taken


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 1 << 30),
    counts=st.lists(st.integers(0, 12), min_size=2, max_size=5),
    cut=st.booleans(),
)
def test_handed_off_record_is_the_single_process_one(tmp_path_factory, handed, seed, counts, cut):
    path = str(tmp_path_factory.mktemp("h") / "lib.so")
    with open(path, "wb") as f:
        f.write(_library(seed, counts, cut))
    del handed[:]
    one = list(inspect_path(path, Options(jobs=1)))
    assert [t for t, _pid in handed] in ([frozenset()], [])
    del handed[:]
    two = list(inspect_path(path, Options(jobs=2)))
    assert two == one
    assert len(handed) == 1
    if handed[0][0]:
        assert any(fb.found_by == "scan" for fb in two[0].fatbins) or not any(counts)


def _declines(path, size, pieces):
    """A worker that finds the file changed (``_scan_pieces`` giving None)."""
    return None


def _fails(path, size, pieces):
    raise RuntimeError("a worker's bug")


def _killed(path, size, pieces):
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize("worker_fn", [_declines, _fails, _killed])
def test_a_worker_that_gives_nothing_leaves_the_pieces_here(tmp_path, handed, monkeypatch, capfd, worker_fn):
    """The pieces are scanned here again; the child prints nothing and is reaped."""
    import os

    path = str(tmp_path / "lib.so")
    with open(path, "wb") as f:
        f.write(_library(11, [4, 6, 8], False))
    one = list(inspect_path(path, Options(jobs=1)))
    monkeypatch.setattr(hidden, "_scan_pieces", worker_fn)
    del handed[:]
    two = list(inspect_path(path, Options(jobs=2)))
    ((pieces, pid),) = handed
    assert pieces and pid  # the pieces were handed off, and scanned here again
    assert two == one and len(one[0].fatbins) == 3 + 4 + 6 + 8
    assert capfd.readouterr() == ("", "")
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no zombie left behind


def test_archive_members_are_not_handed_off(tmp_path, handed):
    """A member's bytes are no file a worker could map: scanned here."""
    import zipfile

    lib = _library(5, [3, 3, 3], False)
    whl = tmp_path / "x-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("x/lib.so", lib)
    recs = list(inspect_path(str(whl), Options(jobs=2, members="all")))
    assert [len(r.fatbins) for r in recs if r.path.endswith("lib.so")] == [12]
    assert all(not t for t, _pid in handed)
