"""Package databases are data, never programs (issue 53 item 2): a real ``rpmdb.sqlite`` (built by
``rpmbuild``, installed by ``rpm --root``) damaged with sqlite3 (its ``Packages`` a view, a virtual
table, generated columns, rows of other types, a huge blob, a trigger), a real dpkg database
(``dpkg --root``) with names and versions Debian does not allow, and ``conda-meta`` records with
values of the wrong type. Every scan runs in a child under an address-space limit and a timeout
(``hostile_runner``); a bad row costs its package (a note), never the scan."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from hostile_runner import run_many
from package_dbs import DEB_LIB, LIB_SRC, RPM_LIB, deb_install, rpm_file, rpm_install

__all__ = ["rpm_file"]  # the module fixture, used here

EVR = "cuda-cudart-12-4 2:12.4.127-1"


def scans(tmp_path: Path, roots: list[Path], setup: str = "") -> list[tuple[dict, str]]:
    """``scan ROOT --format json`` of each root in one child under the limits: (document, stderr)."""
    runs = run_many(
        tmp_path, [["scan", str(r), "--format", "json", "--no-cache", "-j1"] for r in roots], setup
    )
    return [(json.loads(r.out), r.stderr) for r in runs]


def owner(doc: dict, rel: str) -> str | None:
    (rec,) = [f for f in doc["files"] if f["path"].endswith("/" + rel)]
    return rec.get("distribution")


# ------------------------------------------------------------------------------------- rpm
def _damage(db: Path, *sql: str) -> None:
    con = sqlite3.connect(db)  # the test's own copy of a real database, made hostile
    for stmt in sql:
        con.execute(stmt)
    con.commit()
    con.close()


REBUILD = (  # Packages rebuilt with rpm's columns and no constraints, the real rows copied in
    "ALTER TABLE Packages RENAME TO Real",
    "CREATE TABLE Packages (hnum, blob)",
    "INSERT INTO Packages SELECT hnum, blob FROM Real",
)

CASES = {
    "view": (
        ["ALTER TABLE Packages RENAME TO Real", "CREATE VIEW Packages AS SELECT hnum, blob FROM Real"],
        "its Packages is a view, not a table: not read",
    ),
    "view of a huge blob": (
        [
            "ALTER TABLE Packages RENAME TO Real",
            "CREATE VIEW Packages AS SELECT hnum, zeroblob(900000000) AS blob FROM Real",
        ],
        "its Packages is a view, not a table: not read",
    ),
    "generated column": (
        [
            "ALTER TABLE Packages RENAME TO Real",
            "CREATE TABLE Packages (hnum INTEGER PRIMARY KEY, raw BLOB, "
            "blob BLOB GENERATED ALWAYS AS (zeroblob(900000000)) VIRTUAL)",
            "INSERT INTO Packages (hnum, raw) SELECT hnum, blob FROM Real",
        ],
        "its Packages holds generated columns: not read",
    ),
    "virtual table": (
        ["ALTER TABLE Packages RENAME TO Real", "CREATE VIRTUAL TABLE Packages USING fts5(hnum, blob)"],
        "its Packages is a virtual table: not read",
    ),
    "no rowid": (
        [
            "ALTER TABLE Packages RENAME TO Real",
            "CREATE TABLE Packages (hnum INTEGER PRIMARY KEY, blob BLOB) WITHOUT ROWID",
            "INSERT INTO Packages SELECT hnum, blob FROM Real",
        ],
        "its Packages has no rowid: not read",
    ),
    "no such columns": (
        ["ALTER TABLE Packages RENAME COLUMN blob TO data"],
        "its Packages has no hnum and blob columns: not read",
    ),
    "no table": (["DROP TABLE Packages"], "no Packages table: not read"),
}


@pytest.mark.slow
def test_an_rpm_packages_that_is_no_plain_table_is_not_read(tmp_path, rpm_file):
    roots = []
    for i, (stmts, _note) in enumerate(CASES.values()):
        root = tmp_path / f"root{i}"
        root.mkdir()
        rpm_install(root, rpm_file)
        _damage(root / "var/lib/rpm/rpmdb.sqlite", *stmts)
        roots.append(root)
    for (doc, err), (case, (_s, note)) in zip(scans(tmp_path, roots), CASES.items()):
        assert owner(doc, RPM_LIB) is None, case
        assert f"rpmdb.sqlite: {note}, its files unattributed" in err, (case, err)
        assert "Traceback" not in err and "internal error" not in err


@pytest.mark.slow
def test_rpm_rows_of_other_types_cost_their_package_only(tmp_path, rpm_file):
    """Rows whose blob is text, an integer, NULL, a real but oversized blob, or whose hnum is
    text, beside the real row: the real package is named, each bad row is counted in a note, and
    no blob over the bound is ever fetched (under 1 GiB of address space: a 40 MB zeroblob and
    SQLite's own length limit). A trigger on the table is never run: nothing is written."""
    root = tmp_path / "root"
    root.mkdir()
    rpm_install(root, rpm_file)
    db = root / "var/lib/rpm/rpmdb.sqlite"
    _damage(
        db,
        *REBUILD,
        "INSERT INTO Packages VALUES (100, 'a text header')",
        "INSERT INTO Packages VALUES (101, 42)",
        "INSERT INTO Packages VALUES (102, NULL)",
        "INSERT INTO Packages VALUES (103, zeroblob(40000000))",
        "INSERT INTO Packages SELECT 'abc', blob FROM Real",
        "CREATE TABLE Log (x)",
        "CREATE TRIGGER t AFTER INSERT ON Packages BEGIN INSERT INTO Log VALUES (randomblob(1000)); END",
    )
    before = db.read_bytes(), sorted(os.listdir(db.parent))
    ((doc, err),) = scans(tmp_path, [root])
    assert owner(doc, RPM_LIB) == EVR, err
    assert "rpmdb.sqlite header 100: hnum is integer and blob is text, not integer and blob" in err, err
    assert "rpmdb.sqlite: 5 rows or headers that do not parse, their packages unattributed" in err, err
    assert (db.read_bytes(), sorted(os.listdir(db.parent))) == before
    # the row over the bound, named
    con = sqlite3.connect(db)
    con.execute("DELETE FROM Packages WHERE hnum != 103")
    con.commit()
    con.close()
    ((doc, err),) = scans(tmp_path, [root])
    assert "rpmdb.sqlite header 103: 40000000 bytes, over the 33554432-byte limit" in err, err


@pytest.mark.slow
def test_rpm_rows_are_bounded(tmp_path, rpm_file):
    """``PACKAGES_MAX`` rows are read, then a note (the bound set to 3 in the child)."""
    root = tmp_path / "root"
    root.mkdir()
    rpm_install(root, rpm_file)
    _damage(
        root / "var/lib/rpm/rpmdb.sqlite", *REBUILD, *["INSERT INTO Packages SELECT NULL, blob FROM Real"] * 5
    )
    setup = "from fatbin_inspect.containers import packagedb; packagedb.PACKAGES_MAX = 3"
    ((doc, err),) = scans(tmp_path, [root], setup)
    assert owner(doc, RPM_LIB) == EVR
    assert "rpmdb.sqlite: over 3 packages: the rest unattributed" in err, err


# ------------------------------------------------------------------------------------ dpkg
@pytest.mark.slow
def test_dpkg_names_and_versions_debian_does_not_allow_are_a_note(tmp_path):
    root = tmp_path / "root"
    deb_install(tmp_path, root)
    status = root / "var/lib/dpkg/status"
    real = status.read_text()
    bad = "".join(
        f"\nPackage: {name}\nStatus: install ok installed\nVersion: {version}\n"
        for name, version in (
            ("Bad Name", "1.0"),
            ("ok-name", "1.0 beta"),
            ("x" * 300, "1"),
            ("z", "\x1b[31m"),
        )
    )
    status.write_text(real.rstrip("\n") + "\n" + bad)
    for name in ("Bad Name", "ok-name"):
        (root / f"var/lib/dpkg/info/{name}.list").write_text(f"/{DEB_LIB}\n")
    ((doc, err),) = scans(tmp_path, [root])
    assert owner(doc, DEB_LIB) == "libcublas-12-4 12.4.5.8-1", err
    assert "status: 4 installed packages whose Package or Version is not one Debian allows" in err, err


# ----------------------------------------------------------------------------------- conda
META = {
    "files a number": (
        {"name": "a", "version": "1", "build": "b", "files": 42},
        "files is a number, not a list",
    ),
    "files an object": ({"name": "a", "version": "1", "files": {"lib/libx.so": 1}}, "files is an object"),
    "files of numbers": (
        {"name": "a", "version": "1", "files": [1, None, "lib/libx.so"]},
        "2 entries of files",
    ),
    "name a number": ({"name": 5, "files": ["lib/libx.so"]}, "no package name"),
    "version an object": (
        {"name": "a", "version": {"x": 1}, "files": ["lib/libx.so"]},
        "version is an object",
    ),
    "depends a string": (
        {"name": "a", "version": "1", "depends": "cuda-version >=12", "files": []},
        "depends is a string",
    ),
    "not an object": ([1, 2, 3], "no package name"),
}


def test_conda_meta_values_of_the_wrong_type_are_notes(tmp_path):
    roots = []
    for i, (doc, _w) in enumerate(META.values()):
        prefix = tmp_path / f"env{i}"
        (prefix / "conda-meta").mkdir(parents=True)
        (prefix / "lib").mkdir()
        shutil.copy(LIB_SRC, prefix / "lib/libx.so")
        (prefix / "conda-meta/a-1-b.json").write_text(json.dumps(doc))
        roots.append(prefix)
    deep = tmp_path / "deep"
    shutil.copytree(roots[0], deep)
    (deep / "conda-meta/a-1-b.json").write_text("[" * 100_000)
    results = scans(tmp_path, [*roots, deep])
    for (out, err), (case, (doc, words)) in zip(results, META.items()):
        assert f"conda-meta/a-1-b.json: {words}" in err, (case, err)
        named = owner(out, "lib/libx.so")
        listed = isinstance(doc, dict) and isinstance(doc.get("files"), list) and doc.get("name") == "a"
        assert named == (
            "a ?" if "version an" in case else "a 1" if listed and "lib/libx.so" in doc["files"] else None
        ), (case, named)
    out, err = results[-1]
    assert owner(out, "lib/libx.so") is None and "a-1-b.json" in err and "unattributed" in err, err
