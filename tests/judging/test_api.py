"""The library API at the package root gives what the CLI's JSON says, for the same options; the
README's pytest example runs as written."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import builders as B
import pytest
from conftest import ROOT, cli_json, fixture_path

import fatbin_inspect as fi
from fatbin_inspect.release import policy as policy_mod
from fatbin_inspect.render.check_json import result_dict
from fatbin_inspect.render.findings.json import document
from fatbin_inspect.render.record_json import file_dict
from fatbin_inspect.render.scan_json import coverage_dict

FILES = [
    fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90"),
    fixture_path("bin", "t13_raw_sm75_c75_sm120.fatbin"),
]
COMPAT = sorted(str(p) for p in pathlib.Path(fixture_path("compat")).glob("case1*.fatbin"))


def test_root_exports_the_api():
    assert set(fi.__all__) >= {"inspect", "check", "scan", "gate", "__version__"}
    assert all(callable(getattr(fi, n)) for n in fi.__all__ if n != "__version__")
    assert pathlib.Path(ROOT, "fatbin_inspect", "py.typed").exists()
    assert '"py.typed"' in pathlib.Path(ROOT, "pyproject.toml").read_text()


def test_inspect_is_list():
    for kernels in (False, True):
        flags = ["--kernels"] if kernels else []
        assert [file_dict(r) for r in fi.inspect(FILES, kernels=kernels)] == cli_json("list", *FILES, *flags)[
            "files"
        ]


def test_check_is_check():
    gpus = ["H100", "RTX 5090", "Jetson AGX Orin"]
    verdicts = fi.check(FILES + COMPAT, gpus=gpus, driver="550")
    targets = fi.targets(gpus, "550")
    index = {t: i for i, t in enumerate(targets)}
    doc = cli_json("check", *FILES, *COMPAT, *(a for g in gpus for a in ("--gpu", g)), "--driver", "550")
    assert [result_dict(v, index[v.target]) for v in verdicts] == doc["results"]
    assert {v.verdict for v in verdicts} >= {"native", "fail"}


def test_gate_is_gate_and_takes_what_policy_load_returns(tmp_path):
    doc = cli_json("gate", *FILES, "--isolated", "--require", "sm_80,sm_90,sm_120")
    report = fi.gate(FILES, "", require="sm_80,sm_90,sm_120")
    assert document(report, "error") == doc
    loaded = policy_mod.load("", {"require": "sm_80,sm_90,sm_120"})
    assert document(fi.gate(FILES, loaded), "error") == doc
    assert document(fi.gate(FILES, loaded[0]), "error") == doc  # a Policy alone
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text('[tool.fatbin-inspect]\nrequire = ["sm_80", "sm_90", "sm_120"]\n')
    assert document(fi.gate(FILES, str(cfg)), "error")["findings"] == doc["findings"]


def test_scan_is_scan(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    for f in FILES:
        (site / os.path.basename(f)).write_bytes(open(f, "rb").read())
    result, cov = fi.scan([str(site)], gpus=["H100"], driver="580")
    doc = cli_json("scan", str(site), "--gpu", "H100", "--driver", "580", "--no-cache", "-j", "1")
    assert json.loads(json.dumps(coverage_dict(cov))) == doc["coverage"]
    assert sorted(r.path for r in result.reports) == sorted(f["path"] for f in doc["files"])


@pytest.mark.slow
def test_readme_pytest_example_runs(tmp_path):
    readme = pathlib.Path(ROOT, "README.md").read_text(encoding="utf-8")
    section = readme.split("## As a library", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(code.strip().splitlines()) <= 20
    (tmp_path / "test_example.py").write_text(code)
    dist = tmp_path / "dist"
    dist.mkdir()
    lib = open(FILES[0], "rb").read()  # sm_75/80/90 cubins and compute_90 PTX: H100 native, 5090 by JIT
    (dist / "pkg-1.0-py3-none-any.whl").write_bytes(B.zip_archive([("pkg/_C.so", lib)]))
    env = {**os.environ, "PYTHONPATH": ROOT}
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_example.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 passed" in res.stdout


def test_api_takes_driver_and_fleet_files_like_the_command_line(tmp_path):
    """Issue 25 item 8: gate(..., driver="580") is the gate's minimum driver, and check/scan/gate
    take fleet target files (doctor reports, fleet TOML) as --targets does."""
    import fatbin_inspect as fi

    lib = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")  # links libcudart.so.13
    old = fi.gate([lib], require="sm_80", driver="535")
    assert "FBI004" in {f.rule_id for f in old.findings}  # CUDA 13 needs R580
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(
        'targets = [{name = "n1", gpu = "H100", driver = "580"}, {name = "n2", gpu = "A100", driver = "535"}]\n'
    )
    verdicts = {v.target.hosts[0]: v.verdict for v in fi.check([lib], fleet=fleet)}
    assert verdicts == {"n1": "native", "n2": "fail"}
    _result, cov = fi.scan([lib], fleet=[fleet])
    assert [v.verdict for v in cov.rows[0].verdicts] == ["native", "fail"]
    report = fi.gate([lib], fleet=fleet)
    assert {c.target for c in report.checks if c.target} >= {t.label for t in fi.targets(fleet=fleet)}
