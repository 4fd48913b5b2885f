"""Issue 53 item 7: every output format takes every name. A file, member and package name that
holds bytes that are not UTF-8, control characters (ESC, CR, BEL) and a bidi override reaches
every command × format (``hostile_runner.every_command_format``), each run in a child under an
address-space limit and a timeout: the output is strict UTF-8 with no raw control or bidi
character, and the JSON documents (json, jsonl, sarif, cyclonedx) parse with no lone surrogate.
And a table's layout is linear in a name's length: a 100,000-character member name through
every table view ends within the timeout (it was quadratic: ~7 s for 10,000 characters in
``diff``, ~400 s projected for 100,000)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from builders import layer_tar, oci_layout, sample_fatbin, tar_archive, zip_archive
from conftest import fixture_path
from hostile_runner import every_command_format, run_many

LIB = fixture_path("bin", "t12_lib_sm86_c89.so")
BAD = "\udcff\x1b]0;pwned\x07\x1b[2J\r\u202eX"  # a non-UTF-8 byte, OSC, CSI, CR, a bidi override
RAW = ("\x1b", "\x07", "\r", "\u202e")
JSON_FORMATS = ("json", "jsonl", "sarif", "cyclonedx")
MEM = 1 << 30


def _hostile_tree(root) -> str:
    """A folder: a library named ``BAD``, a wheel holding a member named ``BAD`` (but its byte
    that is not UTF-8: zip names are text), and an image layout whose conda-meta package's name
    and version hold ``BAD`` (JSON's ``\\udcff`` escape: a lone surrogate, as a hostile image
    can write it)."""
    os.makedirs(root)
    shutil.copy(LIB, os.path.join(os.fsencode(root), os.fsencode(f"lib{BAD}.so")))
    with open(LIB, "rb") as fh:
        lib = fh.read()
    wheel = zip_archive(
        [(f"pkg/lib{BAD.replace(chr(0xDCFF), 'x')}.so", lib), ("pkg/k.fatbin", sample_fatbin())]
    )
    with open(os.path.join(root, "pkg-1.0-py3-none-any.whl"), "wb") as fh:
        fh.write(wheel)
    meta = {"name": f"evil{BAD}", "version": f"1{BAD}", "build": "0", "files": ["lib/libc.so"]}
    layer = layer_tar(
        [("opt/conda/lib/libc.so", lib), ("opt/conda/conda-meta/evil-1-0.json", json.dumps(meta).encode())]
    )
    oci_layout(os.path.join(root, "image"), [layer])
    return root


def _check(cmd: str, fmt: str | None, r) -> None:
    assert r.code in (0, 1, 2, 3, 4), (cmd, fmt, r)  # (4: verify without a GPU)
    text = r.out.decode("utf-8")  # strict: no raw byte that is not UTF-8
    if fmt == "html":
        return  # (HTML: its own escaping, asserted in test_html_report; a raw ESC is inert text there)
    for c in RAW:
        assert c not in text, (cmd, fmt, repr(c), text[:2000])
    for c in RAW:
        assert c not in r.stderr, (cmd, fmt, repr(c), r.stderr[:2000])
    if fmt in JSON_FORMATS and text.strip():
        docs = [json.loads(line) for line in text.splitlines()] if fmt == "jsonl" else [json.loads(text)]
        assert docs
        assert "\\udc" not in text.lower(), (cmd, fmt, text[:2000])


@pytest.mark.slow
def test_hostile_names_in_every_command_and_format(tmp_path):
    tree = _hostile_tree(str(tmp_path / "tree"))
    runs = every_command_format([tree], skip=("extract",))
    results = run_many(tmp_path, [argv for *_, argv in runs], mem=MEM, timeout=600)
    for (cmd, fmt, _argv), r in zip(runs, results):
        _check(cmd, fmt, r)
    by = {(cmd, fmt): r for (cmd, fmt, _a), r in zip(runs, results)}
    listed = json.loads(by[("list", "json")].out)
    (bad,) = [f for f in listed["files"] if "path_bytes" in f]
    assert bad["path"].endswith("lib\ufffd\x1b]0;pwned\x07\x1b[2J\r\u202eX.so")
    bom = json.loads(by[("list", "cyclonedx")].out)
    props = [
        {p["name"]: p["value"] for p in c.get("properties", [])}
        for c in bom["components"]
        if "fatbin-inspect:path-bytes" in {p["name"] for p in c.get("properties", [])}
    ]
    assert [p["fatbin-inspect:path-bytes"] for p in props] == [bad["path_bytes"]]
    scan_bom = json.loads(by[("scan", "cyclonedx")].out)
    (evil,) = [c for c in scan_bom["components"] if c["name"].startswith("evil")]
    assert evil["name"] == "evil\ufffd\x1b]0;pwned\x07\x1b[2J\r\u202eX"
    assert evil["purl"].startswith("pkg:conda/evil%EF%BF%BD%1B%5D0%3Bpwned%07")
    table = by[("scan", "table")].out.decode()  # each character escaped, none dropped
    assert "evil\\xff\\x1b]0;pwned\\x07\\x1b[2J\\x0d\\u202eX" in table, table


@pytest.mark.slow
def test_a_100k_character_name_is_laid_out_in_linear_time(tmp_path):
    """Every table view of a member named with 100,000 characters (a bound, not a speed test: the
    quadratic layout took minutes), unwrapped and wrapped to 120 columns."""
    name = "d/" + "a" * 50_000 + "/" + "b" * 50_000 + ".fatbin"
    for side in ("old", "new"):
        (tmp_path / f"{side}.tar").write_bytes(tar_archive([(name, sample_fatbin())]))
    old, new = str(tmp_path / "old.tar"), str(tmp_path / "new.tar")
    runs = [
        argv
        for cmd, fmt, argv in every_command_format([old, new], skip=("extract", "verify"))
        if fmt in (None, "table", "markdown")
    ]
    for env in ({}, {"COLUMNS": "120"}):
        results = run_many(tmp_path, runs, mem=MEM, timeout=240, env=env)
        for argv, r in zip(runs, results):
            assert r.code in (0, 1), (argv, r)
            assert "a" * 1000 in r.out.decode() or "a" * 100 in r.out.decode(), (argv, r)
