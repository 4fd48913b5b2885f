"""Wording of the terminal reports: counted nouns agree with their count (one helper,
``render.wording.plural``), a scan without device code never claims that everything runs
natively, and the check matrix never cuts a file name to fit its column."""

import os
import shutil

import pytest
from conftest import cli, fixture_path

from fatbin_inspect.render.console import wrap
from fatbin_inspect.render.wording import plural

WIDE = {"COLUMNS": "200"}


def test_plural():
    assert [plural(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]
    assert plural(1, "entry") == "1 entry" and plural(3, "entry") == "3 entries"
    assert plural(2, "distribution/folder") == "2 distributions/folders"


def test_singular_counts_in_every_summary(tmp_path):
    exe = fixture_path("bin", "t01_exe_sm80")
    out = cli("check", exe, "--gpu", "A100", env=WIDE).out
    assert "1 result:" in out and "1 results" not in out
    out = cli(
        "gate",
        fixture_path("bin", "t03_exe_ptx_only_c80"),
        "--require",
        "sm_80,sm_90",
        "--isolated",
        env=WIDE,
    ).out
    assert "1 artifact, 3 checks: 2 errors, 0 warnings, 0 notes" in out, out
    out = cli("gate", exe, "--require", "sm_90", "--ptx-counts", "--isolated", env=WIDE).out
    assert "1 artifact, 2 checks: 0 errors, 0 warnings, 1 note " in out, out
    out = cli("gate", exe, "--require", "sm_80,sm_90", "--isolated", "--format", "markdown", env=WIDE).out
    assert "1 artifact, 3 checks; 1 error, 0 warnings, 0 notes" in out, out
    shutil.copy(exe, tmp_path / "app")
    out = cli("scan", str(tmp_path), "--no-cache", env=WIDE).out
    assert out.startswith("1 file with device code in 1 distribution/folder (scanned 1 file,"), out
    out = cli(fixture_path("bin", "t14_sm90a.cubin"), "--color", "never", env=WIDE).out
    assert "1 fatbin, 1 entry in" in out, out


def test_scan_without_device_code_judges_nothing(tmp_path):
    (tmp_path / "README.txt").write_text("no CUDA here\n")
    ran = cli("scan", str(tmp_path), "--gpu", "H100", "--no-cache", env=WIDE)
    out = ran.out
    assert ran.code == 0 and "everything runs natively" not in out, out
    assert "NVIDIA H100" in out and "nothing to judge" in out


def test_scan_with_device_code_still_says_it_runs(tmp_path):
    shutil.copy(fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90"), tmp_path / "app")
    out = cli("scan", str(tmp_path), "--gpu", "H100", "--no-cache", env=WIDE).out
    assert "everything runs natively" in out, out


@pytest.mark.parametrize("component", [12, 45])
def test_check_matrix_at_80_columns_cuts_no_file_name(tmp_path, component):
    deep = tmp_path / ("d" * component) / "site-packages" / "torch" / "lib"
    deep.mkdir(parents=True)
    names = ["libtorch_cuda_variant.so", "t02_exe_sm75_sm80_sm90_c90"]
    for n in names:
        shutil.copy(fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90"), deep / n)
    shutil.copy(fixture_path("bin", "t01_exe_sm80"), tmp_path / "short")
    args = ["check", *(str(deep / n) for n in names), str(tmp_path / "short"), "--color", "never"]
    args += ["--gpu", "H100", "--gpu", "RTX 5090", "--gpu", "T4"]
    out = cli(*args, env={"COLUMNS": "80"}).out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    words = {*names, "d" * component, "site-packages"}
    for w in words:  # each whole on some line
        assert any(w in line for line in lines), (w, out)
    assert "native sm_90" in out and "jit compute_90" in out


def test_wrap_breaks_long_paths_after_a_separator_only():
    from rich.text import Text

    t = Text("see aaaa/bbbbbbbb/cccc.so!pkg/lib.so now")
    lines = [x.plain for x in wrap(t, 12)]
    assert all(len(x) <= 12 for x in lines), lines
    assert "".join(x if x.endswith(("/", "!")) else x + " " for x in lines).split() == t.plain.split()
    assert [x.plain for x in wrap(Text("x" * 30), 10)] == ["x" * 10] * 3  # a name wider than any line
    assert os.sep == "/"
