"""A scan's whole answer (``cache.Answer``): a rescan whose walk gives what it gave then takes one
row instead of one per file, and gives the document the rows give; anything the walk can see
changing (a file, an entry, a dangling symlink) is seen, the distributions are looked up again,
a hostile or broken answer is not used, and a scan that met an error keeps none."""

import json
import os
import shutil
import sqlite3

import pytest
import zstandard
from conftest import cli, fixture_path

from fatbin_inspect.scanning import cache as cache_mod
from fatbin_inspect.scanning.cache import CACHE_VERSION

MULTI = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")
SM80 = fixture_path("bin", "t01_exe_sm80")


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A site-packages with one distribution whose metadata lies above the root scanned
    (``site/pkg``), and the cache in a folder of its own."""
    sp = tmp_path / "lib" / "site-packages"
    (sp / "pkg" / "lib").mkdir(parents=True)
    shutil.copyfile(MULTI, sp / "pkg" / "lib" / "libmulti.so")
    shutil.copyfile(SM80, sp / "pkg" / "lib" / "libsm80.so")
    (sp / "pkg" / "notes.txt").write_bytes(b"nothing here\n" * 20)
    _dist(sp, "1.0")
    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    return sp


def _dist(sp, version):
    for old in sp.glob("pkg-*.dist-info"):
        shutil.rmtree(old)
    info = sp / f"pkg-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: pkg\nVersion: {version}\n\n")
    (info / "RECORD").write_text("pkg/lib/libmulti.so,,\npkg/lib/libsm80.so,,\n")


def _scan(root, *extra):
    return cli("scan", str(root), "--format", "json", "-j", "1", *extra, codes=0).out_bytes


def _doc(out: bytes) -> dict:
    d = json.loads(out)
    d["stats"].pop("seconds")
    return d


def _db(tmp_path):
    return sqlite3.connect(str(tmp_path / "cache" / f"scan-v{CACHE_VERSION}.sqlite3"))


def _answers(tmp_path) -> int:
    db = _db(tmp_path)
    try:
        return db.execute("SELECT count(*) FROM answers").fetchone()[0]
    finally:
        db.close()


def _forget_answers(tmp_path) -> None:
    db = _db(tmp_path)
    db.execute("DELETE FROM answers")
    db.commit()
    db.close()


def _refuse_rows(monkeypatch):
    """From here on, reading the per-file rows fails the test: the scan must take its answer."""

    def refuse(*_a, **_k):
        raise AssertionError("the scan read the per-file rows")

    monkeypatch.setattr(cache_mod.ScanCache, "preload", refuse)
    monkeypatch.setattr(cache_mod.ScanCache, "get", refuse)


def test_an_unchanged_tree_is_answered_by_one_row_as_the_file_rows_answer_it(site, tmp_path, monkeypatch):
    root = site / "pkg"
    cold = _doc(_scan(root))
    assert _answers(tmp_path) == 1
    assert cold["stats"]["cache_hits"] == 0
    _forget_answers(tmp_path)
    rows = _doc(_scan(root))  # from the per-file rows (and keeps the answer again)
    assert rows["stats"]["cache_hits"] == 2 and _answers(tmp_path) == 1
    _refuse_rows(monkeypatch)
    answered = _doc(_scan(root))
    assert answered == rows
    assert [f["distribution"] for f in answered["files"]] == ["pkg 1.0", "pkg 1.0"]
    cold["stats"]["cache_hits"] = 2
    assert answered == cold


def test_a_same_size_rewrite_whose_mtime_was_put_back_is_seen(site, tmp_path):
    root = site / "pkg"
    before = _doc(_scan(root))
    lib = root / "lib" / "libsm80.so"
    st = os.stat(lib)
    with open(MULTI, "rb") as fh:
        lib.write_bytes(fh.read()[: st.st_size].ljust(st.st_size, b"\0"))
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))  # the ctime moves on
    after = _doc(_scan(root))
    assert after["stats"]["cache_hits"] == 1  # libmulti.so from its row, libsm80.so read again
    assert after["files"] != before["files"]
    assert _doc(_scan(root))["files"] == after["files"]  # and answered so from then on


def test_a_new_file_and_a_removed_one_are_seen(site, tmp_path):
    root = site / "pkg"
    first = _doc(_scan(root))
    shutil.copyfile(SM80, root / "lib" / "libnew.so")
    second = _doc(_scan(root))
    assert len(second["files"]) == len(first["files"]) + 1
    assert second["stats"]["files"] == first["stats"]["files"] + 1
    (root / "lib" / "libnew.so").unlink()
    (root / "lib" / "libsm80.so").unlink()
    third = _doc(_scan(root))
    assert [os.path.basename(f["path"]) for f in third["files"]] == ["libmulti.so"]


def test_a_symlink_that_comes_to_dangle_is_seen(site, tmp_path):
    """The link itself does not change (its lstat is the same); what the walk makes of it does."""
    root = site / "pkg"
    target = tmp_path / "outside.txt"
    target.write_text("x")
    os.symlink(target, root / "link.txt")
    assert _doc(_scan(root))["stats"]["skipped"] == 0
    target.unlink()
    assert _doc(_scan(root))["stats"]["skipped"] == 1
    target.write_text("y")  # and that resolves again
    assert _doc(_scan(root))["stats"]["skipped"] == 0


def test_the_walk_digest_tells_every_stat_key_and_takes_an_inode_past_2_63():
    """Each listing's stat keys go into the digest as 64-bit integers, or as a list where one does
    not fit (a 64-bit inode number with its top bit set, as some network file systems give)."""
    from types import SimpleNamespace

    from fatbin_inspect.scanning.answers import WalkDigest

    def digest(**change):
        key = dict(st_dev=1, st_ino=2, st_size=3, st_mtime_ns=4, st_ctime_ns=5) | change
        walk = WalkDigest()
        walk.listed("d", [("a", SimpleNamespace(**key), None), ("b", None, "symlink")])
        return walk.digest()

    base = digest()
    for field in ("st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns"):
        assert digest(**{field: 9}) != base, field
    big = digest(st_ino=2**64 - 1)
    assert big != base and big == digest(st_ino=2**64 - 1)


def test_the_distributions_are_looked_up_again(site, tmp_path, monkeypatch):
    """The metadata lies above the root, outside the walk: a new version is named at once."""
    root = site / "pkg"
    _scan(root)
    _dist(site, "2.0")
    _refuse_rows(monkeypatch)
    assert [f["distribution"] for f in _doc(_scan(root))["files"]] == ["pkg 2.0", "pkg 2.0"]


def _checksummed(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


def _texts(db) -> tuple[list, bytes]:
    at, blob = db.execute("SELECT texts_at, texts FROM answers").fetchone()
    return json.loads(at), bytes(blob)


def _escape(db):
    """Every text with ESC in it, in frames with zstd's checksum, the sizes as the row gives."""
    sizes, blob = _texts(db)
    frames, pos = [], 0
    for f, _s in sizes:
        frames.append(zstandard.ZstdDecompressor().decompress(blob[pos : pos + f]))
        pos += f
    bad = [_checksummed(t.replace(b"null", b"nul\x1b")) for t in frames]
    at = json.dumps([[len(b), len(t)] for b, t in zip(bad, frames, strict=True)])
    db.execute("UPDATE answers SET texts = ?, texts_at = ?", (b"".join(bad), at))


def _cut(db):
    sizes, blob = _texts(db)
    db.execute("UPDATE answers SET texts = ?", (blob[:-3],))


def _sizes(db):
    sizes, blob = _texts(db)
    db.execute("UPDATE answers SET texts_at = ?", (json.dumps([[s[0], s[1] + 1] for s in sizes]),))


def _json(db):
    db.execute("UPDATE answers SET answer = ?", ("{not json",))


def _stats(db):
    (a,) = db.execute("SELECT answer FROM answers").fetchone()
    d = json.loads(a)
    d["stats"]["files"] = -1
    db.execute("UPDATE answers SET answer = ?", (json.dumps(d),))


def _item(db):
    (a,) = db.execute("SELECT answer FROM answers").fetchone()
    d = json.loads(a)
    item = d["files"][0][1][0]
    item[0] = 7  # its path (a string) as a number
    db.execute("UPDATE answers SET answer = ?", (json.dumps(d),))


def _fewer(db):
    (a,) = db.execute("SELECT answer FROM answers").fetchone()
    d = json.loads(a)
    d["files"] = d["files"][:1]  # items no longer add up to the texts
    db.execute("UPDATE answers SET answer = ?", (json.dumps(d),))


@pytest.mark.parametrize("tamper", [_escape, _cut, _sizes, _json, _stats, _item, _fewer])
def test_an_answer_that_does_not_check_out_is_not_used(site, tmp_path, tamper):
    root = site / "pkg"
    first = _scan(root)
    db = _db(tmp_path)
    tamper(db)
    db.commit()
    db.close()
    again = _scan(root)
    assert b"\x1b" not in again
    assert _doc(again)["files"] == _doc(first)["files"]
    assert _doc(again)["stats"]["files"] == _doc(first)["stats"]["files"]
    assert _doc(_scan(root)) == _doc(again)  # the answer kept anew by that scan


def test_a_scan_that_met_an_error_keeps_no_answer(site, tmp_path, monkeypatch):
    """A file that could not be opened is read again by the next scan, as without answers."""
    from fatbin_inspect.scanning import worker

    root = site / "pkg"
    real = worker.head_format

    def flaky(path):
        if path.endswith("libsm80.so"):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(worker, "head_format", flaky)
    bad = json.loads(cli("scan", str(root), "--format", "json", "-j", "1", codes=0).out_bytes)
    assert any(f.get("error") for f in bad["files"]) and _answers(tmp_path) == 0
    monkeypatch.setattr(worker, "head_format", real)
    good = _doc(_scan(root))
    assert not any(f.get("error") for f in good["files"]) and _answers(tmp_path) == 1


def test_other_options_and_other_roots_have_answers_of_their_own(site, tmp_path):
    root = site / "pkg"
    _scan(root)
    _scan(root / "lib")
    _scan(root, "--kernels")
    assert _answers(tmp_path) == 3
    lib_only = _doc(_scan(root / "lib"))
    assert lib_only["stats"]["files"] == 2


def test_wheels_images_and_table_scans_keep_no_answer(site, tmp_path):
    whl = tmp_path / "pkg-1.0-py3-none-any.whl"
    import zipfile

    with zipfile.ZipFile(whl, "w") as z:
        z.write(MULTI, "pkg/libmulti.so")
    _scan(whl)
    cli("scan", str(site / "pkg"), "-j", "1", codes=0)  # the table: per-file summaries only
    cli("scan", str(site / "pkg"), "--format", "json", "--gpu", "H100", "-j", "1", codes=(0, 1))
    assert _answers(tmp_path) == 0
