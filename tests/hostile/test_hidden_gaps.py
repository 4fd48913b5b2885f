"""Hostile inputs, round three (issue 23), class 9: the earlier classes' last gaps.

``scan --strict`` exits 3 for a FIFO, a device or a socket named directly on the command line,
as it does for one inside a scanned folder, and never opens the FIFO (no writer: it would
block); without ``--strict`` they are skipped and the scan succeeds. Every ``--format`` of scan
(and ``list --strict``), each in a child under an address-space limit and a timeout. (Lone
surrogates in every format: ``test_hostile_c1_config`` and ``test_hostile``.)
"""

from __future__ import annotations

import os
import socket

import pytest
from conftest import fixture_path
from hostile_runner import commands, formats, run_many

LIB = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")


@pytest.mark.slow
def test_scan_strict_exits_3_for_special_files_named_directly(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    scan = dict(commands())["scan"]
    try:
        runs, keys = [], []
        for special in (str(fifo), "/dev/zero", str(tmp_path / "sock")):
            for fmt in formats(scan):
                runs.append(["scan", special, LIB, "--no-cache", "-j1", "--strict", "--format", fmt])
                keys.append((special, fmt, True))
            runs.append(["scan", special, LIB, "--no-cache", "-j1"])
            keys.append((special, "table", False))
            runs.append(["list", special, LIB, "--strict"])
            keys.append((special, "list", True))
        results = run_many(tmp_path, runs, mem=512 << 20, timeout=300)
    finally:
        sock.close()
    for (special, fmt, strict), r in zip(keys, results):
        if strict:
            assert r.code == 3, (special, fmt, r)
            assert os.path.basename(special) in r.stderr and "not a regular file" in r.stderr, (
                special,
                fmt,
                r,
            )
        else:
            assert r.code == 0, (special, r)
