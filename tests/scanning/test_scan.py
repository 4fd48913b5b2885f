"""scan: attribution, the coverage matrix, the cache, the pool, the progress switch, the CLI."""

import io
import itertools
import json
import os
import shutil

import pytest
from builders import ar_archive, tar_archive, zip_archive
from conftest import cli, fixture_path, read_file

import fatbin_inspect
from fatbin_inspect.cli.progress import Progress
from fatbin_inspect.inventory.reader import inspect_path
from fatbin_inspect.inventory.roots import interpreter_site_packages, resolve_roots
from fatbin_inspect.scanning import ScanOptions, coverage, scan

SM80 = fixture_path("bin", "t01_exe_sm80")
MULTI = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")
PTX80 = fixture_path("bin", "t03_exe_ptx_only_c80")


def _dist(site, name, version, files):
    """Install ``files`` ({relative path: bytes}) as distribution ``name`` with a RECORD."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nBody: x\n")
    lines = []
    for rel, data in files.items():
        p = site / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        lines.append(f"{rel},sha256=x,{len(data)}")
    lines.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(lines) + "\n")


@pytest.fixture
def site(tmp_path):
    s = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    _dist(
        s,
        "alpha-gpu",
        "1.2.3",
        {"alpha/lib/libalpha.so": read_file(MULTI), "alpha/__init__.py": b"x = 1\n" * 20},
    )
    # two distributions sharing the `nvidia` namespace folder
    _dist(s, "nvidia-one", "13.0", {"nvidia/one/lib/libone.so": read_file(SM80)})
    _dist(s, "nvidia-two", "12.0", {"nvidia/two/lib/libtwo.so": read_file(PTX80)})
    stray = s / "stray" / "libstray.so"
    stray.parent.mkdir()
    stray.write_bytes(read_file(SM80))
    # an ELF whose section table does not read: an error record, as ``list`` gives it (issue 53)
    (s / "stray" / "libplain.so").write_bytes(b"\x7fELF\x02\x01\x01" + b"\xff" * 200)
    (s / "stray" / "README.txt").write_bytes(b"not a binary\n" * 50)
    return s


def _opts(tmp_path, **kw):
    kw.setdefault("jobs", 1)
    kw.setdefault("cache_dir", str(tmp_path / "cache"))
    return ScanOptions(**kw)


def test_attribution_by_record_and_folder(site, tmp_path):
    res = scan([str(site)], _opts(tmp_path))
    dists = {os.path.basename(r.path): r.distribution for r in res.reports}
    assert dists == {
        "libalpha.so": "alpha-gpu 1.2.3",
        "libone.so": "nvidia-one 13.0",
        "libtwo.so": "nvidia-two 12.0",
        "libstray.so": None,
        "libplain.so": None,
    }
    assert [os.path.basename(r.path) for r in res.reports if r.error] == ["libplain.so"]
    assert res.stats.files == 13 and res.stats.inspected == 5  # 4 CUDA binaries + libplain.so
    cov = coverage.build(res.reports)
    names = [(row.name, row.kind) for row in cov.rows]
    assert names == [
        ("alpha-gpu 1.2.3", "distribution"),
        ("nvidia-one 13.0", "distribution"),
        ("nvidia-two 12.0", "distribution"),
        (str(site / "stray"), "folder"),
    ]


def test_scan_from_prefix_and_below_site_packages_agree(site, tmp_path):
    whole = scan([str(site.parents[2])], _opts(tmp_path))
    below = scan([str(site / "nvidia")], _opts(tmp_path))
    assert {r.path: r.distribution for r in below.reports} == {
        r.path: r.distribution for r in whole.reports if "/nvidia/" in r.path
    }


def test_matrix_cells_follow_the_entries(site, tmp_path):
    res = scan([str(site)], _opts(tmp_path))
    cov = coverage.build(res.reports)
    rows = {r.name: r for r in cov.rows}
    expected_cols = sorted({e.sm for r in res.reports for e in r.entries if e.kind in ("sass", "ptx")})
    assert list(cov.columns) == expected_cols
    for rec in inspect_path(MULTI):
        alpha = rows["alpha-gpu 1.2.3"]
        for e in rec.entries:
            assert e.arch in alpha.cells[e.sm].arches
        sass = {e.sm for e in rec.entries if e.kind == "sass"}
        ptx_only = {e.sm for e in rec.entries if e.kind == "ptx"} - sass
        assert {sm for sm, c in alpha.cells.items() if c.state == "sass"} == sass
        assert {sm for sm, c in alpha.cells.items() if c.state == "ptx"} == ptx_only
    two = rows["nvidia-two 12.0"]
    assert {c.state for c in two.cells.values()} == {"ptx"}  # a PTX-only build
    assert coverage.describe(two, 120).startswith("no sm_120 SASS, compute_")
    assert rows["alpha-gpu 1.2.3"].children[0].name.endswith("libalpha.so")


def test_wheel_and_tarball_built_here(tmp_path):
    whl = tmp_path / "beta_cuda-0.9-py3-none-manylinux_2_28_x86_64.whl"
    whl.write_bytes(zip_archive([("beta/lib/libbeta.so", read_file(SM80)), ("beta/__init__.py", b"")]))
    tgz = tmp_path / "layer.tar.gz"
    tgz.write_bytes(
        tar_archive(
            [("usr/lib/libloose.so", read_file(PTX80)), ("wheels/" + whl.name, read_file(str(whl)))], gz=True
        )
    )
    res = scan([str(whl), str(tgz)], _opts(tmp_path))
    got = {r.path.split(str(tmp_path) + os.sep)[1]: r.distribution for r in res.reports}
    assert got == {
        f"{whl.name}!beta/lib/libbeta.so": "beta-cuda 0.9",
        "layer.tar.gz!usr/lib/libloose.so": None,
        f"layer.tar.gz!wheels/{whl.name}!beta/lib/libbeta.so": "beta-cuda 0.9",
    }
    rows = {r.name: r for r in coverage.build(res.reports).rows}
    assert rows["beta-cuda 0.9"].files == 2
    assert rows[f"{tgz}!usr/lib"].kind == "folder"


def test_cache_hits_and_invalidation(site, tmp_path):
    cold = scan([str(site)], _opts(tmp_path))
    warm = scan([str(site)], _opts(tmp_path))
    assert cold.stats.cache_hits == 0 and warm.stats.cache_hits == warm.stats.inspected == 5
    assert warm.reports == cold.reports
    assert [r.distribution for r in warm.reports] == [r.distribution for r in cold.reports]
    lib = site / "nvidia" / "one" / "lib" / "libone.so"
    lib.write_bytes(read_file(MULTI))  # new content, new size
    os.utime(site / "alpha" / "lib" / "libalpha.so")  # same content, new mtime
    third = scan([str(site)], _opts(tmp_path))
    assert third.stats.cache_hits == 3
    one = next(r for r in third.reports if r.path == str(lib))
    assert {e.arch for e in one.entries} == {e.arch for rec in inspect_path(MULTI) for e in rec.entries}
    no_cache = scan([str(site)], _opts(tmp_path, cache_dir=None))
    assert no_cache.stats.cache_hits == 0 and no_cache.reports == third.reports


def test_cache_is_safe_to_delete_or_corrupt(site, tmp_path):
    first = scan([str(site)], _opts(tmp_path))
    db = first.stats.cache
    assert db and os.path.exists(db)
    with open(db, "r+b") as fh:
        fh.write(b"garbage" * 100)
    again = scan([str(site)], _opts(tmp_path))
    assert again.reports == first.reports
    shutil.rmtree(tmp_path / "cache")
    assert scan([str(site)], _opts(tmp_path)).reports == first.reports


def test_env_override_of_cache_dir(site, tmp_path, monkeypatch):
    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(tmp_path / "envcache"))
    res = scan([str(site)], ScanOptions(jobs=1))
    assert res.stats.cache.startswith(str(tmp_path / "envcache"))


def test_pool_gives_the_same_records(site, tmp_path):
    one = scan([str(site)], _opts(tmp_path, jobs=1, cache_dir=None))
    two = scan([str(site)], _opts(tmp_path, jobs=2, cache_dir=None))
    assert one.reports == two.reports and len(two.reports) == 5  # libplain.so: an error record


def test_pool_results_taken_in_once_however_often_the_walk_looks(tmp_path, monkeypatch):
    """Results are taken in by the walk (every ``PUMP_EVERY`` files) and while waiting, and taking
    one in counts a file, which may look again: each unit's records still arrive once, split
    wheel spans too, in one-file batches that finish while others are taken in."""
    import time

    from fatbin_inspect.scanning import units
    from fatbin_inspect.scanning.loop import ScanLoop

    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(12):
        shutil.copyfile(MULTI if i % 2 else SM80, tree / f"lib{i:02}.so")
        (tree / f"note{i:02}.txt").write_bytes(b"text " * 40)
    shutil.copyfile(_big_wheel(tmp_path), tree / "gamma_gpu-2.0-py3-none-manylinux_2_28_x86_64.whl")
    whole = scan([str(tree)], _opts(tmp_path, jobs=1, cache_dir=None))
    monkeypatch.setattr(units, "BATCH_FILES", 1)
    monkeypatch.setattr(units, "SPLIT_BYTES", 1)
    monkeypatch.setattr(units, "SPAN_BYTES", 1)
    monkeypatch.setattr(ScanLoop, "PUMP_EVERY", 1)
    real = ScanLoop._file

    def slow_walk(self, *args, **kw):  # let several units end between two looks
        time.sleep(0.02)
        return real(self, *args, **kw)

    monkeypatch.setattr(ScanLoop, "_file", slow_walk)
    pooled = scan([str(tree)], _opts(tmp_path, jobs=2, cache_dir=None))
    assert [r.path for r in pooled.reports] == [r.path for r in whole.reports]
    assert pooled.reports == whole.reports and pooled.stats.inspected == whole.stats.inspected


def _big_wheel(tmp_path):
    """A wheel of many members: device code, host-only and text members, a nested wheel, and one
    member whose deflate stream is broken (a per-member error record)."""
    inner = zip_archive([("gamma/libinner.so", read_file(MULTI))])
    members = [("gamma/__init__.py", b"")]
    for i in range(6):
        members += [
            (f"gamma/lib/lib{i}a.so", read_file(SM80)),
            (f"gamma/lib/lib{i}b.so", read_file(MULTI)),
            (f"gamma/data/{i}.txt", b"x" * 100),
            (f"gamma/lib/lib{i}c.so", read_file(PTX80)),
        ]
    members += [
        ("gamma/vendor/inner-1.0-py3-none-any.whl", inner),
        ("gamma/lib/libbroken.so", read_file(SM80)),
    ]
    data = bytearray(zip_archive(members))
    pos = data.rfind(b"gamma/lib/libbroken.so", 0, data.find(b"PK\x01\x02")) + len("gamma/lib/libbroken.so")
    data[pos + 200 : pos + 260] = b"\xff" * 60  # inside its compressed bytes
    whl = tmp_path / "gamma_gpu-2.0-py3-none-manylinux_2_28_x86_64.whl"
    whl.write_bytes(bytes(data))
    return whl


def test_split_wheel_gives_the_same_records_in_order_and_one_cache_entry(tmp_path, monkeypatch):
    from fatbin_inspect.scanning import options_fingerprint, units, worker
    from fatbin_inspect.scanning.cache import ScanCache, stat_key

    whl = _big_wheel(tmp_path)
    spans = worker.zip_spans(str(whl), False, 4, 1)
    assert spans and len(spans) >= 4 and spans[0][0] == 0
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))  # contiguous, all members covered
    whole = scan([str(whl)], _opts(tmp_path, cache_dir=None))  # jobs=1: never split
    assert any(r.error for r in whole.reports) and len(whole.reports) == 20
    assert any("inner-1.0" in r.path and r.distribution == "inner 1.0" for r in whole.reports)
    split = []
    real = units.zip_parts
    monkeypatch.setattr(units, "zip_parts", lambda p, k, s, w: (split.append(len(s)), real(p, k, s, w))[1])
    monkeypatch.setattr(units, "SPLIT_BYTES", 1)
    monkeypatch.setattr(units, "SPAN_BYTES", 1)
    cold = scan([str(whl)], _opts(tmp_path, jobs=2))
    assert split and split[0] >= 4
    assert cold.reports == whole.reports
    # the records in member order, as the whole-file inventory gives them (before the sort by path)
    cached = ScanCache(str(tmp_path / "cache"), options_fingerprint(None))
    key = stat_key(os.stat(whl))

    expect = [r for r in inspect_path(str(whl)) if r.fatbins or r.error]
    assert [r.path for r in cached.get(os.path.abspath(whl), key).reports(str(whl))] == [
        r.path for r in expect
    ]
    cached.close()
    warm = scan([str(whl)], _opts(tmp_path, jobs=2))
    assert warm.stats.cache_hits == 1 and warm.reports == whole.reports and len(split) == 1


def test_split_spans_join_like_the_whole_walk():
    from fatbin_inspect.formats.model import FileError, FileReport
    from fatbin_inspect.scanning.units import join_spans

    def rec(p, err=None):
        return FileReport(path=p, format="elf", size=1, error=FileError(err) if err else None)

    def enc(*recs):  # as the workers hand them back (worker.encoded)
        from fatbin_inspect.scanning.worker import encoded

        return encoded(recs, "w", None, False)

    parts = [enc(rec("w!a")), [], enc(rec("w", "zip breaks off"), rec("w!b")), enc(rec("w!c"))]
    assert join_spans("w", parts) == enc(rec("w", "zip breaks off"), rec("w!a"), rec("w!b"))
    assert join_spans("w", [enc(rec("w!a")), enc(rec("w!c"))]) == enc(rec("w!a"), rec("w!c"))


def test_progress_switch(monkeypatch):
    monkeypatch.delenv("FATBIN_INSPECT_PROGRESS", raising=False)

    class Tty(io.StringIO):
        def isatty(self):
            return True

    quiet, tty = io.StringIO(), Tty()
    for stream in (quiet, tty):
        p = Progress(stream, delay=0)
        p(1, 10, 4096)
        p.close()
    assert quiet.getvalue() == "" and tty.getvalue() != ""
    late = Tty()
    p = Progress(late, delay=3600)  # a scan shorter than the delay draws nothing
    p(1, 10, 4096)
    p.close()
    assert late.getvalue() == ""
    monkeypatch.setenv("FATBIN_INSPECT_PROGRESS", "0")
    assert Progress(Tty()).enabled is False


def test_default_roots_are_the_interpreter_site_packages():
    roots = resolve_roots(())
    assert [r.path for r in roots] == list(interpreter_site_packages())
    assert roots and all(os.path.isdir(r.path) for r in roots)


def test_conda_meta_attribution(tmp_path):
    prefix = tmp_path / "conda"
    (prefix / "conda-meta").mkdir(parents=True)
    (prefix / "lib").mkdir()
    (prefix / "lib" / "libcuthing.so").write_bytes(read_file(SM80))
    (prefix / "conda-meta" / "cuthing-12.1-h0.json").write_text(
        json.dumps({"name": "cuthing", "version": "12.1", "files": ["lib/libcuthing.so"]})
    )
    res = scan([str(prefix)], _opts(tmp_path))
    assert resolve_roots([str(prefix)])[0].kind == "conda"
    assert [r.distribution for r in res.reports] == ["cuthing 12.1"]


def test_cli_table_and_json(site, tmp_path, monkeypatch):
    jsonschema = pytest.importorskip("jsonschema")
    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("NO_COLOR", "1")
    res = cli("scan", str(site), "--files", "-j", "1")
    assert res.code == 0, res.out
    assert "alpha-gpu 1.2.3" in res.out and "libalpha.so" in res.out and "\x1b[" not in res.out + res.err
    res = cli("scan", str(site), "--format", "json", "-j", "1")
    assert res.code == 0
    doc = res.json()
    with open(os.path.join(os.path.dirname(fatbin_inspect.__file__), "schemas", "scan.schema.json")) as fh:
        jsonschema.validate(doc, json.load(fh))
    assert {f["distribution"] for f in doc["files"]} == {
        "alpha-gpu 1.2.3",
        "nvidia-one 13.0",
        "nvidia-two 12.0",
        None,
    }
    assert [r["name"] for r in doc["coverage"]["rows"]][:3] == [
        "alpha-gpu 1.2.3",
        "nvidia-one 13.0",
        "nvidia-two 12.0",
    ]


def test_cli_gpu_verdicts(site, tmp_path, monkeypatch):
    pytest.importorskip("fatbin_inspect.compat.engine")
    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(tmp_path / "c"))
    res = cli("scan", str(site), "--gpu", "sm_86", "--format", "json", "-j", "1")
    doc = res.json()
    rows = {r["name"]: r for r in doc["coverage"]["rows"]}
    # sm_80 SASS runs natively on 8.6; a compute_80-only build must be JIT-compiled
    assert rows["nvidia-one 13.0"]["verdicts"][0]["verdict"] == "native"
    assert rows["nvidia-two 12.0"]["verdicts"][0]["verdict"] == "jit"
    assert doc["targets"][0]["cc"] == "8.6"
    res = cli("scan", str(site), "--gpu", "sm_86", "-j", "1")
    # the attention line gives the deciding file's own reason (never a row-wide fact that could contradict it)
    assert "nvidia-two 12.0: jit" in res.out and "JIT-compiles the compute_80 PTX" in res.out


def test_summary_records_match_full_records_cold_warm_and_uncached(site, tmp_path):
    full = scan([str(site)], _opts(tmp_path, cache_dir=None))
    expected = [coverage.summarize(r) for r in full.reports]
    cold = scan([str(site)], _opts(tmp_path, summary=True))
    warm = scan([str(site)], _opts(tmp_path, summary=True))
    uncached = scan([str(site)], _opts(tmp_path, summary=True, cache_dir=None))
    assert warm.stats.cache_hits == warm.stats.inspected == 5
    for res in (cold, warm, uncached):
        assert list(res.reports) == expected
        assert [r.distribution for r in res.reports] == [r.distribution for r in full.reports]
        assert coverage.build(res.reports) == coverage.build(full.reports)
    # the full records come back from the same rows
    again = scan([str(site)], _opts(tmp_path))
    assert again.stats.cache_hits == 5 and again.reports == full.reports
    # a changed file is a miss for summaries too
    (site / "nvidia" / "one" / "lib" / "libone.so").write_bytes(read_file(MULTI))
    third = scan([str(site)], _opts(tmp_path, summary=True))
    assert third.stats.cache_hits == 4
    one = next(r for r in third.reports if r.path.endswith("libone.so"))
    assert {a for _, _, a in one.arches} == {
        e.arch for rec in inspect_path(MULTI) for e in rec.entries if e.kind in ("sass", "ptx")
    }


def test_cached_records_follow_the_path_as_given(site, tmp_path, monkeypatch):
    monkeypatch.chdir(site.parent)
    rel = scan(["site-packages"], _opts(tmp_path))
    assert rel.reports and all(r.path.startswith("site-packages" + os.sep) for r in rel.reports)
    for summary in (False, True):
        ab = scan([str(site)], _opts(tmp_path, summary=summary))
        assert ab.stats.cache_hits == 5
        assert [r.path for r in ab.reports] == [str(site.parent / r.path) for r in rel.reports]
        back = scan(["site-packages"], _opts(tmp_path, summary=summary))
        assert [r.path for r in back.reports] == [r.path for r in rel.reports]


def test_options_given_as_a_dict_share_the_cache_with_options():
    from fatbin_inspect.inventory.options import Options
    from fatbin_inspect.scanning import FINGERPRINT_DEFAULTS, options_fingerprint

    assert {k: getattr(Options(), k) for k in FINGERPRINT_DEFAULTS} == FINGERPRINT_DEFAULTS
    assert options_fingerprint(None) == options_fingerprint({}) == options_fingerprint(Options())
    assert options_fingerprint({"kernels": True, "jobs": 1}) == options_fingerprint(Options(kernels=True))
    assert options_fingerprint({"probe_small": True}) != options_fingerprint({})


def test_stat_walk_agrees_with_the_plain_walk(site, tmp_path):
    from fatbin_inspect.inventory.walk import iter_files, iter_stat

    os.symlink(site / "alpha", site / "stray" / "alpha_link")  # followed by neither
    os.symlink(tmp_path / "nowhere", site / "stray" / "dangling")
    for root in (str(site), str(site) + os.sep, str(site / "alpha" / "lib" / "libalpha.so")):
        walked = list(iter_stat(root))
        assert [(p, skip) for p, _, _, skip in walked] == list(iter_files(root))
        for p, ap, st, _skip in walked:
            assert ap == os.path.abspath(p)
            if st is not None:
                assert (st.st_size, st.st_mtime_ns, st.st_ino) == (
                    os.stat(p).st_size,
                    os.stat(p).st_mtime_ns,
                    os.stat(p).st_ino,
                )


def test_the_walk_tells_its_listener_each_folder_in_walk_order(tmp_path):
    """``iter_stat``'s ``listed`` sees every folder once, as the walk reaches it, with its sorted
    entries (a dangling symlink noted as such, a live one as "symlink"), or None for an image
    layout folder, which the walk does not enter."""
    from fatbin_inspect.inventory.walk import DANGLING, iter_stat

    (tmp_path / "b" / "c").mkdir(parents=True)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x")
    (tmp_path / "b" / "c" / "g").write_bytes(b"y")
    os.symlink(tmp_path / "a" / "f", tmp_path / "b" / "live")
    os.symlink(tmp_path / "nowhere", tmp_path / "b" / "dead")
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "oci-layout").write_text("{}")
    (tmp_path / "img" / "index.json").write_text("{}")
    seen = []
    items = list(iter_stat(str(tmp_path), lambda folder, entries: seen.append((folder, entries))))
    root, j = str(tmp_path), os.path.join
    assert [f for f, _ in seen] == [root, j(root, "a"), j(root, "b"), j(root, "b", "c"), j(root, "img")]
    assert [(n, note) for n, _st, note in seen[2][1]] == [
        ("c", None),
        ("dead", DANGLING),
        ("live", "symlink"),
    ]
    assert seen[-1][1] is None
    assert (j(root, "b", "dead"), DANGLING) in [(p, skip) for p, _, _, skip in items]
    assert (j(root, "img"), None) in [(p, skip) for p, _, _, skip in items]


def test_record_lookup_handles_quoted_and_outside_paths(tmp_path):
    from fatbin_inspect.scanning.distributions import Attributor

    site = tmp_path / "lib" / "python3.11" / "site-packages"
    info = site / "gamma-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Name: gamma\nVersion: 1.0\n\n")
    for rel in ("gamma/a,b.so", "gamma/plain.so", "gamma/x.py"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(b"x")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tool").write_bytes(b"x")
    (info / "RECORD").write_text(
        '"gamma/a,b.so",sha256=x,1\r\ngamma/plain.so,sha256=x,1\r\ngamma/x.py,,\r\n../../../bin/tool,,\r\n'
    )
    owners = Attributor()
    assert owners.distribution(str(site / "gamma" / "a,b.so")) == "gamma 1.0"
    assert owners.distribution(str(site / "gamma" / "plain.so")) == "gamma 1.0"
    assert owners.distribution(str(tmp_path / "bin" / "tool")) == "gamma 1.0"
    assert owners.distribution(str(site / "gamma" / "x.py")) is None  # sources are never indexed
    assert owners.distribution(str(site / "gamma" / "plain")) is None  # a prefix of a listed path


def test_cli_output_is_the_same_cold_warm_and_uncached(site, tmp_path, monkeypatch):
    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("NO_COLOR", "1")

    def table(*extra):
        res = cli("scan", str(site), "--files", "-j", "1", *extra)
        assert res.code == 0, res.out
        return res.out.split("\n", 1)[1]  # the summary line holds the time and the cache hits

    def doc(*extra):
        res = cli("scan", str(site), "--format", "json", "-j", "1", *extra)
        assert res.code == 0, res.out
        d = res.json()
        d.pop("stats")
        return d

    cold, warm, uncached = table(), table(), table("--no-cache")
    assert cold == warm == uncached and "libalpha.so" in warm
    assert doc() == doc() == doc("--no-cache")


def test_archive_members_belong_to_the_distribution_owning_the_archive(tmp_path):
    """``site/cumm/lib/libcudadevrt.a!cuda_device_runtime.o``: the RECORD lists the archive."""
    s = tmp_path / "site-packages"
    lib = ar_archive([("dev_rt.o", read_file(fixture_path("bin", "t17_nonrdc_sm80.o")))])
    nested = tar_archive([("inner/kernels.a", lib)])
    _dist(s, "cumm", "0.7", {"cumm/lib/libdevrt.a": lib, "cumm/data/blob.tar": nested})
    res = scan([str(s)], _opts(tmp_path))
    got = {os.path.relpath(r.path, s): r.distribution for r in res.reports}
    assert got == {
        "cumm/lib/libdevrt.a!dev_rt.o": "cumm 0.7",
        "cumm/data/blob.tar!inner/kernels.a!dev_rt.o": "cumm 0.7",
    }


@pytest.mark.parametrize("kind", ["tar", "tgz", "zip", "zip-stored"])
def test_extensionless_executable_inside_an_archive_is_found_by_content(tmp_path, kind):
    members = [("usr/bin/cuda_app", read_file(SM80)), ("usr/share/doc/README", b"plain text\n" * 100)]
    if kind.startswith("zip"):
        data = zip_archive(members, stored=kind == "zip-stored")
    else:
        data = tar_archive(members, gz=kind == "tgz")
    arc = tmp_path / f"image.{kind}"
    arc.write_bytes(data)
    recs = list(inspect_path(str(arc)))
    assert [r.path.split("!", 1)[1] for r in recs[1:]] == ["usr/bin/cuda_app"]
    assert "sm_80" in {e.arch for e in recs[1].entries} and recs[0].error is None


@pytest.mark.parametrize("all_members", [False, True])
def test_a_large_zip_listed_by_worker_processes_gives_the_records_of_one_walk(
    tmp_path, monkeypatch, all_members
):
    """list/check/gate of a wheel above SPLIT_BYTES: spans inflated in parallel, same records."""
    from fatbin_inspect.inventory import reader as core
    from fatbin_inspect.inventory.options import Options

    whl = _big_wheel(tmp_path)
    members = "all" if all_members else "device"
    one = list(inspect_path(str(whl), Options(jobs=1, members=members)))
    monkeypatch.setattr(core, "SPLIT_BYTES", 1)
    monkeypatch.setattr(core, "SPAN_BYTES", 1)
    calls = []
    real = core._inspect_zip_parallel
    monkeypatch.setattr(core, "_inspect_zip_parallel", lambda *a: (calls.append(len(a[1])), real(*a))[1])
    par = list(inspect_path(str(whl), Options(jobs=2, members=members)))
    assert calls and calls[0] >= 4
    assert par == one and [r.notes for r in par] == [r.notes for r in one]
    assert par[0].path == str(whl) and any(r.error for r in par[1:])  # the zip first; the broken member kept


def test_quick_test_skips_code_where_the_inventory_never_looks(tmp_path):
    """The scan's quick test looks for the fatbin magic only where the inventory would find a
    fatbin: not in code, tables or debug info of a readable section table; everywhere when the
    section table does not read."""
    import builders as B

    from fatbin_inspect.formats.binio import open_blob
    from fatbin_inspect.inventory.hidden import magic_ranges
    from fatbin_inspect.inventory.options import Options
    from fatbin_inspect.scanning import worker

    fb = B.sample_fatbin()
    cases = [
        (B.elf64([(".debug_info", 1, fb)]), False),  # where the inventory never looks
        (B.elf64([(".symtab", 2, fb)]), False),
        (B.elf64([(".rodata", 1, fb)]), True),
    ]
    broken = bytearray(B.elf64([(".debug_info", 1, fb)]))
    broken[0x28:0x30] = (1 << 40).to_bytes(8, "little")  # e_shoff past the end
    for i, (data, found) in enumerate([*cases, (bytes(broken), True)]):
        path = tmp_path / f"lib{i}.so"
        path.write_bytes(data)
        blob = open_blob(str(path))
        assert worker.has_magic(blob), i  # the bytes are there in every case
        assert worker.has_magic(blob, magic_ranges("elf", blob)) is found, i
        if i < len(cases):
            assert bool(worker.inspect_file(str(path), Options())) is found, i


def test_quick_test_looks_in_the_fatbin_sections_first(tmp_path):
    """``magic_ranges`` gives the fatbin sections first (the search ends there), then the rest:
    together every byte outside code, each once."""
    import itertools

    import builders as B

    from fatbin_inspect.formats.binio import gaps, open_blob
    from fatbin_inspect.inventory import hidden

    fb = B.sample_fatbin()
    data = B.elf64(
        [
            (".text", 1, b"\x90" * 300),
            (".rodata", 1, b"r" * 5000),
            (".nv_fatbin", 1, fb),
            (".data", 1, b"d" * 70),
        ]
    )
    path = tmp_path / "lib.so"
    path.write_bytes(data)
    blob = open_blob(str(path))
    ranges = hidden.magic_ranges("elf", blob)
    start = data.index(fb)
    assert ranges[0] == (start, start + len(fb))
    layout = hidden.layout_of("elf", blob)
    covered = sorted(ranges)
    assert all(b <= c for (_a, b), (c, _d) in itertools.pairwise(covered))  # each byte once
    assert sum(b - a for a, b in ranges) == sum(b - a for a, b in gaps(hidden.code_ranges(layout), blob.size))


def test_a_warm_json_scan_loads_neither_the_engine_nor_a_parser(tmp_path):
    """The warm path imports what it uses: the coverage matrix of a scan without targets needs
    no compatibility engine (compat.jit loads it) and a cached tree no format parser."""
    import subprocess
    import sys

    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copyfile(fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90"), tree / "lib.so")
    env = dict(os.environ, FATBIN_INSPECT_CACHE_DIR=str(tmp_path / "cache"), FATBIN_INSPECT_PROGRESS="0")
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(fatbin_inspect.__file__))
    probe = (
        "import sys; from fatbin_inspect.cli.main import main\n"
        "try: main(['scan', '--format', 'json', '-o', sys.argv[1], sys.argv[2]])\n"
        "except SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('fatbin_inspect.')))\n"
    )
    run = [sys.executable, "-c", probe, str(tmp_path / "out.json"), str(tree)]
    subprocess.run(run, env=env, check=True, capture_output=True)  # cold: fills the cache
    warm = json.loads(
        subprocess.run(run, env=env, check=True, capture_output=True, text=True).stdout.replace("'", '"')
    )
    assert "fatbin_inspect.scanning.coverage" in warm
    for heavy in (
        "fatbin_inspect.compat.engine",
        "fatbin_inspect.compat.jit",
        "fatbin_inspect.inventory.reader",
        "fatbin_inspect.formats.binio",
        "fatbin_inspect.formats.cubin",
        "fatbin_inspect.formats.fatbin",
        "fatbin_inspect.formats.ptx",
    ):
        assert heavy not in warm
