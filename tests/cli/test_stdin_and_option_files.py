"""Issue 53 item 6: files an option names and the completion variables are input. Every case in
a child under an address-space limit and a timeout (``hostile_runner``): a usage error (exit 2)
of one line naming the file or variable (and the key), never a wait, an internal error or a
read without bound. Standard input's cases (closed, a terminal or device, empty, a pipe over
its bound) are in ``test_nothing_read.py``."""

from __future__ import annotations

import json
import os

import pytest
from conftest import fixture_path
from hostile_runner import run_many
from index_servers import free_port

CUBIN = fixture_path("bin", "t14_sm90a.cubin")
MEM = 1 << 30


def test_scheduler_files_that_are_not_a_scheduler_file(tmp_path):
    pytest.importorskip("distributed")
    os.mkfifo(tmp_path / "fifo")  # never opened for reading: nothing would ever write it
    cases = {
        str(tmp_path / "fifo"): "not a regular file",
        "/dev/zero": "not a regular file",
        str(tmp_path / "huge"): "over the 1,048,576-byte limit",
        str(tmp_path / "list"): "not a JSON object but list",
        str(tmp_path / "number"): "key 'address' is int, not a string",
        str(tmp_path / "none"): "key 'address' is NoneType, not a string",
        str(tmp_path / "bogus"): "key 'address': 'file:///etc/passwd': not an address",
        str(tmp_path / "deep"): "not JSON (RecursionError)",
        str(tmp_path / "text"): "not JSON",
        str(tmp_path / "missing"): "cannot read: No such file or directory",
    }
    with open(tmp_path / "huge", "wb") as fh:
        fh.truncate(2 << 20)  # sparse: 2 MiB of zeros
    (tmp_path / "list").write_text("[1]")
    (tmp_path / "number").write_text('{"address": 5}')
    (tmp_path / "none").write_text('{"scheduler": "tcp://127.0.0.1:1"}')
    (tmp_path / "bogus").write_text('{"address": "file:///etc/passwd"}')
    (tmp_path / "deep").write_text("[" * 200_000 + "]" * 200_000)
    (tmp_path / "text").write_bytes(b"\xff\xfe\x00garbage")
    runs = [
        [
            "scan",
            "--no-cache",
            "--executor",
            "dask",
            "--scheduler-file",
            f,
            "--connect-timeout",
            "2",
            CUBIN,
            *fmt,
        ]
        for f in cases
        for fmt in ([], ["--format", "json"])
    ]
    results = run_many(tmp_path, runs, mem=MEM, timeout=120)
    for argv, r in zip(runs, results):
        f = argv[argv.index("--scheduler-file") + 1]
        assert r.code == 2, (argv, r)
        assert r.stderr == r.stderr.strip() + "\n" and r.stderr.count("\n") == 1, (argv, r)  # one line
        assert f"--scheduler-file {f}: " in r.stderr and cases[f] in r.stderr, (argv, r)


def test_a_scheduler_file_naming_no_scheduler_is_cannot_reach(tmp_path):
    pytest.importorskip("distributed")
    port = free_port()  # nothing listens there
    (tmp_path / "s.json").write_text(json.dumps({"address": f"tcp://127.0.0.1:{port}", "type": "Scheduler"}))
    argv = ["scan", "--no-cache", "--executor", "dask", "--scheduler-file", str(tmp_path / "s.json")]
    (r,) = run_many(tmp_path, [[*argv, "--connect-timeout", "2", CUBIN]], mem=MEM, timeout=120)
    assert r.code == 2 and f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port} (from " in r.stderr, r


def test_tls_files_must_be_small_regular_files(tmp_path):
    pytest.importorskip("distributed")
    with open(tmp_path / "big.pem", "wb") as fh:
        fh.truncate(2 << 20)
    (tmp_path / "ca.pem").write_text("x")
    common = ["scan", "--no-cache", "--executor", "dask", "--scheduler", "tls://127.0.0.1:1"]
    runs = [
        [*common, "--tls-ca-file", str(tmp_path / "ca.pem"), "--tls-cert", str(tmp_path / "big.pem"), CUBIN],
        [*common, "--tls-ca-file", "/dev/zero", "--tls-cert", str(tmp_path / "ca.pem"), CUBIN],
    ]
    big, dev = run_many(tmp_path, runs, mem=MEM, timeout=120)
    assert big.code == 2 and "--tls-cert " in big.stderr and "over 1,048,576 bytes" in big.stderr, big
    assert dev.code == 2 and "--tls-ca-file /dev/zero: not a readable file" in dev.stderr, dev


COMPLETE = "_FATBIN_INSPECT_COMPLETE"


@pytest.mark.parametrize(
    "env, said",
    [
        ({COMPLETE: "bogus"}, "_FATBIN_INSPECT_COMPLETE='bogus': not one of bash_source"),
        ({COMPLETE: "bash_source;rm -rf /"}, "not one of bash_source"),
        ({COMPLETE: "bash_complete", "COMP_CWORD": "1"}, "COMP_WORDS is not set"),
        ({COMPLETE: "zsh_complete", "COMP_WORDS": "fatbin-inspect che"}, "COMP_CWORD is not set"),
        (
            {COMPLETE: "bash_complete", "COMP_WORDS": "fatbin-inspect", "COMP_CWORD": "abc"},
            "COMP_CWORD='abc'",
        ),
        ({COMPLETE: "bash_complete", "COMP_WORDS": "fatbin-inspect", "COMP_CWORD": "-1"}, "COMP_CWORD='-1'"),
        (
            {COMPLETE: "bash_complete", "COMP_WORDS": "fatbin-inspect", "COMP_CWORD": "9" * 5000},
            "not the index",
        ),
        ({COMPLETE: "bash_complete", "COMP_WORDS": "fatbin-inspect", "COMP_CWORD": "٣"}, "not the index"),
        (
            {COMPLETE: "zsh_complete", "COMP_WORDS": "fatbin-inspect che", "COMP_CWORD": "7"},
            "past the 2 words",
        ),
    ],
)
def test_completion_variables_are_checked(tmp_path, env, said):
    (r,) = run_many(tmp_path, [[]], mem=MEM, timeout=60, env=env)
    assert r.code == 2 and said in r.stderr and r.stderr.count("\n") == 1, r


def test_completion_still_completes(tmp_path):
    env = {COMPLETE: "bash_complete", "COMP_WORDS": "fatbin-inspect che", "COMP_CWORD": "1"}
    (r,) = run_many(tmp_path, [[]], mem=MEM, timeout=60, env=env)
    assert r.code == 0 and r.out.decode().splitlines() == ["plain,check"], r


def test_a_completion_line_past_the_bound_is_refused():
    """(Past 128 KiB no exec passes a variable: this is for a caller that is no shell.)"""
    from fatbin_inspect.cli.completion import MAX_LINE, check_environment
    from fatbin_inspect.errors import UsageError

    check_environment({COMPLETE: "fish_complete", "COMP_WORDS": "x" * MAX_LINE, "COMP_CWORD": ""})
    with pytest.raises(UsageError, match="COMP_WORDS: 131,073 characters"):
        check_environment({COMPLETE: "fish_complete", "COMP_WORDS": "x" * (MAX_LINE + 1), "COMP_CWORD": ""})
