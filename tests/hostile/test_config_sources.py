"""Hostile inputs, round three (issue 23), class 2: where configuration comes from.

A ``pyproject.toml`` planted above the project root (the first folder with a ``.git``) must not
change a gate's verdict; one owned by another user, writable by others or not a regular file is
skipped with a note; every run names the config it used (``gate -v``, the JSON report's
``config``, the SARIF run properties), and ``--isolated`` reads none. Each run is a child under
an address-space limit and a timeout (``hostile_runner``), over every ``--format`` of ``gate``.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import fixture_path
from hostile_runner import commands, formats, run_many

LIB = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")  # sm_75, sm_80, sm_90: no sm_120
FAILING = (
    '[tool.fatbin-inspect]\nforbid = ["sm_75"]\n'  # would fail the gate (FBI007), whatever --require says
)
PASSING = '[tool.fatbin-inspect]\nrequire = ["sm_80"]\n'


def _gate_formats() -> list[str]:
    return formats(dict(commands())["gate"])


@pytest.mark.slow
def test_a_pyproject_above_the_project_root_changes_no_verdict(tmp_path):
    (tmp_path / "pyproject.toml").write_text(FAILING)  # planted above the checkout
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    (proj / "src").mkdir()
    runs = [["gate", LIB, "--require", "sm_80", "--format", fmt] for fmt in _gate_formats()]
    for argv, r in zip(runs, run_many(proj / "src", runs, timeout=120)):
        assert r.code == 0, (argv, r)
    (proj / "pyproject.toml").write_text(FAILING)  # the project's own file is read
    for argv, r in zip(runs, run_many(proj / "src", runs, timeout=120)):
        assert r.code == 1, (argv, r)


@pytest.mark.slow
def test_untrusted_pyproject_files_are_skipped_with_a_note(tmp_path):
    cases = {}
    writable = tmp_path / "writable"
    (writable / ".git").mkdir(parents=True)
    (writable / "pyproject.toml").write_text(FAILING)
    os.chmod(writable / "pyproject.toml", 0o666)
    cases["writable"] = (writable, "writable by other users")
    if os.geteuid() == 0:  # root can give the file away; another user's file is skipped
        other = tmp_path / "other"
        (other / ".git").mkdir(parents=True)
        (other / "pyproject.toml").write_text(FAILING)
        os.chown(other / "pyproject.toml", 12345, 12345)
        cases["other"] = (other, "owned by another user")
    fifo = tmp_path / "fifo"
    (fifo / ".git").mkdir(parents=True)
    os.mkfifo(fifo / "pyproject.toml")
    cases["fifo"] = (fifo, "not a regular file")
    for _name, (proj, why) in cases.items():
        runs = [["gate", LIB, "--require", "sm_80", "--format", fmt] for fmt in _gate_formats()]
        for argv, r in zip(runs, run_many(proj, runs, mem=512 << 20, timeout=120)):
            assert r.code == 0, (argv, r)
            assert "pyproject.toml: not read: " + why in r.stderr, (argv, r)


def test_every_run_names_the_config_it_used_and_isolated_reads_none(tmp_path):
    proj = tmp_path / "p"
    (proj / ".git").mkdir(parents=True)
    cfg = proj / "pyproject.toml"
    cfg.write_text(PASSING)
    runs = [
        ["gate", LIB, "-v"],
        ["gate", LIB, "--format", "json"],
        ["gate", LIB, "--format", "sarif"],
        ["gate", LIB, "--isolated", "--require", "sm_80", "--format", "json"],
        ["gate", LIB, "--config", str(cfg), "--format", "json"],
    ]
    verbose, js, sarif, isolated, explicit = run_many(proj, runs, timeout=120)
    assert verbose.code == 0 and str(cfg) in verbose.stderr + verbose.out.decode(), verbose
    assert json.loads(js.out)["config"] == str(cfg), js
    assert json.loads(sarif.out)["runs"][0]["properties"]["config"] == str(cfg), sarif
    assert json.loads(isolated.out)["config"] is None, isolated
    assert json.loads(explicit.out)["config"] == str(cfg), explicit
