"""Wheels as pip installs them (issue 53 item 4): two members of one name. pip writes every member
in central-directory order, so the last one is the file on disk; that one is judged, and the
wheel's record says the name repeats. pip itself (``pip install --target``) is the reference."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
from conftest import fixture_path
from hostile_runner import run_many

from fatbin_inspect.containers.wheel import read_wheel_metadata

FIRST = fixture_path("bin", "t01_exe_sm80")  # sm_80 SASS: native on an A100
LAST = fixture_path("bin", "t12_lib_sm86_c89.so")  # sm_86 SASS + compute_89 PTX: nothing for 8.0
NOTE = "dup/libdup.so: 2 members of the zip have this name: the last one, which pip installs, is read"


def dup_wheel(tmp_path: Path) -> Path:
    whl = tmp_path / "dup-1.0-py3-none-any.whl"
    with warnings.catch_warnings(), zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
        warnings.simplefilter("ignore")  # zipfile warns "Duplicate name": the point of the test
        z.write(FIRST, "dup/libdup.so")
        z.writestr("dup-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: dup\nVersion: 0.9\n")
        z.writestr(
            "dup-1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        z.write(LAST, "dup/libdup.so")
        z.writestr("dup-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: dup\nVersion: 1.0\n")
        z.writestr("dup-1.0.dist-info/RECORD", "")
    return whl


@pytest.mark.slow
def test_pip_installs_the_last_member_and_that_one_is_judged(tmp_path):
    whl = dup_wheel(tmp_path)
    target = tmp_path / "installed"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--target",
            str(target),
            str(whl),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert (target / "dup/libdup.so").read_bytes() == Path(LAST).read_bytes()  # pip's answer
    assert "Version: 1.0" in (read_wheel_metadata(str(whl)) or "")

    listing, check, scan = run_many(
        tmp_path,
        [
            ["list", str(whl), "--format", "json"],
            ["check", str(whl), "--gpu", "A100", "--format", "json"],
            ["scan", str(whl), "--format", "json", "--no-cache", "-j1"],
        ],
    )
    files = {f["path"]: f for f in json.loads(listing.out)["files"]}
    assert files[str(whl)]["notes"] == [NOTE.replace("dup/libdup.so", "dup-1.0.dist-info/METADATA")]
    member = files[f"{whl}!dup/libdup.so"]
    assert member["notes"] == [NOTE]
    assert [e["arch"] for fb in member["fatbins"] for e in fb["entries"]] == ["sm_86", "sm_86", "compute_89"]
    (result,) = [r for r in json.loads(check.out)["results"] if r["path"].endswith("!dup/libdup.so")]
    assert result["verdict"] == "fail", result  # the first member (sm_80) would be native
    doc = json.loads(scan.out)
    (rec,) = [f for f in doc["files"] if f["path"].endswith("!dup/libdup.so")]
    assert rec["distribution"] == "dup 1.0" and rec["notes"] == [NOTE], rec


def test_a_repeated_name_without_device_code_is_named_too(tmp_path):
    whl = tmp_path / "t-1.0-py3-none-any.whl"
    with warnings.catch_warnings(), zipfile.ZipFile(whl, "w") as z:
        warnings.simplefilter("ignore")
        z.writestr("t/a.py", "x = 1\n")
        z.write(LAST, "t/libt.so")
        z.writestr("t/a.py", "x = 2\n")
    (run,) = run_many(tmp_path, [["list", str(whl), "--format", "json"]])
    files = {f["path"]: f for f in json.loads(run.out)["files"]}
    assert files[str(whl)]["notes"] == [
        "t/a.py: 2 members of the zip have this name: the last one, which pip installs, is read"
    ]
    assert [e["arch"] for fb in files[f"{whl}!t/libt.so"]["fatbins"] for e in fb["entries"]][0] == "sm_86"
