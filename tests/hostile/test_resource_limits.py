"""Hostile inputs, round three (issue 23), class 4: resources asked for.

``-j``/``--jobs`` and ``FATBIN_INSPECT_JOBS`` are capped at 4 worker processes per CPU
(``inventory.workers.PER_CPU``) with a note, so ``-j 100000`` forks a bounded pool; ``COLUMNS``
of 5,000 digits is bounded (1,000), never an internal error. Every command x format, each in a
child under an address-space limit (a thousand forked interpreters would not fit in it either)
and a timeout.
"""

from __future__ import annotations

import os

import pytest
from conftest import fixture_path
from hostile_runner import commands, every_command_format, run_many

from fatbin_inspect.inventory import workers

LIB = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")


def _with_jobs() -> list[str]:
    return [n for n, cmd in commands() if any(p.name == "jobs" for p in cmd.params)]


@pytest.mark.slow
def test_jobs_are_capped_in_every_command_that_takes_them(tmp_path):
    tree = tmp_path / "t"
    tree.mkdir()
    for i in range(3):
        os.link(LIB, tree / f"lib{i}.so")
    cap = workers.cpus() * workers.PER_CPU
    names = _with_jobs()
    assert "scan" in names
    runs = []
    for name in names:
        runs.append(
            [name, str(tree), "--no-cache", "-j", "100000"]
            if name == "scan"
            else [name, str(tree), "-j", "100000"]
        )
        runs.append([name, str(tree), "--no-cache"] if name == "scan" else [name, str(tree)])
    results = run_many(tmp_path, runs, timeout=300)
    for argv, r in zip(runs, results):
        assert r.code == 0, (argv, r)
        if "-j" in argv:
            assert f"capped at {cap} worker processes" in r.stderr, r
    env_runs = [[n, str(tree), "--no-cache"] if n == "scan" else [n, str(tree)] for n in names]
    for argv, r in zip(
        env_runs, run_many(tmp_path, env_runs, timeout=300, env={"FATBIN_INSPECT_JOBS": "100000"})
    ):
        assert r.code == 0, (argv, r)
        assert f"capped at {cap} worker processes" in r.stderr, (argv, r)


@pytest.mark.slow
def test_huge_columns_in_every_command_and_format(tmp_path):
    runs = [argv for _c, _f, argv in every_command_format([LIB])]
    for argv, r in zip(runs, run_many(tmp_path, runs, timeout=600, env={"COLUMNS": "9" * 5000})):
        assert r.code in (0, 1, 4), (argv, r)  # verify exits 4 without a GPU; never 70 (internal)
