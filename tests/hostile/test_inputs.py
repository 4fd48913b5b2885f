"""Hostile inputs, round two (issue 11): what an input says never reaches the terminal, the disk
or the interpreter, and every input gets one bounded budget.

Every command runs in a child process under a memory limit (RLIMIT_AS) and a wall-clock bound
(the subprocess timeout: a bound, not a speed assertion). The class tests iterate over the
command table (``cli.main.COMMANDS``) and each command's ``--format`` choices, so a new command
or format is covered by construction: every renderer x a name full of control characters and
markup, every command with ``-o`` pointed at one of its inputs.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
import zipfile

import builders as B
import pytest
from conftest import ROOT
from hostile_runner import TIMEOUT, argv_for, commands, formats, run1, run_many

# ------------------------------------------------------------------------ hostile text
ESC_TITLE = "\x1b]0;owned\x07"  # set the window title
OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # write the clipboard
CLEAR = "\x1b[2J\x1b[H"
MARKUP = "[/][link=https://evil.invalid]click[/link][conceal]hidden[/conceal][bold"
BIDI = "\u202egnp.exe\u202c\u2066"
FORGE = "\r\nfatbin-inspect: all good\r"
HOSTILE = f"ev{ESC_TITLE}{CLEAR}{MARKUP}{BIDI}{OSC52}il`<img src=x onerror=alert(1)>`|{FORGE}\x9b"
HOSTILE_KERNEL = f"_Z1k{OSC52}{MARKUP}"

_SGR = re.compile(rb"\x1b\[[0-9;]*m")
_FORBIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def assert_inert(data: bytes, what: str, color: bool = False) -> str:
    """Valid UTF-8 with no control (but LF/TAB), bidi or surrogate character; with colour, only
    SGR sequences (``ESC [ ... m``) may carry an ESC."""
    if color:
        data = _SGR.sub(b"", data)
    text = data.decode("utf-8")  # strict: never raw undecodable bytes in a report
    bad = _FORBIDDEN.search(text)
    assert bad is None, (
        f"{what}: raw {bad.group(0)!r} at {bad.start()}: {text[max(0, bad.start() - 80) : bad.start() + 80]!r}"
    )
    return text


def hostile_binary() -> bytes:
    """A host ELF whose fatbin carries hostile identifier, options and kernel names."""
    fb = B.fatbin(
        [
            B.entry(B.KIND_ELF, 80, B.cubin(80, [HOSTILE_KERNEL]), identifier=HOSTILE[:60]),
            B.entry(
                B.KIND_PTX, 80, B.ptx_text((7, 0), "sm_80"), code=(7, 0), identifier=HOSTILE, options=HOSTILE
            ),
        ]
    )
    return B.host_elf([(".nv_fatbin", fb)])


def hostile_tree(tmp_path):
    """A folder with a hostile-named binary (control characters, markup, a non-UTF-8 byte) and a
    wheel whose member names are hostile too."""
    d = tmp_path / "in"
    d.mkdir()
    name = os.fsencode(str(d)) + b"/" + HOSTILE.replace("/", "").encode() + b"\xff.so"  # [/] in members
    with open(name, "wb") as fh:
        fh.write(hostile_binary())
    member = f"pkg/{HOSTILE}.so"
    (d / "hostile-1.0-py3-none-any.whl").write_bytes(B.zip_archive([(member, hostile_binary())]))
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(
        fileobj=buf, mode="w", format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape"
    ) as tf:
        data = hostile_binary()
        ti = tarfile.TarInfo(os.fsdecode(b"layer/k\xfe" + HOSTILE[:20].encode() + b".so"))
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    (d / "image.tar").write_bytes(buf.getvalue())
    return d


# ------------------------------------------------------------------ the class tests
@pytest.mark.slow
def test_every_renderer_shows_hostile_text_inert(tmp_path):
    """Every command x every --format on names, identifiers, options and kernel names full of
    terminal escapes, rich markup, bidi overrides, CR/LF and non-UTF-8 bytes: valid UTF-8 out,
    nothing raw, no crash (a ``[/]`` used to be a MarkupError, exit 2)."""
    d = hostile_tree(tmp_path)
    runs, what = [], []
    for name, cmd in commands():
        base = argv_for(name, cmd, [str(d)])
        if base is None or name == "verify":
            continue  # verify needs a GPU
        for fmt in formats(cmd):
            extra = ["--kernels"] if name == "list" else []
            runs.append([*base, *extra, "--format", fmt, "-o", str(tmp_path / f"{name}.{fmt}")])
            what.append((name, fmt, "file"))
            runs.append([*base, *extra, "--format", fmt])
            what.append((name, fmt, "stdout"))
    color = [r for r, w in zip(runs, what, strict=False) if w[1] == "table" and w[2] == "stdout"]
    results = run_many(tmp_path, runs, timeout=120)
    colored = run_many(tmp_path, color, env={"FORCE_COLOR": "1"})
    for (name, fmt, where), r in zip(what, results, strict=False):
        assert r.code in (0, 1), (name, fmt, r)
        data = r.out if where == "stdout" else (tmp_path / f"{name}.{fmt}").read_bytes()
        text = assert_inert(data, f"{name} --format {fmt} ({where})")
        assert_inert(r.err, f"{name} --format {fmt} stderr")
        assert "\nfatbin-inspect: all good" not in text and "\nfatbin-inspect: all good" not in r.stderr
        if fmt in ("json", "sarif") or fmt == "jsonl":
            for line in text.splitlines() if fmt == "jsonl" else [text]:
                doc = json.loads(line)
                assert "\\udc" not in json.dumps(doc), (name, fmt)  # no lone surrogate
    for r in colored:
        assert r.code in (0, 1), r
        text = assert_inert(r.out, f"{r} colour", color=True)
        assert "\x1b]8;" not in text  # no hyperlink from [link=...]
    listing = (tmp_path / "list.table").read_text()
    assert "[/]" in listing and "\\x1b]0;owned" in listing and "\\xff" in listing  # shown, not obeyed


@pytest.mark.slow
def test_every_command_refuses_an_output_that_is_an_input(tmp_path):
    """``-o`` naming an input (or a file inside an input folder that was read) is refused before
    anything is written; the input keeps its bytes."""
    for name, cmd in commands():
        if not any(p.name == "output" for p in cmd.params):
            continue
        src = tmp_path / f"{name}.so"
        src.write_bytes(hostile_binary())
        before = src.read_bytes()
        base = argv_for(name, cmd, [str(src)])
        if base is None:
            continue
        r = run1(tmp_path, *base, "-o", str(src))
        assert src.read_bytes() == before, name
        if name == "verify" and r.code == 4:
            continue  # no GPU here: refused earlier, the input untouched all the same
        assert r.code == 2 and "it is an input" in r.stderr, (name, r)
        # through a folder: the file was read as one of the folder's files
        r = run1(tmp_path, *argv_for(name, cmd, [str(tmp_path)]), "-o", str(src))
        assert src.read_bytes() == before, name
        assert r.code == 2 and "it is an input" in r.stderr, (name, r)


def test_markdown_and_job_summary_neutralise_member_names(tmp_path):
    """A backtick in a member name cannot close the code span and let raw HTML in; CR cannot
    split a table row; ``--format github`` appends the summary exactly once."""
    from markdown_it import MarkdownIt

    d = tmp_path / "w"
    d.mkdir()
    bad = "pkg/x`<img src=x onerror=alert(1)>`\r| forged | row |\r.so"
    (d / "x-1.0-py3-none-any.whl").write_bytes(B.zip_archive([(bad, hostile_binary())]))
    summary = tmp_path / "summary.md"
    runs = [
        ["gate", str(d), "--require", "sm_90", "--isolated", "--format", "markdown"],
        ["gate", str(d), "--require", "sm_90", "--isolated", "--format", "github"],
        ["check", str(d), "--gpu", "H100", "--format", "github"],
        ["diff", str(d), str(d), "--format", "github"],
    ]
    results = run_many(tmp_path, runs, env={"GITHUB_STEP_SUMMARY": str(summary)})
    md = results[0].out.decode()
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert ("<img" not in html and "onerror" not in html.replace("onerror=alert", "")) or "&lt;img" in html
    assert "<img" not in html
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    assert len(rows) > 2 and all(
        r.count("<td") == 5 for r in rows if "<td" in r and "fail" not in r and "pass" not in r
    )
    assert "<td>forged</td>" not in html.replace(" ", "")
    text = summary.read_text()
    assert text.count("## fatbin-inspect gate") == 1 and text.count("## fatbin-inspect check") == 1
    assert text.count("## fatbin-inspect diff") == 1


# --------------------------------------------------------------------------- outputs
def test_extract_never_writes_through_a_planted_symlink(tmp_path):
    src = tmp_path / "k.fatbin"
    src.write_bytes(B.sample_fatbin())
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me")
    r = run1(tmp_path, "extract", str(src), "-d", str(out))
    names = sorted(os.listdir(out))
    assert r.code == 0 and len(names) == 2, r
    for n in names:  # plant symlinks where the images will be written again
        os.unlink(out / n)
        os.symlink(victim, out / n)
    r = run1(tmp_path, "extract", str(src), "-d", str(out))
    assert victim.read_bytes() == b"keep me"
    assert r.code == 2 and "exists already" in r.stderr, r  # nothing written: refused per entry
    r = run1(tmp_path, "extract", str(src), "-d", str(out), "--force")
    assert r.code == 0 and victim.read_bytes() == b"keep me", r
    assert not any(os.path.islink(out / n) for n in names)  # the links were replaced, not followed


def test_extract_names_are_unique_per_input_path(tmp_path):
    for sub in ("x", "y"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "k.fatbin").write_bytes(B.sample_fatbin())
    whl = tmp_path / "w.whl"
    whl.write_bytes(B.zip_archive([("a/k.fatbin", B.sample_fatbin()), ("b/k.fatbin", B.sample_fatbin())]))
    out = tmp_path / "out"
    r = run1(tmp_path, "extract", str(tmp_path / "x"), str(tmp_path / "y"), str(whl), "-d", str(out))
    assert r.code == 0, r
    assert len(os.listdir(out)) == 8 and "8 images written" in r.stderr, (os.listdir(out), r)


def test_extract_long_member_names_fit_and_every_entry_is_written(tmp_path):
    """Base names over 255 bytes (an internal error that stopped the rest before) are shortened,
    made unique by a hash when two shortened names meet; every entry is written."""
    longs = ["pkg/" + "k" * 300 + ".fatbin", "pkg/" + "k" * 301 + ".fatbin"]
    whl = tmp_path / "w.whl"
    whl.write_bytes(
        B.zip_archive([(n, B.sample_fatbin()) for n in longs] + [("pkg/ok.fatbin", B.sample_fatbin())])
    )
    r = run1(tmp_path, "extract", str(whl), "-d", str(tmp_path / "out"))
    names = os.listdir(tmp_path / "out")
    assert r.code == 0 and "6 images written" in r.stderr and len(names) == 6, r
    assert all(len(n.encode()) <= 255 for n in names)


def test_extract_fails_when_every_input_failed(tmp_path):
    (tmp_path / "bad.fatbin").write_bytes(B.fatbin([b"\x01" * 70]))
    (tmp_path / "cut.so").write_bytes(hostile_binary()[:100])
    r = run1(
        tmp_path, "extract", str(tmp_path / "bad.fatbin"), str(tmp_path / "cut.so"), "-d", str(tmp_path / "o")
    )
    assert r.code == 2 and "0 images written" in r.stderr, r


def test_unwritable_output_is_a_clear_error(tmp_path):
    src = tmp_path / "k.fatbin"
    src.write_bytes(B.sample_fatbin())
    runs = [
        ["list", str(src), "-o", str(src / "r.json"), "--format", "json"],  # under a file (root can't either)
        ["list", str(src), "-o", str(tmp_path / "missing" / "r.txt")],
        ["list", str(src), "-o", str(tmp_path)],
    ]
    for r in run_many(tmp_path, runs):
        assert r.code == 2 and "cannot write" in r.stderr and "rerun with --debug" not in r.stderr, r


def test_report_is_written_atomically_and_keeps_no_temporary(tmp_path):
    src = tmp_path / "k.fatbin"
    src.write_bytes(B.sample_fatbin())
    out = tmp_path / "r.json"
    out.write_text("old report")
    link = tmp_path / "link.json"
    victim = tmp_path / "victim"
    victim.write_text("keep")
    os.symlink(victim, link)
    plain, linked = run_many(
        tmp_path, [["list", str(src), "--format", "json", "-o", p] for p in (str(out), str(link))]
    )
    assert plain.code == 0, plain
    assert json.loads(out.read_text())["schema_version"] == 1
    # a planted link is refused (issue 23): neither followed nor replaced
    assert linked.code == 2 and "symbolic link" in linked.stderr, linked
    assert victim.read_text() == "keep" and os.path.islink(link)
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


# -------------------------------------------------------------------- non-UTF-8 names
def test_non_utf8_names_in_every_format_and_json_keeps_the_bytes(tmp_path):
    d = tmp_path / "n"
    d.mkdir()
    raw = os.fsencode(str(d)) + b"/lib\xff\xfe.so"
    with open(raw, "wb") as fh:
        fh.write(hostile_binary())
    runs = [["list", str(d), "--format", "json"]]
    for name in ("gate", "check"):
        cmd = dict(commands())[name]
        for fmt in formats(cmd):
            runs.append(
                [*argv_for(name, cmd, [str(d)]), "--format", fmt, "-o", str(tmp_path / f"{name}.{fmt}")]
            )
    results = run_many(tmp_path, runs)
    doc = json.loads(results[0].out)
    f = next(x for x in doc["files"] if "lib" in x["path"])
    assert f["path"].endswith("lib\ufffd\ufffd.so") and bytes.fromhex(f["path_bytes"]) == raw
    for argv, r in zip(runs[1:], results[1:], strict=False):
        assert r.code in (0, 1), (argv, r)
        with open(argv[-1], "rb") as fh:
            assert_inert(fh.read(), argv[-3])
    sarif = json.loads((tmp_path / "gate.sarif").read_text())
    uri = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.endswith("lib%FF%FE.so"), uri  # percent-encoded exact bytes: the file it names


def test_bang_in_a_real_file_name_is_not_a_member_separator(tmp_path):
    """``a!b.so`` is a file, not member ``b.so`` of ``a``: SARIF and ``::error file=`` name it."""
    (tmp_path / "a!b.so").write_bytes(hostile_binary())
    (tmp_path / "w!x.whl").write_bytes(B.zip_archive([("pkg/m!n.so", hostile_binary())]))
    runs = [
        ["gate", "a!b.so", "w!x.whl", "--require", "sm_90", "--isolated", "--format", "sarif"],
        ["gate", "a!b.so", "w!x.whl", "--require", "sm_90", "--isolated", "--format", "github"],
        ["list", "a!b.so", "w!x.whl", "--format", "json"],
    ]
    sarif, github, listing = run_many(tmp_path, runs)
    uris = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for res in json.loads(sarif.out)["runs"][0]["results"]
        for loc in res["locations"]
    }
    assert uris == {"a%21b.so", "w%21x.whl"}, uris
    files = set(re.findall(r"file=([^,]+),", github.out.decode()))
    assert files == {"a!b.so", "w!x.whl"} and all(os.path.exists(tmp_path / f) for f in files)
    paths = {f["path"] for f in json.loads(listing.out)["files"]}
    assert "w\\!x.whl!pkg/m\\!n.so" in paths and "a\\!b.so" in paths, paths
    from fatbin_inspect.inventory import member_path

    assert member_path.split("w\\!x.whl!pkg/m\\!n.so") == ["w!x.whl", "pkg/m!n.so"]


# ------------------------------------------------------------------------- budgets
def test_nested_zip_bomb_ends_quickly_with_one_line(tmp_path):
    """4 levels x 16 copies x 64 MiB of zeros: 37 KB that inflate to 4 TiB (hours before)."""
    bomb = tmp_path / "bomb.zip"
    bomb.write_bytes(B.nested_zip_bomb())
    assert bomb.stat().st_size < 40_000
    r = run1(tmp_path, "list", str(bomb), "--strict", mem=512 << 20, timeout=30)
    lines = r.stderr.strip().splitlines()
    assert r.code == 3 and len(lines) == 1 and "bomb" in lines[0], r


@pytest.mark.slow
def test_one_budget_per_input_across_nesting_levels(tmp_path):
    """Members of exactly 1 MiB pass the ratio rule one by one (its floor), but 16^4 of them do
    not pass the input's budget (256 MiB + 1000x its size): one error, bounded time and memory."""
    bomb = tmp_path / "deep.zip"
    bomb.write_bytes(B.nested_zip_bomb(leaf_size=1 << 20))
    r = run1(tmp_path, "list", str(bomb), "--strict", mem=768 << 20, timeout=60)
    lines = r.stderr.strip().splitlines()
    assert r.code == 3 and len(lines) == 1 and "inflation budget of this input spent" in lines[0], r


def test_time_budget_per_input(tmp_path):
    bomb = tmp_path / "slow.zip"
    bomb.write_bytes(B.nested_zip(3, B.sample_fatbin()))
    r = run1(
        tmp_path,
        "list",
        str(bomb),
        setup="import fatbin_inspect.formats.decompress as d; d.INPUT_SECONDS = 0.0",
    )
    assert "time budget of this input spent" in r.stderr, r


def _bzip2_zip(size: int) -> bytes:
    import io

    buf = io.BytesIO()
    info = zipfile.ZipInfo("lib/z.so")
    info.compress_type = zipfile.ZIP_BZIP2  # a bare ZipInfo would store the member
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_BZIP2) as zf, zf.open(info, "w") as fh:
        for _ in range(size >> 20):
            fh.write(b"\0" * (1 << 20))
    return buf.getvalue()


@pytest.mark.slow
def test_one_ratio_rule_for_every_archive_kind(tmp_path):
    """bzip2 member of exactly 64 MiB, deflate member, tar.gz member, lone .gz: all refused by
    the same rule (once refused only above 64 MiB, and tar.gz never)."""
    import gzip
    import io
    import tarfile

    zeros = b"\0" * (64 << 20)
    (tmp_path / "bz.whl").write_bytes(_bzip2_zip(64 << 20))
    (tmp_path / "def.whl").write_bytes(B.zip_bomb_member("lib/z.so", 64 << 20))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=9) as tf:
        ti = tarfile.TarInfo("layer/z.so")
        ti.size = len(zeros)
        tf.addfile(ti, io.BytesIO(zeros))
    (tmp_path / "img.tar.gz").write_bytes(buf.getvalue())
    (tmp_path / "z.gz").write_bytes(gzip.compress(b"x" * (64 << 20), 9))
    names = ["bz.whl", "def.whl", "img.tar.gz", "z.gz"]
    for name, r in zip(
        names, run_many(tmp_path, [["list", n, "--strict"] for n in names], mem=768 << 20), strict=False
    ):
        assert r.code == 3 and "over the 1000:1 limit" in r.stderr, (name, r)


def _overlapping_elf(copies: int, data: bytes) -> bytes:
    """An ELF whose section table holds ``copies`` headers over the same ``data`` bytes."""
    elf = bytearray(B.host_elf([(".data", data)]))
    shoff, shnum = struct.unpack_from("<Q", elf, 0x28)[0], struct.unpack_from("<H", elf, 0x3C)[0]
    shdr = bytes(elf[shoff + 64 : shoff + 128])  # the .data header
    table = bytes(elf[shoff : shoff + 64 * shnum]) + shdr * copies
    elf = elf[:shoff] + table
    struct.pack_into("<H", elf, 0x3C, shnum + copies)
    return bytes(elf)


def test_overlapping_sections_are_scanned_once_and_fatbins_listed_once(tmp_path):
    """4,096 section headers over one 1.3 MB data section (an hour before): each byte range is
    magic-scanned once, each fatbin listed once."""
    data = (B.sample_fatbin() + b"\0" * 8) * 2 + bytes(range(256)) * 5000
    (tmp_path / "o.so").write_bytes(_overlapping_elf(4096, data))
    r = run1(tmp_path, "list", "o.so", "--format", "json", timeout=60)
    doc = json.loads(r.out)
    assert r.code == 0 and len(doc["files"][0]["fatbins"]) == 2, r


def test_repeated_nv_fatbin_headers_list_the_fatbin_once(tmp_path):
    elf = bytearray(B.host_elf([(".nv_fatbin", B.sample_fatbin())]))
    shoff, shnum = struct.unpack_from("<Q", elf, 0x28)[0], struct.unpack_from("<H", elf, 0x3C)[0]
    shdr = bytes(elf[shoff + 64 : shoff + 128])
    elf = elf[:shoff] + elf[shoff : shoff + 64 * shnum] + shdr * 2000
    struct.pack_into("<H", elf, 0x3C, shnum + 2000)
    (tmp_path / "r.so").write_bytes(bytes(elf))
    doc = json.loads(run1(tmp_path, "list", "r.so", "--format", "json").out)
    assert len(doc["files"][0]["fatbins"]) == 1


@pytest.mark.slow
def test_repeated_fatbin_magic_keeps_a_bounded_number_of_errors(tmp_path):
    """4 MiB of fatbin magic, one every 4 bytes: a million failed parses, 1.16 GB before (every
    failure kept with its traceback); now 16 kept and the rest counted, under 512 MiB."""
    (tmp_path / "m.fatbin").write_bytes(struct.pack("<I", 0xBA55ED50) * (1 << 20))
    r = run1(tmp_path, "list", "m.fatbin", "--format", "json", mem=512 << 20, timeout=120)
    f = json.loads(r.out)["files"][0]
    assert f["error"] and any("more fatbin errors in this region not kept" in n for n in f["notes"]), f


def test_standalone_ptx_is_mapped_not_copied(tmp_path):
    """A 1 GiB standalone .ptx (sparse) is read in place: far less resident memory than its size."""
    p = tmp_path / "big.ptx"
    with open(p, "wb") as fh:
        fh.write(B.ptx_text((8, 0), "sm_80", ["_Z1kv"])[:-1] + b"\n")
        fh.truncate(1 << 30)
    script = (
        "import resource, subprocess, sys;"
        f"subprocess.run([sys.executable, '-m', 'fatbin_inspect', 'list', '--kernels', {str(p)!r}],"
        " stdout=subprocess.DEVNULL, check=False);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert int(out.stdout.strip()) < 300 << 10, out  # KiB: < 300 MiB resident for a 1 GiB file


def test_wheel_metadata_is_read_under_the_member_limits(tmp_path):
    """A METADATA that really inflates to 3 GiB (3 MB of deflate) is refused before it is
    inflated: ``check`` and ``list --gpu`` read it whole before (a MemoryError under 512 MiB)."""
    import zlib

    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = co.compress(b"\0" * (64 << 20)) + co.flush(zlib.Z_FULL_FLUSH)  # the same bytes each time
    deflated = block * 48 + co.flush()
    meta = ("b-1.0.dist-info/METADATA", deflated, 0, 48 << 26)
    (tmp_path / "b-1.0-py3-none-any.whl").write_bytes(B.zip_precompressed([meta]))
    runs = [
        ["check", "b-1.0-py3-none-any.whl", "--gpu", "H100"],
        ["list", "b-1.0-py3-none-any.whl", "--gpu", "H100"],
    ]
    for r in run_many(tmp_path, runs, mem=512 << 20, timeout=30):
        assert r.code in (0, 1), r


# --------------------------------------------------------------- scan: metadata, files
def test_scan_reads_dist_info_above_the_root_never(tmp_path):
    """A FIFO METADATA and a RECORD linked to /dev/zero beside the scanned folder: no hang, no
    exhaustion (they are not regular files, and they lie above the scan root)."""
    env = tmp_path / "top"
    info = env / "evil-1.0.dist-info"
    info.mkdir(parents=True)
    os.mkfifo(info / "METADATA")
    os.symlink("/dev/zero", info / "RECORD")
    root = env / "pkg"
    root.mkdir()
    (root / "lib.so").write_bytes(hostile_binary())
    inside = tmp_path / "site-packages"
    (inside / "good-1.0.dist-info").mkdir(parents=True)
    (inside / "good-1.0.dist-info" / "METADATA").write_text("Name: good\nVersion: 1.0\n\n")
    (inside / "good-1.0.dist-info" / "RECORD").write_text("good/lib.so,,\n")
    (inside / "good").mkdir()
    (inside / "good" / "lib.so").write_bytes(hostile_binary())
    os.mkfifo(inside / "good-1.0.dist-info" / "INSTALLER")
    runs = [
        ["scan", str(root), "--no-cache", "-j1", "--format", "json"],
        ["scan", str(inside / "good"), "--no-cache", "-j1", "--format", "json"],
    ]
    above, within = run_many(tmp_path, runs, mem=512 << 20, timeout=30)
    assert above.code == 0 and within.code == 0, (above, within)
    assert "evil 1.0" not in above.out.decode() and "evil-1.0" not in above.out.decode()
    assert "good 1.0" in within.out.decode()  # the root lies inside an environment: its metadata counts


def test_scan_strict_exits_3_for_special_files(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    (d / "lib.so").write_bytes(hostile_binary())
    os.mkfifo(d / "fifo")
    os.symlink("loop", d / "loop")
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(d / "sock"))
        runs = [
            ["scan", str(d), "--no-cache", "-j1", "--strict"],
            ["list", str(d), "--strict"],
            ["scan", str(d), "--no-cache", "-j1"],
        ]
        strict, listed, plain = run_many(tmp_path, runs)
    finally:
        s.close()
    assert strict.code == 3 and listed.code == 3 and plain.code == 0, (strict, listed, plain)
    for word in ("fifo", "loop", "sock"):
        assert word in strict.stderr


def test_diff_reports_unreadable_inputs(tmp_path):
    good = B.zip_archive([("pkg/k.fatbin", B.sample_fatbin())])
    (tmp_path / "old.whl").write_bytes(good[: len(good) // 2])
    (tmp_path / "new.whl").write_bytes(good)
    runs = [
        ["diff", "old.whl", "new.whl", "--fail-on-dropped"],
        ["diff", "old.whl", "new.whl", "--fail-on-dropped", "--strict"],
        ["diff", "new.whl", "new.whl", "--fail-on-dropped"],
    ]
    plain, strict, same = run_many(tmp_path, runs)
    assert plain.code == 2 and "old.whl" in plain.stderr, plain
    assert strict.code == 3 and same.code == 0, (strict, same)


# ------------------------------------------------------------------ workers, signals
def _slow_tree(tmp_path, n: int = 6):
    d = tmp_path / "slow"
    d.mkdir()
    bomb = B.nested_zip_bomb(levels=3, copies=16, leaf_size=1 << 20)
    for i in range(n):
        (d / f"s{i}.zip").write_bytes(bomb + b"\0" * i)  # distinct files, each ~1 s of inflation
    return d


def _children(pid: int) -> list[int]:
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(p))
            except (OSError, ValueError, IndexError):
                pass
    return out


def _start_scan(tmp_path, d):
    return subprocess.Popen(
        [sys.executable, "-m", "fatbin_inspect", "scan", str(d), "-j2", "--no-cache"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": ROOT},
        cwd=str(tmp_path),
        start_new_session=True,  # its own process group, as a shell gives a foreground job
    )


def _wait_for_workers(proc, n: int = 2, timeout: float = 20) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        kids = _children(proc.pid)
        if len(kids) >= n:
            return kids
        time.sleep(0.05)
    pytest.fail("scan -j2 started no workers")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_scan_workers_exit_with_their_parent(tmp_path, sig):
    proc = _start_scan(tmp_path, _slow_tree(tmp_path))
    kids = _wait_for_workers(proc)
    proc.send_signal(sig)
    proc.communicate(timeout=TIMEOUT)
    end = time.monotonic() + 20
    while time.monotonic() < end and any(os.path.exists(f"/proc/{k}") and _alive(k) for k in kids):
        time.sleep(0.05)
    assert not [k for k in kids if os.path.exists(f"/proc/{k}") and _alive(k)]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ctrl_c_exits_130_with_one_line(tmp_path):
    proc = _start_scan(tmp_path, _slow_tree(tmp_path))
    _wait_for_workers(proc)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
    _out, err = proc.communicate(timeout=TIMEOUT)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 130 and lines == ["fatbin-inspect: interrupted"], (proc.returncode, err[-2000:])


_FORK_SIGINT = """
import os, signal, sys
from fatbin_inspect.inventory import workers
os.register_at_fork(after_in_child=lambda: os.kill(os.getpid(), signal.SIGINT))
with workers.pool(2) as ex:
    print(sorted(f.result() for f in [workers.submit(ex, abs, -n) for n in range(4)]))
"""


def test_ctrl_c_while_a_worker_is_forked_is_not_a_traceback():
    """The race behind the test above, made certain: the SIGINT reaches each worker the moment it
    is forked (before its initializer). Without the signal held back over the fork, the child dies
    in multiprocessing's bootstrap with a traceback and the pool breaks."""
    proc = subprocess.run(
        [sys.executable, "-c", _FORK_SIGINT],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": ROOT},
        timeout=TIMEOUT,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"[0, 1, 2, 3]\n", b"")


@pytest.mark.parametrize("swap", [True, False])
def test_a_report_over_an_old_one_replaces_its_name_only(tmp_path, monkeypatch, swap):
    """Over an existing report the names are swapped (``renameat2``) and the old bytes unlinked,
    or, without the swap, renamed over: either way a hard link to the old report keeps the old
    bytes (never written through), the new one is whole, and no temporary is left."""
    from fatbin_inspect.cli import outfile

    if not swap:
        monkeypatch.setattr(outfile, "_renameat2", lambda: None)
    elif outfile._renameat2() is None:
        pytest.skip("no renameat2 here (not Linux, or glibc < 2.28)")
    out, kept = tmp_path / "r.json", tmp_path / "kept.json"
    out.write_text("old report")
    os.link(out, kept)
    with outfile.open_report(str(out)) as fh:
        fh.write(b"new report")
    assert out.read_bytes() == b"new report" and kept.read_bytes() == b"old report"
    assert os.stat(out).st_ino != os.stat(kept).st_ino
    fresh = tmp_path / "fresh.json"  # nothing there: a plain rename
    with outfile.open_report(str(fresh)) as fh:
        fh.write(b"first")
    assert fresh.read_bytes() == b"first"
    assert sorted(os.listdir(tmp_path)) == ["fresh.json", "kept.json", "r.json"]


def test_what_a_swap_finds_not_to_be_a_file_is_swapped_back(tmp_path, monkeypatch):
    """A folder that took the report's name after it was checked: swapped back, then refused
    as a rename over a folder is (the folder and its contents untouched)."""
    from fatbin_inspect.cli import outfile
    from fatbin_inspect.errors import UsageError

    if outfile._renameat2() is None:
        pytest.skip("no renameat2 here (not Linux, or glibc < 2.28)")
    out = tmp_path / "r.json"
    out.write_text("old report")
    real, calls = outfile.refuse_inputs, []

    def plant(output, inputs):  # its second call: after the body, just before the rename
        calls.append(output)
        if len(calls) == 2:
            os.unlink(output)
            os.mkdir(output)
            (tmp_path / "r.json" / "inside").write_text("x")
        return real(output, inputs)

    monkeypatch.setattr(outfile, "refuse_inputs", plant)
    with pytest.raises(UsageError, match="cannot write"), outfile.open_report(str(out)) as fh:
        fh.write(b"new report")
    assert len(calls) == 2 and (out / "inside").read_text() == "x"
    assert sorted(os.listdir(tmp_path)) == ["r.json"]
