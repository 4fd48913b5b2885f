"""Hostile inputs, round three (issue 23), class 3: what the tool writes.

``-o``, ``extract -d``, ``$GITHUB_STEP_SUMMARY`` and ``$GITHUB_OUTPUT`` pointed at a planted
symbolic link, a FIFO (no reader: opening it for writing would wait forever) or a socket: one
line naming the path, exit 2, nothing written through the link, nothing waited on. Every command
with ``-o`` x every ``--format`` (``hostile_runner.every_command_format``), each in a child under
an address-space limit and a timeout.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from conftest import ROOT, fixture_path
from hostile_runner import commands, every_command_format, run_many

LIB = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")


def _specials(tmp_path):
    """(kind, path) of a planted symlink (to a file outside), a FIFO and a bound socket; the
    socket object is returned to be closed by the caller."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "link.out"
    os.symlink(victim, link)
    fifo = tmp_path / "fifo.out"
    os.mkfifo(fifo)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock.out"))
    return victim, [("symlink", str(link)), ("fifo", str(fifo)), ("socket", str(tmp_path / "sock.out"))], sock


def _with_output(name: str) -> bool:
    return any(p.name == "output" for _n, cmd in commands() if _n == name for p in cmd.params)


@pytest.mark.slow
def test_every_command_and_format_refuses_a_special_output(tmp_path):
    victim, specials, sock = _specials(tmp_path)
    try:
        runs, keys = [], []
        for cmd, fmt, argv in every_command_format([LIB]):
            if not _with_output(cmd):
                continue
            for kind, path in specials:
                runs.append([*argv, "-o", path])
                keys.append((cmd, fmt, kind, path))
        assert len({k[0] for k in keys}) >= 5, keys  # list, check, scan, gate, diff at least
        results = run_many(tmp_path, runs, mem=1 << 30, timeout=600)
    finally:
        sock.close()
    for (cmd, fmt, kind, path), r in zip(keys, results):
        if cmd == "verify" and r.code == 4:  # no GPU here: verify stops before it writes anything
            continue
        assert r.code == 2, (cmd, fmt, kind, r)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and os.path.basename(path) in lines[0], (cmd, fmt, kind, r)
    assert victim.read_text() == "keep me\n"


def test_extract_refuses_a_special_output_folder(tmp_path):
    victim_dir = tmp_path / "elsewhere"
    victim_dir.mkdir()
    os.symlink(victim_dir, tmp_path / "linked")
    os.mkfifo(tmp_path / "fifo")
    runs = [["extract", LIB, "-d", str(tmp_path / "linked")], ["extract", LIB, "-d", str(tmp_path / "fifo")]]
    for r in run_many(tmp_path, runs, timeout=60):
        assert r.code == 2 and len(r.stderr.strip().splitlines()) == 1, r
    assert list(victim_dir.iterdir()) == []


@pytest.mark.slow
def test_step_summary_and_github_output_refuse_special_files(tmp_path):
    """``$GITHUB_STEP_SUMMARY`` (check and gate --format github) and the action's ``$GITHUB_OUTPUT``
    as a symlink or a FIFO: refused with one line, never waited on."""
    victim, specials, sock = _specials(tmp_path)
    try:
        for _kind, path in specials:
            runs = [
                ["check", LIB, "--gpu", "H100", "--format", "github"],
                ["gate", LIB, "--require", "sm_80", "--isolated", "--format", "github"],
            ]
            for r in run_many(tmp_path, runs, timeout=60, env={"GITHUB_STEP_SUMMARY": path}):
                assert r.code == 2 and os.path.basename(path) in r.stderr, r
            code = "from fatbin_inspect.cli import action; action._set_outputs(exit_code='0')"
            proc = subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                timeout=30,
                env={**os.environ, "PYTHONPATH": ROOT, "GITHUB_OUTPUT": path},
            )
            assert proc.returncode != 0 and "refusing" in proc.stderr + proc.stdout, proc
    finally:
        sock.close()
    assert victim.read_text() == "keep me\n"
