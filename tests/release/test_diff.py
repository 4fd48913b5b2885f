"""``diff``: two wheels built here from the committed fixtures (the new one drops sm_75 and sm_90),
matched member by member; kernel drops on synthesized libraries; ``--fail-on-dropped``."""

import os

import builders as B
import pytest
from conftest import CORPUS, cli, fixture_path

from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path
from fatbin_inspect.release import diff as D

OLD_LIB = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")  # sm_75, sm_80, sm_90 + compute_90
NEW_LIB = fixture_path("bin", "t01_exe_sm80")  # sm_80 + compute_80
EXTRA = fixture_path("bin", "t12_lib_sm86_c89.so")

CORPUS_DIR = os.environ.get("FATBIN_INSPECT_CORPUS", CORPUS)
needs_fixtures = pytest.mark.skipif(
    not all(map(os.path.exists, (OLD_LIB, NEW_LIB, EXTRA))),
    reason="fixtures/bin not built (scripts/build_fixtures.sh)",
)


def read(path):
    with open(path, "rb") as fh:
        return fh.read()


@pytest.fixture
def wheels(tmp_path):
    old = tmp_path / "demo-1.0-py3-none-any.whl"
    new = tmp_path / "demo-2.0-py3-none-any.whl"
    old.write_bytes(
        B.zip_archive(
            [("demo/lib.so", read(OLD_LIB)), ("demo/extra.so", read(EXTRA)), ("demo/__init__.py", b"")]
        )
    )
    new.write_bytes(B.zip_archive([("demo/lib.so", read(NEW_LIB)), ("demo/__init__.py", b"")]))
    return str(old), str(new)


def run(old, new, kernels=True):
    opts = Options(kernels=kernels, details=kernels)
    return D.diff(inspect_path(old, opts), old, inspect_path(new, opts), new)


@needs_fixtures
def test_wheels_matched_by_member_path(wheels):
    old, new = wheels
    d = run(old, new)
    by_key = {f.key: f for f in d.files}
    assert set(by_key) == {"demo/lib.so", "demo/extra.so"}
    lib = by_key["demo/lib.so"]
    assert lib.status == "changed"
    assert lib.archs_dropped == ("sm_75", "sm_90", "compute_90") and lib.archs_added == ("compute_80",)
    assert lib.kernels_dropped == () and lib.kernels_added == ()  # same sources, fewer archs
    assert by_key["demo/extra.so"].status == "dropped"
    (dist,) = d.distributions
    assert (dist.name, dist.old_version, dist.new_version) == ("demo", "1.0", "2.0")
    assert dist.archs_dropped == ("sm_75", "sm_86", "sm_90", "compute_89", "compute_90")
    rep = D.findings(d)
    assert sorted((f.rule_id, f.arch) for f in rep.findings) == [
        ("FBI010", "compute_90"),
        ("FBI010", "sm_75"),
        ("FBI010", "sm_86"),  # the release as a whole: only the dropped extra.so had sm_86/compute_89
        ("FBI010", "sm_90"),
        ("FBI012", None),
    ]


def test_kernel_drops_and_directories(tmp_path):
    for side, kernels in (("old", ("_Z1av", "_Z1bv", "_Z1cv")), ("new", ("_Z1av", "_Z1dv"))):
        (tmp_path / side / "lib").mkdir(parents=True)
        (tmp_path / side / "lib" / "k.so").write_bytes(B.arch_library(B.arch_fatbin(["80"], kernels=kernels)))
    old, new = str(tmp_path / "old"), str(tmp_path / "new")
    from fatbin_inspect.judging.inputs import iter_reports

    opts = Options(kernels=True, details=True)
    d = D.diff(iter_reports([old], opts), old, iter_reports([new], opts), new)
    (f,) = d.files
    assert f.key == "lib/k.so" and f.kernels_dropped == ("_Z1bv", "_Z1cv") and f.kernels_added == ("_Z1dv",)
    assert [x.rule_id for x in D.findings(d).findings] == ["FBI011"]
    d = D.diff(iter_reports([old], Options()), old, iter_reports([new], Options()), new)
    assert d.files[0].status == "same"  # without --kernels only archs are compared


def test_match_key_strips_the_version_of_nested_wheels():
    assert D.match_key("a/x-1.0.tar!x-1.0-py3-none-any.whl!x/l.so", "a/x-1.0.tar") == "x.whl!x/l.so"
    assert D.match_key("root/sub/l.so", "root") == "sub/l.so"
    assert D.match_key("one.so", "one.so") == "."


@needs_fixtures
def test_cli_fail_on_dropped(wheels):
    old, new = wheels
    for args, code in (([], 0), (["--fail-on-dropped"], 1)):
        doc = cli("diff", old, new, "--format", "json", *args, codes=code).json()
        assert doc["command"] == "diff" and doc["summary"]["failed"] == (code == 1)
        assert {f["key"]: f["status"] for f in doc["diff"]["files"]} == {
            "demo/lib.so": "changed",
            "demo/extra.so": "dropped",
        }
    assert "<testcase" in cli("diff", new, new, "--fail-on-dropped", "--format", "junit", codes=0).out


@needs_fixtures
def test_archs_dropped_by_the_release_as_a_whole(tmp_path):
    # every library renamed (as bitsandbytes 0.42.0 -> 0.50.2): no per-file FBI010, one for the release
    old = tmp_path / "demo-1.0-py3-none-any.whl"
    new = tmp_path / "demo-2.0-py3-none-any.whl"
    old.write_bytes(B.zip_archive([("demo/lib_cuda118.so", read(OLD_LIB))]))
    new.write_bytes(B.zip_archive([("demo/lib_cuda130.so", read(NEW_LIB))]))
    report = D.findings(run(str(old), str(new), kernels=False))
    drops = [f for f in report.findings if f.rule_id == "FBI010"]
    assert [(f.distribution, f.arch) for f in drops] == [("demo", "sm_75")]
    assert "demo 1.0 -> 2.0 drops sm_75, sm_90, compute_90 from the release as a whole" in drops[0].message


def test_unhashed_names_of_repaired_wheels():
    assert D.unhashed("w.whl!ct.libs/libctranslate2-1e22bce9.so.3.24.0") == "w.whl!ct.libs/libctranslate2.so"
    assert D.unhashed("pkg.libs/libgomp-a34b3233.so.1.0.0") == "pkg.libs/libgomp.so"
    assert (
        D.unhashed("w.whl!pkg.libs/cudart64_12-" + "0123456789abcdef" * 2 + ".dll")
        == "w.whl!pkg.libs/cudart64_12.dll"
    )
    assert D.unhashed("lib/libfoo.so.3") == "lib/libfoo.so"
    assert (
        D.unhashed("lib/libfoo.so") is None and D.unhashed("pkg/_ext.cpython-311-x86_64-linux-gnu.so") is None
    )
    assert D.unhashed("lib/libcuda-notahash.so.1") == "lib/libcuda-notahash.so"  # only the version goes


@needs_fixtures
def test_a_library_auditwheel_renamed_is_one_file(tmp_path):
    """auditwheel vendors libfoo as demo.libs/libfoo-<hash>.so.N; the next release has another
    hash and soname version: the same library, not one dropped and one added."""
    old = tmp_path / "demo-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    new = tmp_path / "demo-2.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    old.write_bytes(B.zip_archive([("demo.libs/libdemo-1e22bce9.so.1.0.0", read(OLD_LIB))]))
    new.write_bytes(B.zip_archive([("demo.libs/libdemo-a7a60d30.so.2.1.0", read(NEW_LIB))]))
    d = run(str(old), str(new), kernels=False)
    (f,) = d.files
    assert f.status == "changed" and f.key == "demo.libs/libdemo-a7a60d30.so.2.1.0"
    assert f.renamed_from == "demo.libs/libdemo-1e22bce9.so.1.0.0"
    assert f.archs_dropped == ("sm_75", "sm_90", "compute_90") and f.archs_added == ("compute_80",)
    assert {x.rule_id for x in D.findings(d).findings} == {"FBI010"}  # no FBI012 "file dropped"


@needs_fixtures
def test_an_ambiguous_rename_is_not_guessed(tmp_path):
    old = tmp_path / "demo-1.0-py3-none-any.whl"
    new = tmp_path / "demo-2.0-py3-none-any.whl"
    old.write_bytes(B.zip_archive([("demo.libs/libdemo-1e22bce9.so.1", read(OLD_LIB))]))
    new.write_bytes(
        B.zip_archive(
            [
                ("demo.libs/libdemo-a7a60d30.so.2", read(NEW_LIB)),
                ("demo.libs/libdemo-b8b71e41.so.3", read(EXTRA)),
            ]
        )
    )
    statuses = sorted(f.status for f in run(str(old), str(new), kernels=False).files)
    assert statuses == ["added", "added", "dropped"]


CT2 = [
    os.path.join(CORPUS_DIR, f"ctranslate2-{v}-cp311-cp311-{p}.whl")
    for v, p in (
        ("3.24.0", "manylinux_2_17_x86_64.manylinux2014_x86_64"),
        ("4.8.5", "manylinux_2_27_x86_64.manylinux_2_28_x86_64"),
    )
]


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.skipif(
    not all(map(os.path.exists, CT2)),
    reason="pip download --no-deps ctranslate2==3.24.0 ctranslate2==4.8.5 -d .cache/corpus (scripts/fetch_corpus.sh)",
)
def test_ctranslate2_3_24_to_4_8_matches_its_renamed_library():
    doc = cli("diff", *CT2, "--format", "json", "--no-kernels", codes=0).json()  # --fail-on never
    files = {f["key"]: f for f in doc["diff"]["files"]}
    lib = files["ctranslate2.libs/libctranslate2-a7a60d30.so.4.8.5"]
    assert lib["status"] == "changed" and lib["renamed_from"].endswith("libctranslate2-1e22bce9.so.3.24.0")
    assert lib["archs_dropped"] == ["sm_35", "sm_50"] and lib["archs_added"] == []
    assert not [f for f in files.values() if f["status"] in ("added", "dropped")]
    assert {x["rule_id"] for x in doc["findings"]} == {"FBI010"}


@needs_fixtures
def test_two_single_files_name_the_file_in_findings():
    """``diff OLD NEW`` of two files: the finding's path is the file; its message names no key
    ``.`` ("sm_75 dropped from .")."""
    doc = cli("diff", OLD_LIB, NEW_LIB, "--format", "json", "--fail-on", "never", codes=0).json()
    drops = [f for f in doc["findings"] if f["rule_id"] == "FBI010"]
    assert sorted(f["message"] for f in drops) == ["compute_90 dropped", "sm_75 dropped", "sm_90 dropped"]
    assert {f["path"] for f in drops} == {NEW_LIB}, drops


@needs_fixtures
def test_two_single_files_name_the_file_in_the_table_and_markdown():
    """The row of two files compared names the new file, not its match key ``.``."""
    for fmt in ("table", "markdown"):
        out = cli("diff", OLD_LIB, NEW_LIB, "--format", fmt, "--fail-on", "never", codes=0).out
        row = next(line for line in out.splitlines() if "changed" in line)
        assert "t01_exe_sm80" in row and "`.`" not in row and not row.startswith(". "), (fmt, row)
