"""Files attributed to system packages (issue 24 item 6): a real rpm (built by ``rpmbuild``,
installed by ``rpm --root``: the sqlite ``rpmdb.sqlite`` rpm 4.16+ writes) and a real .deb
(``dpkg-deb --build``, ``dpkg --root``), in a system tree and inside OCI images built by umoci
(the database read from the image's final filesystem, across layers)."""

from __future__ import annotations

import os
import shutil
import sqlite3

import pytest
from conftest import cli
from image_tools import inside, layer_image, need, run, scan_json
from package_dbs import DEB_LIB, LIB_SRC, RPM_LIB, deb_install, rpm_file, rpm_install

from fatbin_inspect.containers import packagedb
from fatbin_inspect.errors import CorruptError
from fatbin_inspect.scanning import ScanOptions, scan

__all__ = ["rpm_file"]  # the module fixture, used here


def _cuda_records(root):
    result = scan([str(root)], ScanOptions(jobs=1, cache_dir=None))
    return {os.path.relpath(r.path, root): r for r in result.reports if r.fatbins}, result


# ------------------------------------------------------------------------------ system trees
@pytest.mark.slow
@pytest.mark.parametrize("dbpath", ["/var/lib/rpm", "/usr/lib/sysimage/rpm"])
def test_an_rpm_installed_cuda_library_is_named_with_its_version(tmp_path, rpm_file, dbpath):
    root = tmp_path / "root"
    root.mkdir()
    rpm_install(root, rpm_file, dbpath)
    if dbpath.startswith("/usr"):  # Fedora: var/lib/rpm is a link to the sysimage folder
        (root / "var/lib").mkdir(parents=True)
        os.symlink("../../usr/lib/sysimage/rpm", root / "var/lib/rpm")
    db = root / dbpath.lstrip("/") / "rpmdb.sqlite"
    before = sorted(os.listdir(db.parent)), db.read_bytes(), db.stat().st_mtime_ns
    recs, _ = _cuda_records(root)
    assert set(recs) == {RPM_LIB}
    rec = recs[RPM_LIB]
    assert rec.distribution == "cuda-cudart-12-4 2:12.4.127-1"  # rpm's EVR, as rpm -q shows it
    assert (rec.package.kind, rec.package.name) == ("rpm", "cuda-cudart-12-4")
    # read-only and immutable: nothing written to the database or beside it (no -shm, no -journal)
    assert (sorted(os.listdir(db.parent)), db.read_bytes(), db.stat().st_mtime_ns) == before
    # rpm's own answer agrees
    q = run(
        "rpm",
        "--root",
        str(root),
        "--dbpath",
        dbpath,
        "-qf",
        "--qf",
        "%{NAME} %{EPOCH}:%{VERSION}-%{RELEASE}",
        "/" + RPM_LIB,
    )
    assert q.stdout.strip() == rec.distribution


@pytest.mark.slow
def test_a_bad_rpm_header_costs_its_package_with_a_note(tmp_path, rpm_file):
    root = tmp_path / "root"
    root.mkdir()
    rpm_install(root, rpm_file)
    db = root / "var/lib/rpm/rpmdb.sqlite"
    con = sqlite3.connect(db)  # the test's own copy of a real database, made hostile
    (blob,) = con.execute("SELECT blob FROM Packages").fetchone()
    bad = bytearray(blob)
    bad[8 + 16 * 3 + 8 : 8 + 16 * 3 + 12] = (0x7FFFFFFF).to_bytes(4, "big")  # an entry's offset
    con.execute("INSERT INTO Packages (blob) VALUES (?)", (bytes(bad),))
    con.execute("INSERT INTO Packages (blob) VALUES (?)", (b"\x00\x00",))
    con.commit()
    con.close()
    recs, result = _cuda_records(root)
    assert recs[RPM_LIB].distribution == "cuda-cudart-12-4 2:12.4.127-1"
    notes = [n for n in result.notes if "rpmdb.sqlite header" in n]
    assert notes and "points outside the data" in notes[0], result.notes
    assert any("2 rows or headers that do not parse" in n for n in result.notes), result.notes


def _tree_with_lib(tmp_path):
    """A root with an empty ``var/lib/rpm`` and ``usr/lib64/libx.so`` (a CUDA library)."""
    root = tmp_path / "root"
    (root / "var/lib/rpm").mkdir(parents=True)
    (root / "usr/lib64").mkdir(parents=True)
    shutil.copy(LIB_SRC, root / "usr/lib64/libx.so")
    return root


def test_rpm_databases_of_other_formats_are_named_not_read(tmp_path):
    root = _tree_with_lib(tmp_path)
    (root / "var/lib/rpm/Packages").write_bytes(b"\x00\x06\x15\x61" + bytes(4092))  # Berkeley DB hash magic
    recs, result = _cuda_records(root)
    assert recs["usr/lib64/libx.so"].distribution is None
    assert any("rpm database format Berkeley DB not read" in n for n in result.notes), result.notes


def test_an_rpm_database_that_is_no_sqlite_file_is_a_note(tmp_path):
    root = _tree_with_lib(tmp_path)
    (root / "var/lib/rpm/rpmdb.sqlite").write_bytes(b"not a database" * 100)
    os.symlink("/etc/passwd", root / "var/lib/rpm/Packages")  # a link is never read
    recs, result = _cuda_records(root)
    assert recs["usr/lib64/libx.so"].distribution is None
    assert any("not an rpm sqlite database" in n for n in result.notes), result.notes
    assert not any("Berkeley" in n for n in result.notes)


def test_a_dpkg_database_that_cannot_be_read_is_a_note(tmp_path):
    """A real database (``dpkg --root -i``) whose ``status`` is then a FIFO, then gone: the
    library dpkg installed is unattributed, and the notes say why (not silently)."""
    root = tmp_path / "root"
    deb_install(tmp_path, root)
    recs, result = _cuda_records(root)
    assert recs[DEB_LIB].distribution == "libcublas-12-4 12.4.5.8-1" and not result.notes
    status = root / "var/lib/dpkg/status"
    status.unlink()
    os.mkfifo(status)  # never opened for reading: it would wait for a writer
    recs, result = _cuda_records(root)
    assert recs[DEB_LIB].distribution is None
    assert [n for n in result.notes if "dpkg" in n] == [
        f"{status}: not a regular file or unreadable: its dpkg packages' files unattributed"
    ], result.notes
    status.unlink()
    recs, result = _cuda_records(root)
    assert recs[DEB_LIB].distribution is None
    assert any(
        "var/lib/dpkg: no status file: the packages its file lists name unattributed" in n
        for n in result.notes
    )


@pytest.mark.parametrize(
    "db, kind",
    [("var/lib/dpkg/status.d/libcublas", "dpkg status.d (distroless)"), ("usr/lib/apk/db/installed", "apk")],
)
def test_package_databases_not_read_are_named(tmp_path, db, kind):
    """A distroless image's dpkg ``status.d/`` and an apk database (Wolfi: ``lib`` links to
    ``usr/lib``): not read, so the library stays unattributed, and a note names the database."""
    root = _tree_with_lib(tmp_path)
    os.symlink("usr/lib", root / "lib")
    (root / db).parent.mkdir(parents=True, exist_ok=True)
    (root / db).write_text("P:libcublas\nV:12.4.5.8-r0\n\n")
    recs, result = _cuda_records(root)
    assert recs["usr/lib64/libx.so"].distribution is None
    where = str(root / db) if kind == "apk" else str(root / "var/lib/dpkg/status.d")
    assert f"{where}: {kind} package database not read: its files unattributed" in result.notes, result.notes


def test_rpm_header_bounds():
    with pytest.raises(CorruptError, match="shorter"):
        packagedb.rpm_header(b"\x00\x00\x00")
    with pytest.raises(CorruptError, match="do not fit"):
        packagedb.rpm_header((1).to_bytes(4, "big") + (100).to_bytes(4, "big") + bytes(16))
    # a string that runs past the data
    entry = (1000).to_bytes(4, "big") + (6).to_bytes(4, "big") + bytes(4) + (1).to_bytes(4, "big")
    with pytest.raises(CorruptError, match="runs past"):
        packagedb.rpm_header((1).to_bytes(4, "big") + (3).to_bytes(4, "big") + entry + b"abc")


# ------------------------------------------------------------------------------ images
def _bundle(tmp_path, name="L"):
    need("umoci")
    lay, bundle = str(tmp_path / name), tmp_path / f"{name}-bundle"
    run("umoci", "init", "--layout", lay)
    run("umoci", "new", "--image", f"{lay}:base")
    run("umoci", "unpack", "--rootless", "--image", f"{lay}:base", str(bundle))
    return lay, bundle


def _repack(lay, bundle, tag):
    run("umoci", "repack", "--image", f"{lay}:{tag}", str(bundle))
    shutil.rmtree(bundle)
    run("umoci", "unpack", "--rootless", "--image", f"{lay}:{tag}", str(bundle))


@pytest.mark.slow
def test_rpm_and_dpkg_packages_inside_an_image_are_named(tmp_path, rpm_file):
    """Layer 1: an rpm-installed library; layer 2: a dpkg-installed one and a library no package
    lists; layer 3: the rpm removed again by ``rpm -e`` (files and database), which the final
    filesystem of tag t3 shows."""
    lay, bundle = _bundle(tmp_path)
    rootfs = bundle / "rootfs"
    rpm_install(rootfs, rpm_file)
    _repack(lay, bundle, "t1")
    deb_install(tmp_path, rootfs)
    (rootfs / "opt").mkdir()
    shutil.copy(LIB_SRC, rootfs / "opt" / "libstray.so")
    _repack(lay, bundle, "t2")
    run(
        "rpm",
        "--root",
        str(rootfs),
        "--dbpath",
        "/var/lib/rpm",
        "-e",
        "--nodeps",
        "--noscripts",
        "cuda-cudart-12-4",
    )
    _repack(lay, bundle, "t3")

    rc, doc, err = scan_json(f"{lay}:t2")
    assert rc == 0, err
    got = {inside(f["path"]): f["distribution"] for f in doc["files"]}
    assert got == {
        RPM_LIB: "cuda-cudart-12-4 2:12.4.127-1",
        DEB_LIB: "libcublas-12-4 12.4.5.8-1",
        "opt/libstray.so": None,
    }
    rc, doc, err = scan_json(f"{lay}:t3")
    assert {inside(f["path"]): f["distribution"] for f in doc["files"]} == {
        DEB_LIB: "libcublas-12-4 12.4.5.8-1",
        "opt/libstray.so": None,
    }
    # the same answers as the unpacked filesystem gives
    recs, _ = _cuda_records(rootfs)
    assert {p: r.distribution for p, r in recs.items()} == {
        DEB_LIB: "libcublas-12-4 12.4.5.8-1",
        "opt/libstray.so": None,
    }


@pytest.mark.slow
def test_a_dpkg_package_an_upper_layer_removes_is_no_owner(tmp_path):
    """dpkg --purge in an upper layer deletes the .list (a whiteout) and rewrites status: the
    library copied back by hand in that layer is nobody's."""
    lay, bundle = _bundle(tmp_path)
    rootfs = bundle / "rootfs"
    deb_install(tmp_path, rootfs)
    _repack(lay, bundle, "t1")
    run(
        "dpkg",
        f"--root={rootfs}",
        "--force-script-chrootless",
        "--log=/dev/null",
        "--purge",
        "libcublas-12-4",
    )
    (rootfs / DEB_LIB).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(LIB_SRC, rootfs / DEB_LIB)
    _repack(lay, bundle, "t2")
    _, doc, _ = scan_json(f"{lay}:t1")
    assert {inside(f["path"]): f["distribution"] for f in doc["files"]} == {
        DEB_LIB: "libcublas-12-4 12.4.5.8-1"
    }
    _, doc, _ = scan_json(f"{lay}:t2")
    assert {inside(f["path"]): f["distribution"] for f in doc["files"]} == {DEB_LIB: None}


@pytest.mark.slow
def test_the_sbom_names_system_packages_by_their_purl_type(tmp_path, rpm_file):
    import json

    root = tmp_path / "root"
    root.mkdir()
    rpm_install(root, rpm_file)
    deb_install(tmp_path, root)
    ran = cli("scan", "--no-cache", "--format", "cyclonedx", str(root))
    rc, out, err = ran.code, ran.out, ran.err
    assert rc == 0, err
    purls = {c.get("purl") for c in json.loads(out)["components"]}
    assert {"pkg:rpm/cuda-cudart-12-4@12.4.127-1?epoch=2", "pkg:deb/libcublas-12-4@12.4.5.8-1"} <= purls


@pytest.mark.slow
def test_merged_usr_links_are_followed_for_listed_files(tmp_path):
    """Debian 12 / Ubuntu 22.04 link lib -> usr/lib: dpkg lists /lib/x86_64-linux-gnu/libcudnn.so.9
    and writes it through the link to usr/lib/...; the tree and the image both name its package."""
    lay, bundle = _bundle(tmp_path)
    rootfs = bundle / "rootfs"
    (rootfs / "usr/lib").mkdir(parents=True)
    os.symlink("usr/lib", rootfs / "lib")
    deb_install(tmp_path, rootfs, "lib/x86_64-linux-gnu/libcudnn.so.9", "libcudnn9-cuda-12", "9.1.0.70-1")
    real = "usr/lib/x86_64-linux-gnu/libcudnn.so.9"
    assert (rootfs / real).is_file() and (rootfs / "lib").is_symlink()
    assert (
        "/lib/x86_64-linux-gnu/libcudnn.so.9"
        in (rootfs / "var/lib/dpkg/info/libcudnn9-cuda-12.list").read_text()
    )
    recs, _ = _cuda_records(rootfs)
    assert {p: r.distribution for p, r in recs.items()} == {real: "libcudnn9-cuda-12 9.1.0.70-1"}
    _repack(lay, bundle, "t")
    _, doc, _ = scan_json(f"{lay}:t")
    assert {inside(f["path"]): f["distribution"] for f in doc["files"]} == {
        real: "libcudnn9-cuda-12 9.1.0.70-1"
    }


@pytest.mark.slow
def test_an_unchecked_write_ahead_log_is_named(tmp_path, rpm_file):
    """A live rpmdb.sqlite-wal (a writer's connection still open, no checkpoint) is not read:
    the packages the database itself holds are named, and a note says what may be missing."""
    lay, bundle = _bundle(tmp_path)
    rootfs = bundle / "rootfs"
    rpm_install(rootfs, rpm_file)
    db = rootfs / "var/lib/rpm/rpmdb.sqlite"
    con = sqlite3.connect(db)  # the test's own database, as a writer leaves it mid-transaction log
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    (blob,) = con.execute("SELECT blob FROM Packages").fetchone()
    con.execute("INSERT INTO Packages (blob) VALUES (?)", (blob,))
    con.commit()
    try:
        wal = db.parent / "rpmdb.sqlite-wal"
        assert wal.stat().st_size > 0
        recs, result = _cuda_records(rootfs)
        assert recs[RPM_LIB].distribution == "cuda-cudart-12-4 2:12.4.127-1"
        assert any("write-ahead log" in n and "not read" in n for n in result.notes), result.notes
        run("umoci", "repack", "--image", f"{lay}:t", str(bundle))
    finally:
        con.close()
    _, doc, err = scan_json(f"{lay}:t")
    assert {inside(f["path"]): f["distribution"] for f in doc["files"]} == {
        RPM_LIB: "cuda-cudart-12-4 2:12.4.127-1"
    }

    ran = cli("list", f"{lay}:t")  # the image's notes, where list shows them

    rc, out, err = ran.code, ran.out, ran.err
    assert rc == 0 and "rpmdb.sqlite-wal: a write-ahead log of" in out, out + err


@pytest.mark.slow
def test_an_image_with_a_distroless_dpkg_database_says_so(tmp_path):
    """gcr.io/distroless's var/lib/dpkg/status.d/ (one file per package) in an image: one note."""
    with open(LIB_SRC, "rb") as fh:
        lib = fh.read()
    para = b"Package: libcublas\nVersion: 12.4.5.8-1\nArchitecture: amd64\n"
    ref = layer_image(
        tmp_path,
        [
            ("var/lib/dpkg/status.d/libcublas", para),
            ("var/lib/dpkg/status.d/libcublas.md5sums", b"0" * 32 + b"  usr/lib64/libx.so\n"),
            ("usr/lib64/libx.so", lib),
        ],
    )
    out = cli("list", ref).out
    assert out.count("var/lib/dpkg/status.d: dpkg status.d (distroless) package database not read") == 1, out
    # dpkg's file lists without its status file (a layer removed it): the lists name no version
    ref = layer_image(
        tmp_path / "lists",
        [("var/lib/dpkg/info/libcublas.list", b"/usr/lib64/libx.so\n"), ("usr/lib64/libx.so", lib)],
    )
    out = cli("list", ref).out
    assert "var/lib/dpkg: no status file: the packages its file lists name unattributed" in out, out


@pytest.mark.slow
def test_an_image_with_a_berkeley_db_rpm_database_says_so(tmp_path):
    """CentOS 7's var/lib/rpm/Packages in an image: not read, named in the image's notes."""
    with open(LIB_SRC, "rb") as fh:
        lib = fh.read()
    ref = layer_image(
        tmp_path, [("var/lib/rpm/Packages", b"\x00\x06\x15\x61" + bytes(4092)), ("usr/lib64/libx.so", lib)]
    )
    rc, doc, _ = scan_json(ref)
    assert rc == 0 and [(inside(f["path"]), f["distribution"]) for f in doc["files"]] == [
        ("usr/lib64/libx.so", None)
    ]
    ran = cli("list", ref)
    rc, out, err = ran.code, ran.out, ran.err
    assert "var/lib/rpm/Packages: rpm database format Berkeley DB not read" in out, out + err
