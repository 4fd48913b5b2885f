"""Streaming writers: the documents written piece by piece are byte for byte those of the whole-
document writer (``jsondump.dumps``), on the fixtures, for list, scan, check and gate."""

import glob
import io
import json
import os
import shutil

import pytest
from conftest import BIN, COMPAT, cli, fixture_path

from fatbin_inspect.inventory.options import Options
from fatbin_inspect.judging.inputs import iter_reports
from fatbin_inspect.render import inventory_json, json_encode, jsondump, record_json, record_pieces

FILES = sorted(
    p
    for p in glob.glob(os.path.join(BIN, "*")) + glob.glob(os.path.join(COMPAT, "*"))
    if os.path.isfile(p) and not p.endswith(".md") and "README" not in p
)


def _streamed(doc, pretty=True):
    out = io.BytesIO()
    jsondump.write(out, doc, pretty)
    return out.getvalue()


def _items_doc(doc):
    """``doc`` with every top-level list handed over as an iterator (``jsondump.Items``)."""
    return {k: jsondump.Items(iter(v)) if isinstance(v, list) else v for k, v in doc.items()}


def test_pretty_is_json_dumps_indent_2():
    values = [
        0,
        -3,
        2**70,
        1.5,
        float("nan"),
        float("inf"),
        True,
        False,
        None,
        "",
        '\x1b[31m\u2028é\U0001f600"\\',
        [],
        {},
        (),
        [[], {}, [()]],
        {"a": {"b": [1, {"c": None}]}, "": [True, 1.25]},
        {1: "int key"},
        {"k": (1, 2)},
        [{"x": []}, {"y": {}}],
        {"s": "\x1bé", "n": None, "b": False, "i": 2**70, "f": float("inf"), "e": ""},
        [["a", 1, 0.5], {"k": "v", "t": True}, ("x",), [float("nan")]],
        {"leaf": [1, 2], "deeper": [{"a": 1}, [[]]]},
        # a string and a number holding the first placeholder's digits: written item by item
        {"a": "x" + json_encode._PLACEHOLDER_TEXTS[0], "b": 1, "c": [1], "d": 2, "e": {"f": "g"}},
        {"a": json_encode._PLACEHOLDERS[0], "b": 1, "c": [1], "d": 2},
        {"a": 1, "b": 2, "c": [json_encode._PLACEHOLDER_TEXTS[1]], "d": {"e": [2]}, "f": 3, "g": 4},
    ]
    for v in values:
        for depth in (0, 1, 3):
            assert jsondump.pretty(v, depth) == json.dumps(v, indent=2).replace("\n", "\n" + "  " * depth)
    reports = list(iter_reports(FILES, Options(kernels=True, details=True)))
    doc = inventory_json.inventory_document(reports)
    assert jsondump.pretty(doc) == json.dumps(doc, indent=2)


@pytest.mark.parametrize("pretty", [True, False])
def test_write_equals_dumps_on_shapes(pretty):
    docs = [
        {},
        {"a": []},
        {"a": [], "b": {}, "c": [1, {"x": [[], {}]}, "\x1b\u2028é"]},
        {"schema_version": 1, "files": [{"k": [1, 2, {"n": None}]}, {}], "tail": {"z": [True]}},
    ]
    for doc in docs:
        assert _streamed(_items_doc(doc), pretty).decode() == jsondump.dumps(doc, pretty)
        assert (
            jsondump.dumps(doc, pretty)
            == (json.dumps(doc, indent=2) if pretty else json.dumps(doc, separators=(",", ":"))) + "\n"
        )


@pytest.mark.parametrize("pretty", [True, False])
def test_write_equals_dumps_on_the_fixture_inventory(pretty):
    reports = list(iter_reports(FILES, Options(kernels=True, details=True)))
    doc = inventory_json.inventory_document(reports)
    assert _streamed(_items_doc(doc), pretty).decode() == jsondump.dumps(doc, pretty)
    # pre-encoded items: compact pieces, as the --kernels writer hands them over
    pieces = jsondump.Items((record_pieces.file_pieces(r) for r in reports), encoded=True)
    if not pretty:
        assert _streamed({**doc, "files": pieces}, False).decode() == jsondump.dumps(doc, False)


def test_list_json_and_jsonl_are_the_whole_document_writers_bytes():
    reports = list(iter_reports(FILES, Options()))
    doc = inventory_json.inventory_document(reports)
    assert cli("list", *FILES, "--format", "json", codes=(0, 1, 2)).out_bytes == jsondump.dumps(doc).encode()
    lines = "".join(
        jsondump.dumps_line({"schema_version": inventory_json.SCHEMA_VERSION, **record_json.file_dict(r)})
        for r in reports
    )
    assert cli("list", *FILES, "--format", "jsonl", codes=(0, 1, 2)).out_bytes == lines.encode()


def test_list_json_over_the_pretty_limit_is_compact(monkeypatch):
    from fatbin_inspect.render import list_views

    monkeypatch.setattr(list_views, "PRETTY_MAX_ENTRIES", 5)  # the fixtures hold more
    doc = inventory_json.inventory_document(iter_reports(FILES, Options()))
    assert (
        cli("list", *FILES, "--format", "json", codes=(0, 1, 2)).out_bytes
        == jsondump.dumps(doc, pretty=False).encode()
    )


@pytest.mark.parametrize(
    ("pack_over", "ring", "cap"),
    [(2 << 20, True, 1 << 20), (64, False, 1 << 20), (64, True, 1 << 20), (64, True, 300)],
    ids=["plain", "packed", "spilled", "capped"],
)
def test_list_kernels_json_streamed_from_parallel_slices_equals_the_document(
    monkeypatch, pack_over, ring, cap
):
    """The --kernels writer: slices decoded and encoded by worker processes, written in order;
    ``packed``: every fragment crosses the pipe zstd-compressed (``record_pieces.Packed``), as where
    there is no memory file; ``spilled``: through one (``spill.Spilled``, where Linux has them);
    ``capped``: a slot takes 300 bytes of a slice, the rest is packed after it."""
    from fatbin_inspect.inventory import decoding, spill

    monkeypatch.setattr(record_pieces, "PACK_OVER", pack_over)
    monkeypatch.setattr(spill, "CAP", cap)
    monkeypatch.setattr(record_pieces, "PIECE", 100)  # a packed fragment is written in many pieces
    monkeypatch.setattr(spill, "PIECE", 100)
    if not ring:
        monkeypatch.setattr(spill, "open_ring", lambda n: None)
    monkeypatch.setattr(decoding, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(decoding, "SLICES_PER_JOB", 3)
    monkeypatch.setattr(decoding, "WINDOW_PER_JOB", 1)
    monkeypatch.setenv("FATBIN_INSPECT_JOBS", "2")
    files = [os.path.join(BIN, n) for n in ("t02_exe_sm75_sm80_sm90_c90", "hidden_ldata_2fatbins.so")]
    opts = Options(kernels=True, details=True)
    doc = inventory_json.inventory_document(iter_reports(files, opts))
    assert (
        cli("list", *files, "--kernels", "--format", "json", codes=(0, 1, 2)).out_bytes
        == jsondump.dumps(doc, pretty=False).encode()
    )
    blob_path = files[1]
    from fatbin_inspect.formats.binio import open_blob

    blob = open_blob(blob_path)
    fatbins = next(iter(iter_reports([blob_path], Options()))).fatbins
    parts = list(
        decoding.iter_decoded(
            blob, fatbins, Options(kernels=True, details=True, jobs=2), blob_path, decoding._same
        )
    )
    whole = next(iter(iter_reports([blob_path], opts))).fatbins
    assert len(parts) > 1 and tuple(fb for p in parts for fb in p) == whole


def _fragment_bytes(f) -> bytes:
    return b"".join(f.pieces()) if hasattr(f, "pieces") else bytes(f)


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="memory files are Linux's (os.memfd_create)")
@pytest.mark.parametrize("keep", [0, 1 << 20], ids=["emptied", "overwritten"])
def test_spilled_slices_through_a_short_ring_read_as_encoded(monkeypatch, keep):
    """24 one-fatbin slices through a ring of 2 memory files (a worker and this process, one
    slice each taken and not yet yielded), every fragment spilled and read as the writer takes
    it: each slot is rewritten only once its bytes were read (a slot reused early would give
    another slice's bytes), whether it is emptied first or overwritten in place over a longer
    slice's bytes."""
    from fatbin_inspect.formats.binio import open_blob
    from fatbin_inspect.inventory import decoding, spill

    if spill.open_ring(1) is None:
        pytest.skip("workers here are not forked: no memory files are handed to them")
    monkeypatch.setattr(record_pieces, "PACK_OVER", 64)
    monkeypatch.setattr(spill, "PIECE", 1000)
    monkeypatch.setattr(spill, "KEEP", keep)
    monkeypatch.setattr(decoding, "SLICES_PER_JOB", 12)
    monkeypatch.setattr(decoding, "WINDOW_PER_JOB", 1)
    rings = []
    real_open = spill.open_ring
    monkeypatch.setattr(spill, "open_ring", lambda n: rings.append(n) or real_open(n))
    path = os.path.join(BIN, "hidden_ldata_2fatbins.so")
    listed = next(iter(iter_reports([path], Options()))).fatbins
    fatbins = [listed[i % 2] for i in range(24)]  # larger and smaller slices in turn
    opts = Options(kernels=True, details=True, jobs=1)
    kinds, got = set(), []
    for f in decoding._iter_parallel(
        path, os.path.getsize(path), fatbins, opts, 2, record_pieces.fatbins_fragment
    ):
        kinds.add(type(f).__name__)
        got.append(_fragment_bytes(f))
    want = [
        _fragment_bytes(record_pieces.fatbins_fragment(decoding._pairs(open_blob(path), [fb], opts)))
        for fb in fatbins
    ]
    assert rings == [2] and kinds == {"Spilled"}
    assert got == want


def test_a_memory_file_gives_back_what_was_written_from_a_mark(tmp_path, monkeypatch):
    """``Sink`` writes from its slot's start; ``since`` names what came after a mark, read back
    in pieces; a slot left larger than ``KEEP`` is emptied when it is next written."""
    from fatbin_inspect.inventory import spill

    monkeypatch.setattr(spill, "PIECE", 3)
    fd = os.open(tmp_path / "slot", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        sink = spill.Sink(fd)
        sink.write(b"head")
        mark = sink.pos
        sink.write(bytearray(b"0123456789"))
        spilled = sink.since(mark)
        assert (spilled.start, spilled.size) == (4, 10)
        assert list(spilled.pieces()) == [b"012", b"345", b"678", b"9"]
        monkeypatch.setattr(spill, "KEEP", 14)
        spill.Sink(fd)
        assert os.fstat(fd).st_size == 14
        monkeypatch.setattr(spill, "KEEP", 13)
        again = spill.Sink(fd)
        assert os.fstat(fd).st_size == 0 and again.pos == 0
    finally:
        os.close(fd)


def test_a_fragment_past_its_slots_cap_is_packed_after_what_the_slot_took(tmp_path, monkeypatch):
    """A slot takes at most ``spill.CAP`` bytes of its slice: a fragment that would go past it
    is compressed from there on (``Packed`` with the slot's part as its head), and one written
    once the slot is full is compressed whole; each reads back as it was written."""
    from fatbin_inspect.inventory import spill

    monkeypatch.setattr(record_pieces, "PACK_OVER", 8)
    monkeypatch.setattr(spill, "CAP", 40)
    fd = os.open(tmp_path / "slot", os.O_RDWR | os.O_CREAT, 0o600)
    data = [bytes([65 + i % 26]) * 7 for i in range(30)]
    try:
        with spill.writing(fd):
            first = record_pieces._Fragment()
            for d in data:
                first.write(d)
            over = first.result()
            second = record_pieces._Fragment()
            second.write(b"x" * 20)
            whole = second.result()
            small = record_pieces._Fragment()
            small.write(b"tiny")
            plain = small.result()
        assert isinstance(over, record_pieces.Packed) and over.head is not None
        assert 0 < over.head.size <= 40 and os.fstat(fd).st_size == over.head.size
        assert b"".join(over.pieces()) == b"".join(data)
        assert isinstance(whole, record_pieces.Packed) and whole.head is None
        assert b"".join(whole.pieces()) == b"x" * 20
        assert bytes(plain) == b"tiny"
    finally:
        os.close(fd)


@pytest.mark.parametrize("change", [-4096, 4096], ids=["shrank", "grew"])
def test_parallel_slices_of_a_file_changed_after_its_listing_decode_nothing(tmp_path, change):
    """A worker that maps the file after the listing and finds another size raises, so the
    file's answer is an error saying so (``list --kernels`` of a library truncated while it was
    read gave per-entry "runs past the end" errors and a record without one)."""
    from fatbin_inspect.errors import TruncatedError
    from fatbin_inspect.inventory import decoding

    path = tmp_path / "lib.so"
    shutil.copy(os.path.join(BIN, "hidden_ldata_2fatbins.so"), path)
    size = path.stat().st_size
    fatbins = next(iter(iter_reports([str(path)], Options()))).fatbins
    if change < 0:
        os.truncate(path, size + change)
    else:
        with open(path, "ab") as f:
            f.write(b"\0" * change)
    with pytest.raises(TruncatedError, match="shrank" if change < 0 else "changed"):
        list(
            decoding._iter_parallel(
                str(path), size, fatbins, Options(kernels=True, jobs=1), 2, decoding._same
            )
        )
    assert (
        len(
            list(
                decoding._iter_parallel(
                    str(path), path.stat().st_size, fatbins, Options(kernels=True), 2, decoding._same
                )
            )
        )
        >= 1
    )


def test_a_fragment_writes_each_entry_before_the_next_is_decoded(monkeypatch):
    """The worker's encoder takes a fatbin's entries one at a time, each written before the next
    is decoded (a fatbin's records are never all held), and gives what the whole records give."""
    from fatbin_inspect.formats.binio import open_blob
    from fatbin_inspect.inventory import decoding

    path = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")
    fatbins = next(iter(iter_reports([path], Options()))).fatbins
    assert sum(len(fb.entries) for fb in fatbins) >= 3
    opts = Options(kernels=True, details=True, jobs=1)
    events = []
    real_write = record_pieces._Fragment.write
    monkeypatch.setattr(
        record_pieces._Fragment, "write", lambda self, data: events.append("w") or real_write(self, data)
    )

    def watched(pairs):
        for fb, entries in pairs:
            yield fb, (events.append("d") or e for e in entries)

    lazy = record_pieces.fatbins_fragment(watched(decoding._pairs(open_blob(path), fatbins, opts)))
    decoded = events.count("d")
    assert decoded >= 3 and "".join(events).count("dd") == 0  # never two decoded in a row
    whole = decoding._same(decoding._pairs(open_blob(path), fatbins, opts))
    assert bytes(lazy) == bytes(record_pieces.fatbins_fragment((fb, fb.entries) for fb in whole))


def test_check_json_streamed_equals_the_document():
    from fatbin_inspect.compat.targets import resolve_targets
    from fatbin_inspect.judging.verdicts import judge_paths as _judge
    from fatbin_inspect.render.check_json import check_document

    targets = resolve_targets(["H100", "RTX 5090", "GTX 1080"], "580")
    unreadable = []
    from fatbin_inspect.judging.inputs import verdict_options as inventory_options

    verdicts = list(_judge(FILES, targets, unreadable, inventory_options(False)))
    errors = [{"path": r.path, "message": r.error.message, "offset": r.error.offset} for r in unreadable]
    expect = jsondump.dumps(check_document(targets, verdicts, False, errors)).encode()
    got = cli(
        "check",
        *FILES,
        "--gpu",
        "H100",
        "--gpu",
        "RTX 5090",
        "--gpu",
        "GTX 1080",
        "--driver",
        "580",
        "--format",
        "json",
        codes=(0, 1, 2),
    ).out_bytes
    assert got == expect


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_gate_streamed_equals_the_renderer(fmt):
    from fatbin_inspect.render import findings

    report_text = {}

    def capture(*args):
        return cli(
            "gate", *FILES, "--require", "sm_80,sm_90", "--isolated", "--format", fmt, *args, codes=(0, 1, 2)
        ).out_bytes

    streamed = capture()
    mod = findings.module(fmt)
    from fatbin_inspect.release import policy
    from fatbin_inspect.release.gate import gate

    pol, given = policy.load("", {"require": "sm_80,sm_90"})
    report = gate(list(iter_reports(FILES, Options(details=True))), pol, given, None)
    report_text[fmt] = mod.render(report, pol.fail_on)
    assert streamed.decode() == report_text[fmt]


def test_scan_json_streamed_equals_the_document_of_full_records(tmp_path, monkeypatch):
    """The scan document written from worker-encoded texts equals ``scan_document`` of the full
    records, cold, warm and without the cache (except the timing and cache counters)."""
    from fatbin_inspect.render.scan_json import scan_document
    from fatbin_inspect.scanning import ScanOptions, coverage, scan

    tree = tmp_path / "tree"
    (tree / "lib").mkdir(parents=True)
    for p in FILES[:12]:
        shutil.copyfile(p, tree / "lib" / os.path.basename(p))
    archive = fixture_path("bin", "t10_rdc_lib_sm80.a")  # one file, two records: two texts a row
    shutil.copyfile(archive, tree / "lib" / "librdc.a")
    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    outs = [
        cli("scan", str(tree), "--format", "json", "-j", "1", *extra, codes=(0, 1, 2)).out_bytes
        for extra in ((), (), ("--no-cache",))
    ]
    docs = [json.loads(o) for o in outs]
    assert docs[0]["stats"]["cache_hits"] == 0 and docs[1]["stats"]["cache_hits"] > 0
    assert sum("librdc.a!" in f["path"] for f in docs[1]["files"]) == 2
    result = scan([str(tree)], ScanOptions(inventory={"jobs": 1}, jobs=1, cache_dir=None))
    cov = coverage.build(result.reports, None, [])
    for out, doc in zip(outs, docs, strict=True):
        expect = scan_document(result, cov, doc["stats"]["seconds"], [])
        expect["stats"].update(cache_hits=doc["stats"]["cache_hits"], inspected=doc["stats"]["inspected"])
        assert out == jsondump.dumps(expect).encode()
    strip = [
        o.replace(b'"cache_hits": %d' % d["stats"]["cache_hits"], b"").replace(
            b'"seconds": %s' % json.dumps(d["stats"]["seconds"]).encode(), b""
        )
        for o, d in zip(outs, docs, strict=True)
    ]
    assert strip[0] == strip[1] == strip[2]


@pytest.mark.slow
def test_pretty_matches_json_dumps_on_generated_values():
    """Random nests of the shapes records have, with strings and numbers that hold the digits of
    ``pretty``'s placeholders (those containers are written item by item, to the same bytes)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    digits = json_encode._PLACEHOLDER_TEXTS
    text = st.one_of(
        st.text(max_size=8),
        st.sampled_from(digits),
        st.builds(lambda a, d: a + d + a, st.text(max_size=3), st.sampled_from(digits)),
    )
    scalar = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.sampled_from(json_encode._PLACEHOLDERS),
        st.floats(allow_nan=False),
        text,
    )
    values = st.recursive(
        scalar,
        lambda inner: st.one_of(
            st.lists(inner, max_size=6),
            st.dictionaries(text, inner, max_size=8),
            st.tuples(inner, inner),
        ),
        max_leaves=40,
    )

    @settings(max_examples=400, deadline=None)
    @given(values, st.integers(0, 3))
    def check(v, depth):
        assert jsondump.pretty(v, depth) == json.dumps(v, indent=2).replace("\n", "\n" + "  " * depth)

    check()
