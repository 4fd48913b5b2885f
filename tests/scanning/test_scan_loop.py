"""scanning.loop and scanning.executors: the loop over any executor, and the local pool's crashes."""

import os
import signal

from builders import zip_archive
from conftest import fixture_path, read_file

from fatbin_inspect.scanning import ScanOptions, scan, units, worker
from fatbin_inspect.scanning.executors import Crash, Done, LocalPool, Unread
from fatbin_inspect.scanning.loop import ScanLoop
from fatbin_inspect.scanning.units import FileRef, Unit

SM80 = fixture_path("bin", "t01_exe_sm80")
MULTI = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")


class _Blind:
    """An executor whose workers see no file (as a Dask cluster that mounts nothing): every unit
    comes back ``Unread`` by two workers."""

    jobs = 2
    remote = True

    def __init__(self):
        self.ended = []

    def start(self, roots):
        return []

    def submit(self, unit):
        self.ended.append(Done(unit, Unread(2)))

    busy = False

    @property
    def pending(self):
        return bool(self.ended)

    def done(self, wait=False):
        ended, self.ended = self.ended, []
        return ended

    def abandon(self):
        pass

    def close(self):
        pass


def test_a_split_file_no_worker_reads_is_one_unread_record(tmp_path, monkeypatch):
    """A wheel split into spans that no worker can read is one error record and named unread,
    like a file of a batch (the join once took the parts' ``Unread`` for records: a TypeError)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "lib.so").write_bytes(read_file(SM80))
    members = [(f"w/lib{i}.so", read_file(MULTI)) for i in range(6)]
    (tree / "w-1.0-py3-none-any.whl").write_bytes(zip_archive(members))
    monkeypatch.setattr(units, "SPLIT_BYTES", 1)
    monkeypatch.setattr(units, "SPAN_BYTES", 1)
    submitted = []
    loop = ScanLoop(ScanOptions(jobs=2, cache_dir=None, summary=True), None)
    loop.executor = blind = _Blind()
    real = blind.submit
    blind.submit = lambda unit: (submitted.append(unit), real(unit))
    from fatbin_inspect.inventory.roots import resolve_roots

    loop.run(resolve_roots([str(tree)]))
    assert sum(u.part is not None for u in submitted) >= 2  # the wheel went out in parts
    reports, _ = loop.ordered()
    assert [r.path for r in reports] == [str(tree / "lib.so"), str(tree / "w-1.0-py3-none-any.whl")]
    assert all("not readable on any Dask worker (2 tried)" in r.error.message for r in reports)
    assert sorted(loop.unread) == [r.path for r in reports]


def test_a_file_whose_records_encode_in_part_is_summarized(tmp_path, monkeypatch):
    """A file with a record that does not encode for the cache (not cached, summarized in the
    scan) and others that do: each gets its summary, as a scan without cache gives it (the
    others came back without their record, and the summary was once made of None)."""
    whl = tmp_path / "w-1.0-py3-none-any.whl"
    whl.write_bytes(zip_archive([("w/liba.so", read_file(SM80)), ("w/libb.so", read_file(MULTI))]))
    plain = scan([str(whl)], ScanOptions(jobs=1, cache_dir=None, summary=True))
    real = worker.encode_record

    def encode(rec, base, data):
        if rec.path.endswith("libb.so"):
            raise ValueError("does not encode")
        return real(rec, base, data)

    monkeypatch.setattr(worker, "encode_record", encode)
    mixed = scan([str(whl)], ScanOptions(jobs=1, cache_dir=str(tmp_path / "cache"), summary=True))
    assert len(plain.reports) == 2 and mixed.reports == plain.reports


def _die_on_poison(files, *_rest):
    """A unit function: the paths of ``files``, its process killed at a file named poison."""
    for path, _key in files:
        if path == "poison":
            os.kill(os.getpid(), signal.SIGKILL)
    return [path for path, _key in files]


def test_a_unit_that_kills_its_process_is_found_alone_and_the_others_run_again():
    """Units in flight when a process dies are run again one at a time (a batch file by file);
    the one that dies alone comes back as a ``Crash`` naming the signal, the others' results as
    ever."""
    pool = LocalPool(2)
    batches = [["a", "poison", "b"], ["c", "d"], ["e"]]
    for files in batches:
        pool.submit(Unit(_die_on_poison, ([FileRef(p, (0, 0, 1, 0, 0)) for p in files],)))
    results, crashes = [], []
    try:
        while pool.pending:
            for done in pool.done(wait=True):
                (crashes if type(done.result) is Crash else results).append(done)
    finally:
        pool.close()
    assert sorted(p for d in results for p in d.result) == ["a", "b", "c", "d", "e"]
    assert len(crashes) == 1
    (crash,) = crashes
    assert [ref.path for ref in crash.unit.args[0]] == ["poison"]
    assert crash.result.why == "killed by SIGKILL"
