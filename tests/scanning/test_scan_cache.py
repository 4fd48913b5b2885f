"""The scan cache holds data, never code: rows that do not validate are misses, the folder is
private, the key sees a rewrite whose mtime was put back, and any file name is a key."""

import dataclasses
import json
import os
import pickle
import shutil
import sqlite3
import stat

import pytest
import zstandard
from conftest import cli, fixture_path

from fatbin_inspect.formats import model
from fatbin_inspect.scanning import ScanOptions, scan
from fatbin_inspect.scanning.cache import CACHE_VERSION, ScanCache
from fatbin_inspect.scanning.record_data import report_data, report_from_data

MULTI = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")
SM80 = fixture_path("bin", "t01_exe_sm80")


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "tree"
    (t / "lib").mkdir(parents=True)
    shutil.copyfile(MULTI, t / "lib" / "libmulti.so")
    shutil.copyfile(SM80, t / "lib" / "libsm80.so")
    (t / "lib" / "notes.txt").write_bytes(b"nothing here\n" * 20)
    return t


def _scan(tree, cache):
    return scan([str(tree)], ScanOptions(jobs=1, cache_dir=str(cache) if cache else None))


def _rows(cache):
    db = sqlite3.connect(os.path.join(cache, f"scan-v{CACHE_VERSION}.sqlite3"))
    try:
        return db, db.execute("SELECT path, summary, records FROM files WHERE records IS NOT NULL").fetchall()
    except sqlite3.Error:
        db.close()
        raise


def _unpacked(blob) -> bytes:
    """A packed column read back (zstd, as the cache's docstring says)."""
    return zstandard.ZstdDecompressor().decompress(bytes(blob))


def _packed(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


def _checksummed(data: bytes) -> bytes:
    """A frame as ``cache.pack_text`` makes one of a text it checked (zstd's XXH64 of the content)."""
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


def _forged_checksum(text: bytes) -> bytes:
    """Other (printable) bytes of the same size in a frame that keeps ``text``'s checksum."""
    frame = _checksummed(text.replace(b"null", b"nil!"))
    return frame[:-4] + _checksummed(text)[-4:]


def _every_field_set():
    """A record with a value other than the default in every field of every record type."""
    k = model.Kernel("_Z1kv", "k()", 32, 1024, 360, (128, 1, 1), 16)
    c = model.CubinInfo(8, "exec", 90, True, 90, False, "ptxas 13.0.88", "-arch sm_90a")
    e = model.Entry(
        offset=64,
        kind="sass",
        kind_code=2,
        sm=90,
        variant="a",
        compression="zstd",
        stored_size=10,
        size=20,
        flags=0x11,
        code_version=(1, 8),
        header_size=72,
        payload_offset=136,
        host="linux",
        debug=True,
        identifier="k.cu",
        options="-O3",
        relocatable_ptx=True,
        cubin=c,
        kernels=(k,),
        ptx_target="sm_90a",
        decode_error="cut",
    )
    pkg = model.Package("conda", "cupy", "13.0", "py311_cuda12", "linux-64", "12.4", "depends")
    return model.FileReport(
        path="/x/w.whl!a.so",
        format="elf",
        size=99,
        fatbins=(model.Fatbin(48, 300, ".nv_fatbin", (e,), "scan"),),
        error=model.FileError("bad", 7),
        needs=("libcudart.so.13",),
        notes=("n",),
        distribution=None,
        static_cudart=True,
        relocatable=True,
        package=pkg,
        sha256="ab" * 32,
        machine="aarch64",
        contents=(7, 1234),
        static_cudart_version="13.0",
    )


def test_record_data_round_trips_every_field():
    r = _every_field_set()
    for cls, obj in (
        (model.FileReport, r),
        (model.Fatbin, r.fatbins[0]),
        (model.Entry, r.fatbins[0].entries[0]),
        (model.Kernel, r.fatbins[0].entries[0].kernels[0]),
        (model.CubinInfo, r.fatbins[0].entries[0].cubin),
        (model.Package, r.package),
    ):
        defaults = cls.__new__(cls)  # every field must differ from its default, so none is dropped unseen
        for f in dataclasses.fields(cls):
            if f.name == "distribution":
                continue
            if f.default is not dataclasses.MISSING:
                assert getattr(obj, f.name) != f.default, (cls.__name__, f.name)
        del defaults
    import json

    back = report_from_data(json.loads(json.dumps(report_data(r, "/x/w.whl"))), "/y/w.whl")
    assert back == dataclasses.replace(r, path="/y/w.whl!a.so")


@pytest.mark.parametrize(
    "bad",
    [
        None,
        [],
        "x",
        [1] * 10,
        lambda d: d[:9],  # a field missing
        lambda d: [d[0], d[1], "99", *d[3:]],  # size as a string
        lambda d: [*d[:3], [[1, 2, None, "section", [["not", "an", "entry"]]]], *d[4:]],
        lambda d: [*d[:7], 1, *d[8:]],  # static_cudart as an int
    ],
)
def test_data_that_does_not_validate_is_refused(bad):
    good = report_data(_every_field_set(), "/x/w.whl")
    data = bad(list(good)) if callable(bad) else bad
    with pytest.raises(ValueError):
        report_from_data(data, "/y")


def test_cache_holds_no_pickle_and_a_planted_one_is_not_loaded(tree, tmp_path):
    cache = tmp_path / "cache"
    cold = _scan(tree, cache)
    db, rows = _rows(cache)
    assert rows
    for _path, summary, records in rows:  # data: parses as JSON, is no pickle
        import json

        json.loads(summary), json.loads(_unpacked(records))
    canary = tmp_path / "canary"

    class Evil:
        def __reduce__(self):
            return (open, (str(canary), "w"))

    db.execute("UPDATE files SET records = ?, summary = ?", (pickle.dumps(Evil()), pickle.dumps(Evil())))
    db.commit()
    db.close()
    warm = _scan(tree, cache)
    assert not canary.exists()
    assert warm.reports == cold.reports and warm.stats.cache_hits == 0


def test_a_row_with_wrong_shapes_is_a_miss(tree, tmp_path):
    cache = tmp_path / "cache"
    cold = _scan(tree, cache)
    db, _ = _rows(cache)
    wrong = b'["", "elf", "big"]'  # one record's data, of the wrong shape, packed as the row says
    db.execute(
        "UPDATE files SET records = ?, records_at = ? WHERE records IS NOT NULL",
        (_packed(wrong), json.dumps([[len(_packed(wrong)), len(wrong)]])),
    )
    db.commit()
    db.close()
    warm = _scan(tree, cache)
    assert warm.reports == cold.reports and warm.stats.cache_hits == 0
    assert _scan(tree, cache).stats.cache_hits == 2  # rewritten whole by the miss


def test_hostile_texts_are_a_miss(tree, tmp_path, monkeypatch):
    """A stored text holding a control character (a terminal escape) is not written through."""

    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    first = cli("scan", str(tree), "--format", "json", "-j", "1").out_bytes
    db = sqlite3.connect(str(tmp_path / "cache" / f"scan-v{CACHE_VERSION}.sqlite3"))
    n = db.execute("SELECT count(*) FROM files WHERE texts IS NOT NULL").fetchone()[0]
    assert n == 2
    for path, texts in db.execute("SELECT path, texts FROM files WHERE texts IS NOT NULL").fetchall():
        # a frame with a checksum (as this tool writes), the row's sizes hold: the read refuses ESC
        hostile = _checksummed(_unpacked(texts).replace(b"null", b"nul\x1b"))
        at = json.dumps([[len(hostile), len(_unpacked(texts))]])
        db.execute("UPDATE files SET texts = ?, texts_at = ? WHERE path = ?", (hostile, at, path))
    db.execute("DELETE FROM answers")  # (the scan's whole answer would not read the rows)
    db.commit()
    db.close()
    res = cli("scan", str(tree), "--format", "json", "-j", "1")
    assert b"\x1b" not in res.out_bytes  # the texts are made again (from the file: no records kept)
    assert res.out_bytes.split(b'"files": [')[1] == first.split(b'"files": [')[1]
    db = sqlite3.connect(str(tmp_path / "cache" / f"scan-v{CACHE_VERSION}.sqlite3"))
    assert not any(
        b"\x1b" in _unpacked(t) for (t,) in db.execute("SELECT texts FROM files WHERE texts IS NOT NULL")
    )
    db.close()


@pytest.mark.parametrize(
    "frame",
    [
        lambda text: _packed(text + b" "),  # declares a size other than the row's
        lambda text: zstandard.ZstdCompressor(write_content_size=False).compress(text),  # no size
        lambda text: _packed(text)[:-3],  # cut short
        lambda text: b"\x28\xb5\x2f\xfd\xc4" + (1 << 62).to_bytes(8, "little") + b"\0" * 8,  # 4 EiB
        lambda text: text,  # not packed at all
        # other printable bytes of the same size: in a frame without a checksum (not made by
        # pack_text, so never checked), and in one whose checksum is the true text's
        lambda text: _packed(text.replace(b"null", b"nil!")),
        _forged_checksum,
    ],
)
def test_packed_texts_that_do_not_declare_their_size_are_a_miss(tree, tmp_path, monkeypatch, frame):
    """A text's frame is unpacked only when its header declares the size the row gives: else the
    texts are made again from the row's data (the same bytes), never allocated blind."""

    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    args = ["scan", str(tree), "--format", "json", "-j", "1"]
    first = cli(*args).out_bytes
    db = sqlite3.connect(str(tmp_path / "cache" / f"scan-v{CACHE_VERSION}.sqlite3"))
    rows = db.execute("SELECT path, texts FROM files WHERE texts IS NOT NULL").fetchall()
    assert len(rows) == 2
    for path, texts in rows:  # the row gives the bad frame's length and the true text's size
        bad = frame(_unpacked(texts))
        at = json.dumps([[len(bad), len(_unpacked(texts))]])
        db.execute("UPDATE files SET texts = ?, texts_at = ? WHERE path = ?", (bad, at, path))
    db.execute("DELETE FROM answers")  # (the scan's whole answer would not read the rows)
    db.commit()
    db.close()
    again = cli(*args).out_bytes
    assert again.split(b'"files": [')[1] == first.split(b'"files": [')[1]


def test_a_text_is_checked_when_packed_and_only_a_checked_one_is_read_back():
    """``pack_text`` checks a text once; only a text that passed gets a checksummed frame, and
    ``unpack_texts`` takes only such frames, so a warm scan copies checked bytes unchecked."""
    from fatbin_inspect.scanning.cache import MISS, pack_text, unpack_texts

    good, bad = b'{"a": [1, 2]}\n', b'{"a": "\x1b[2J"}'
    late = b"[" + b"0," * (3 << 19) + b"\x07]"  # a control byte past the first MiB checked
    for text, checked in ((good, True), (bad, False), (late, False), (late[:-2] + b"]", True)):
        frame = pack_text(text)
        assert zstandard.get_frame_parameters(frame).has_checksum is checked
        at = json.dumps([[len(frame), len(text)]])
        assert unpack_texts((frame, at), 1) == ([text] if checked else MISS)
    frame = pack_text(good)
    flipped = frame[:-1] + bytes([frame[-1] ^ 1])  # the checksum no longer matches
    assert unpack_texts((flipped, json.dumps([[len(frame), len(good)]])), 1) is MISS


def test_cache_dir_is_private_and_a_shared_one_is_not_used(tree, tmp_path):
    old = os.umask(0o002)
    try:
        cache = tmp_path / "c"
        _scan(tree, cache)
        assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(cache / f"scan-v{CACHE_VERSION}.sqlite3").st_mode) & 0o077 == 0
        shared = tmp_path / "shared"
        shared.mkdir()
        os.chmod(shared, 0o775)
        res = _scan(tree, shared)
        again = _scan(tree, shared)
        assert res.stats.cache is None and again.stats.cache_hits == 0
        assert not os.listdir(shared)  # nothing written where others could have written first
    finally:
        os.umask(old)


def test_key_sees_a_same_size_rewrite_whose_mtime_was_put_back(tree, tmp_path):
    cache = tmp_path / "cache"
    lib = tree / "lib" / "libsm80.so"
    before = _scan(tree, cache)
    st = os.stat(lib)
    with open(MULTI, "rb") as fh:
        data = bytearray(fh.read()[: st.st_size].ljust(st.st_size, b"\0"))
    lib.write_bytes(bytes(data))  # same size, other content
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))  # what `touch -r` can do; ctime moves on
    after = _scan(tree, cache)
    assert after.stats.cache_hits == 1
    assert after.reports != before.reports


def test_non_utf8_file_names_are_cached_like_any_other(tmp_path):
    if os.name != "posix":
        pytest.skip("byte file names are a POSIX thing")
    t = tmp_path / "tree"
    t.mkdir()
    name = os.fsdecode(b"lib\xff\xfe.so")
    try:
        shutil.copyfile(SM80, os.path.join(str(t), name))
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses non-UTF-8 names")
    cache = tmp_path / "cache"
    cold = _scan(t, cache)
    warm = _scan(t, cache)
    assert [os.path.basename(r.path) for r in cold.reports] == [name]
    assert warm.stats.cache_hits == 1 and warm.reports == cold.reports
    c = ScanCache(str(cache), "x")
    assert c.enabled
    c.close()


def test_the_encoding_is_derived_from_the_dataclasses():
    """Every field of every stored record is in its codec, in declaration order (but the ones the
    scan fills in), so a new field needs no edit of record_data."""
    from fatbin_inspect.scanning.coverage import FileSummary
    from fatbin_inspect.scanning.record_data import NOT_STORED, codec

    records = (model.FileReport, model.Fatbin, model.Entry, model.Kernel, model.CubinInfo, model.Package)
    for cls in (*records, FileSummary):
        assert codec(cls).names == tuple(f.name for f in dataclasses.fields(cls) if f.name not in NOT_STORED)
    assert "distribution" in NOT_STORED and "path" not in NOT_STORED


def test_a_new_field_is_stored_and_checked_without_an_edit():
    """A record class the codec has never seen: its fields (nested records, optional and fixed
    tuples) round-trip, and a value of the wrong type is refused."""
    from fatbin_inspect.scanning.record_data import rebased_data, rebased_record

    @dataclasses.dataclass(frozen=True)
    class Extra:
        path: str
        count: int
        where: model.FileError | None = None
        sizes: tuple[int, ...] = ()
        pair: tuple[int, str] | None = None
        kernels: tuple[model.Kernel, ...] = ()
        flag: bool = False

    x = Extra("/a/b!m", 3, model.FileError("e", 4), (1, 2), (5, "s"), (model.Kernel("k", registers=8),), True)
    data = json.loads(json.dumps(rebased_data(x, "/a/b")))
    assert data[0] == "!m"
    assert rebased_record(Extra, data, "/c") == dataclasses.replace(x, path="/c!m")
    for i, wrong in ((1, "3"), (1, True), (3, [1, "2"]), (4, [5]), (5, [["k"]]), (6, 1), (2, ["e", "4"])):
        bad = list(data)
        bad[i] = wrong
        with pytest.raises(ValueError):
            rebased_record(Extra, bad, "/c")


def test_a_record_that_does_not_encode_leaves_the_others_their_data():
    """worker.encoded: a record outside the file's path is handed back whole (not cached), and
    the records after it still carry their packed data for the cache."""
    from fatbin_inspect.scanning.worker import encoded

    good = _every_field_set()
    stray = dataclasses.replace(good, path="/elsewhere/x.so")
    out = encoded([stray, good, good], "/x/w.whl", None, keep=False)
    assert out[0][0] is None and out[0][1] is None and out[0][3] is stray
    for item, data, _text, rec in out[1:]:
        assert item is not None and rec is None
        assert type(data) is bytes and json.loads(_unpacked(data))[0] == "!a.so"


@pytest.mark.parametrize("ahead", [None, 1])
def test_a_warm_document_mixing_cached_and_fresh_files_is_the_uncached_one(tmp_path, monkeypatch, ahead):
    """Cached texts (unpacked by a thread during the walk, at most ``AHEAD`` bytes of them held;
    1: one row at a time) and fresh ones (the spill file) interleave in path order: changed files
    between unchanged ones give the bytes of a scan without cache."""
    from fatbin_inspect.scanning.texts import Unpacker

    if ahead is not None:
        monkeypatch.setattr(Unpacker, "AHEAD", ahead)
    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    t = tmp_path / "t"
    t.mkdir()
    for i, src in enumerate([MULTI, SM80] * 3):
        shutil.copyfile(src, t / f"lib{i}.so")
    args = ["scan", str(t), "--format", "json", "-j", "1"]

    def files(res):
        return res.out_bytes.split(b'"files": [')[1]

    cli(*args)
    for i in (1, 4):  # every other run of cached files is cut by a fresh one
        shutil.copyfile(MULTI, t / f"lib{i}.so")
    warm = cli(*args)
    assert warm.json()["stats"]["cache_hits"] == 4
    assert files(warm) == files(cli(*args, "--no-cache"))
    assert files(cli(*args)) == files(warm)  # all six from the cache now


def test_texts_that_fail_and_a_file_that_reads_otherwise_drop_the_row(tree, tmp_path, monkeypatch):
    """A row holding texts only, whose texts no longer validate and whose file (same key) now
    gives other records: the scan stops with one line naming the cache, and the row is gone, so
    the next scan reads the file."""
    from fatbin_inspect.scanning import worker

    cache = tmp_path / "cache"
    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(cache))
    first = cli("scan", str(tree), "--format", "json", "-j", "1").out_bytes
    db = sqlite3.connect(str(cache / f"scan-v{CACHE_VERSION}.sqlite3"))
    for path, texts in db.execute("SELECT path, texts FROM files WHERE texts IS NOT NULL").fetchall():
        hostile = _checksummed(_unpacked(texts).replace(b"null", b"nul\x1b"))
        at = json.dumps([[len(hostile), len(_unpacked(texts))]])
        db.execute("UPDATE files SET texts = ?, texts_at = ? WHERE path = ?", (hostile, at, path))
    db.execute("DELETE FROM answers")
    db.commit()
    db.close()
    with monkeypatch.context() as m:
        m.setattr(worker, "inspect_file", lambda path, opts: ())
        res = cli("scan", str(tree), "--format", "json", "-j", "1", codes=2)
    assert "the scan cache changed while it was read" in res.err and b"\x1b" not in res.out_bytes
    assert len(_columns(cache)) < 2  # the row that failed is dropped
    again = cli("scan", str(tree), "--format", "json", "-j", "1").out_bytes
    assert again.split(b'"files": [')[1] == first.split(b'"files": [')[1]


def _texts_scan(tree, cache):
    """A scan as ``scan --format json`` runs it: each record's text encoded by the worker."""
    from fatbin_inspect.render.scan_json import file_rest, file_rest_parts

    opts = ScanOptions(
        jobs=1, cache_dir=str(cache), summary=True, encoder=file_rest, encoder_parts=file_rest_parts
    )
    return scan([str(tree)], opts)


def _columns(cache):
    """``{file name: (records kept, texts kept)}`` of the rows of files with device code."""
    db = sqlite3.connect(os.path.join(cache, f"scan-v{CACHE_VERSION}.sqlite3"))
    try:
        rows = db.execute(
            "SELECT path, records IS NOT NULL, texts IS NOT NULL FROM files WHERE summary IS NOT NULL"
        ).fetchall()
        db.execute("DELETE FROM answers")  # (a scan's whole answer would not read the rows)
        db.commit()
    finally:
        db.close()
    return {os.path.basename(os.fsdecode(p)): (bool(r), bool(t)) for p, r, t in rows}


def test_a_texts_scan_keeps_no_records_and_a_records_scan_adds_them_to_its_rows(tree, tmp_path):
    """A scan that keeps texts encodes no record data (a tenth of the CPU of a cold scan of six wheels);
    a scan that needs the records reads those files again and adds them to the row, which keeps
    its texts: from then on each kind of scan is answered by the row."""
    cache = tmp_path / "cache"
    _texts_scan(tree, cache)
    assert _columns(cache) == {"libmulti.so": (False, True), "libsm80.so": (False, True)}
    full = _scan(tree, cache)
    assert full.stats.cache_hits == 0 and full.reports == _scan(tree, None).reports
    assert _columns(cache) == {"libmulti.so": (True, True), "libsm80.so": (True, True)}
    assert _texts_scan(tree, cache).stats.cache_hits == 2
    again = _scan(tree, cache)
    assert again.stats.cache_hits == 2 and again.reports == full.reports


def test_a_row_keeps_the_other_scans_columns_only_for_the_same_key(tree, tmp_path):
    """The texts of a file that changed since they were written are not kept beside its new
    records (the key, not the path, says they are the same file's)."""
    cache = tmp_path / "cache"
    _texts_scan(tree, cache)
    lib = tree / "lib" / "libsm80.so"
    st = lib.stat()
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    _scan(tree, cache)
    assert _columns(cache) == {"libmulti.so": (True, True), "libsm80.so": (True, False)}
