"""Issue 53 item 8: an input named on the command line that could not be opened at all (an
unreachable registry, an unknown repository or tag, no image for ``--platform``, standard input
closed, a device or empty) exits 2 as a missing path does, in every command and format; a file
that opened but does not parse (a truncated ELF) keeps its error record in ``scan`` as in
``list`` and counts for ``--strict`` (exit 3). Every run in a child under an address-space
limit and a timeout (``hostile_runner``)."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys

import pytest
from builders import layer_tar, oci_layout
from conftest import ROOT, fixture_path
from hostile_runner import commands, every_command_format, formats, run_many
from image_tools import registry  # noqa: F401  (the fixture: Debian's docker-registry)
from index_servers import free_port

LIB = fixture_path("bin", "t12_lib_sm86_c89.so")  # sm_86 SASS + compute_89 PTX
MEM = 1 << 30
NO_CACHE = {"FATBIN_INSPECT_CACHE_DIR": os.devnull}


def _layout(root) -> str:
    """An amd64-only image layout holding LIB (hand-built: OCI image spec, one manifest)."""
    with open(LIB, "rb") as fh:
        oci_layout(root, [layer_tar([("usr/lib/libx.so", fh.read())])])
    return str(root)


def _all_exit_2(runs, results, name: str) -> None:
    for (cmd, fmt, _argv), r in zip(runs, results):
        assert r.code == 2, (cmd, fmt, r)  # (run_many: never a traceback or an internal error)
        assert name in r.stderr, (cmd, fmt, r)  # a missing path's exit: click's usage text
        if cmd in ("list", "scan"):  # (the commands that read images): one line per input
            assert r.stderr.count("\n") == 1 and r.stderr.startswith("fatbin-inspect: "), (cmd, fmt, r)


def test_unreachable_registry_exits_2_in_every_command_and_format(tmp_path):
    ref = f"docker://127.0.0.1:{free_port()}/gpu/app:t"
    runs = every_command_format([ref])
    results = run_many(tmp_path, [argv for *_, argv in runs], mem=MEM, timeout=300, env=NO_CACHE)
    _all_exit_2(runs, results, ref)
    scan = [r for (cmd, _f, _a), r in zip(runs, results) if cmd == "scan"]
    assert scan and all("refused" in r.stderr or "cannot reach" in r.stderr for r in scan)


def test_unknown_tag_of_a_layout_exits_2_in_every_command_and_format(tmp_path):
    ref = _layout(tmp_path / "L") + ":nosuch"
    runs = every_command_format([ref])
    results = run_many(tmp_path, [argv for *_, argv in runs], mem=MEM, timeout=300, env=NO_CACHE)
    _all_exit_2(runs, results, ref)
    listed = [r for (cmd, _f, _a), r in zip(runs, results) if cmd in ("list", "scan")]
    assert listed and all("no image named 'nosuch'" in r.stderr for r in listed)


def test_no_image_for_the_platform_exits_2_in_every_format(tmp_path):
    lay = _layout(tmp_path / "L")
    scan = dict(commands())["scan"]
    runs = [
        ["scan", "--no-cache", "-j1", lay, "--platform", p, "--format", f]
        for f in formats(scan)
        for p in ("linux/arm64", "linux/amd64")
    ]
    results = run_many(tmp_path, runs, mem=MEM, timeout=300)
    for argv, r in zip(runs, results):
        if "linux/arm64" in argv:
            assert r.code == 2, (argv, r)
            assert "is linux/amd64 (its config), not linux/arm64 (--platform)" in r.stderr, (argv, r)
        else:  # the image that is there: read, exit 0
            assert r.code == 0, (argv, r)


@pytest.mark.slow
@pytest.mark.slow
def test_a_real_registry_that_has_no_such_image_or_refuses_the_login(tmp_path, registry):  # noqa: F811
    """Debian's docker-registry with htpasswd auth: an unknown repository, an unknown tag, no
    image for --platform, a wrong password and no login each exit 2 in list and scan, every
    format; the image that is there, with the password, exits 0."""
    import base64

    crypt = pytest.importorskip("crypt", reason="bcrypt for htpasswd (Python < 3.13, libxcrypt)")

    lay = _layout(tmp_path / "L")
    (tmp_path / "htpasswd").write_text(
        "alice:" + crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH)) + "\n"
    )
    port = registry(f"auth: {{htpasswd: {{realm: test, path: {tmp_path}/htpasswd}}}}\n")
    subprocess.run(
        [
            "skopeo",
            "copy",
            "--dest-tls-verify=false",
            "--dest-creds",
            "alice:s3cret",
            f"oci:{lay}",
            f"docker://127.0.0.1:{port}/gpu/app:t",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )

    def auth(password: str) -> str:
        path = tmp_path / f"auth-{password}.json"
        token = base64.b64encode(f"alice:{password}".encode()).decode()
        path.write_text(json.dumps({"auths": {f"127.0.0.1:{port}": {"auth": token}}}))
        return str(path)

    base = f"docker://127.0.0.1:{port}/gpu"
    cases = [  # (reference, extra scan options, auth file, exit)
        (f"{base}/app:t", [], auth("s3cret"), 0),
        (f"{base}/nosuch:t", [], auth("s3cret"), 2),
        (f"{base}/app:nosuch", [], auth("s3cret"), 2),
        (f"{base}/app:t", ["--platform", "linux/arm64"], auth("s3cret"), 2),
        (f"{base}/app:t", [], auth("wrong"), 2),
        (f"{base}/app:t", [], os.devnull, 2),  # no login
    ]
    for ref, extra, auth_file, code in cases:
        runs = [
            ["scan", "--no-cache", "-j1", ref, *extra, "--format", f]
            for f in formats(dict(commands())["scan"])
        ]
        if not extra:
            runs += [["list", ref, "--format", f] for f in formats(dict(commands())["list"])]
        env = {"REGISTRY_AUTH_FILE": auth_file, "DOCKER_CONFIG": str(tmp_path), **NO_CACHE}
        for argv, r in zip(runs, run_many(tmp_path, runs, mem=MEM, timeout=300, env=env)):
            assert r.code == code, (argv, r)
            if code == 2:
                assert r.stderr.startswith(f"fatbin-inspect: {ref}: ") and r.stderr.count("\n") == 1, (
                    argv,
                    r,
                )


@pytest.mark.slow
def test_a_truncated_elf_is_an_error_record_in_scan_as_in_list(tmp_path):
    with open(LIB, "rb") as fh:
        data = fh.read()
    cut = tmp_path / "t.so"
    cut.write_bytes(data[:3000])  # the section table is past the end
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "t.so").write_bytes(data[:3000])
    (folder / "ok.so").write_bytes(data)
    scan = dict(commands())["scan"]
    runs, keys = [], []
    for target in (str(cut), str(folder)):
        for fmt in formats(scan):
            for strict in (True, False):
                runs.append(["scan", "-j1", *(["--strict"] if strict else []), target, "--format", fmt])
                keys.append((target, fmt, strict))
        runs.append(["list", "--strict", target])
        keys.append((target, "list", True))
    # the cache on: a row must not say "no device code" for the file either (twice: cold, warm)
    env = {"FATBIN_INSPECT_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):
        results = run_many(tmp_path, runs, mem=MEM, timeout=300, env=env)
        for (target, fmt, strict), r in zip(keys, results):
            assert r.code == (3 if strict else 0), (target, fmt, r)
            assert "section header 0 needs 64 bytes, file ends first" in r.stderr, (target, fmt, r)
            if fmt == "json":
                files = {os.path.basename(f["path"]): f for f in json.loads(r.out)["files"]}
                assert files["t.so"]["error"]["message"].startswith("section header 0"), r
                assert files["t.so"]["fatbins"] == []
                if target == str(folder):
                    assert files["ok.so"]["error"] is None and files["ok.so"]["fatbins"]
            if fmt == "table":
                first = r.out.decode().splitlines()[0]
                n = 1 if target == str(folder) else 0  # (ok.so)
                assert first.startswith(f"{n} file{'s' * (n != 1)} with device code, 1 unreadable in"), r


def _child(args, stdin, tmp_path):
    """The installed entry point in a child (RLIMIT_AS, a timeout) reading ``stdin`` as fd 0
    (None: fd 0 closed, as ``cmd <&-``)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (MEM, MEM))
        if stdin is None:
            os.close(0)

    return subprocess.run(
        [sys.executable, "-m", "fatbin_inspect", *args],
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        capture_output=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=ROOT, FATBIN_INSPECT_CACHE_DIR=str(tmp_path / "cache")),
        preexec_fn=limit,
        cwd=str(tmp_path),
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, why",
    [
        ("closed", "standard input is closed"),
        ("/dev/null", "standard input is a device"),
        ("/dev/zero", "standard input is a device"),
        ("empty file", "standard input is an empty file"),
        ("empty pipe", "standard input is empty"),
        ("socket", "standard input is a socket"),
    ],
)
def test_stdin_that_gives_no_image_exits_2(tmp_path, kind, why):
    (tmp_path / "empty").write_bytes(b"")
    for argv in (
        ["scan", "-"],
        ["scan", "-", "--format", "json"],
        ["list", "-"],
        ["list", "-", "--format", "jsonl"],
    ):
        pair = None
        if kind == "closed":
            stdin = None
        elif kind == "empty pipe":
            r, w = os.pipe()
            os.close(w)
            stdin = r
        elif kind == "socket":
            pair = socket.socketpair()
            stdin = pair[0].fileno()
        elif kind == "empty file":
            stdin = os.open(tmp_path / "empty", os.O_RDONLY)
        else:
            stdin = os.open(kind, os.O_RDONLY)
        try:
            p = _child(argv, stdin, tmp_path)
        finally:
            if isinstance(stdin, int) and pair is None:
                os.close(stdin)
            if pair:
                pair[1].close()
                pair[0].close()
        err = p.stderr.decode()
        assert p.returncode == 2, (argv, p.returncode, err)
        assert f"fatbin-inspect: -: {why}" in err and "Traceback" not in err, (argv, err)


def test_a_closed_stdin_is_not_taken_by_the_cache_database(tmp_path):
    """With fd 0 closed, the cache's sqlite file would be the first file opened, at fd 0, and
    ``-`` would read it (it did: "0 files with device code", exit 0)."""
    for _ in range(2):  # cold, then with the database there
        p = _child(["scan", "-"], None, tmp_path)
        assert p.returncode == 2 and b"standard input is closed" in p.stderr, p.stderr


def test_closed_stdout_is_no_internal_error(tmp_path):
    def limit():
        os.close(1)

    p = subprocess.run(
        [sys.executable, "-m", "fatbin_inspect", "list", LIB],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=ROOT),
        preexec_fn=limit,
    )
    assert p.returncode == 0 and b"internal error" not in p.stderr, p.stderr


def test_a_pipe_past_the_bound_is_refused(monkeypatch):
    """The copy of a pipe stops at ``stdin_limit``: the cap, and the free space of its folder
    less ``STDIN_SPARE_BYTES``."""
    import threading

    from fatbin_inspect.errors import LimitExceeded
    from fatbin_inspect.inventory import stdin

    assert stdin.stdin_limit(1 << 60) == stdin.MAX_STDIN_BYTES
    assert stdin.stdin_limit(stdin.STDIN_SPARE_BYTES + 10) == 10
    assert stdin.stdin_limit(5) == 0
    monkeypatch.setattr(stdin, "MAX_STDIN_BYTES", 1 << 20)
    r, w = os.pipe()

    def feed():
        try:
            for _ in range(4):
                os.write(w, b"\0" * (1 << 20))
        except BrokenPipeError:
            pass
        finally:
            os.close(w)

    t = threading.Thread(target=feed)
    t.start()
    try:
        with pytest.raises(LimitExceeded, match="standard input past 1048576 bytes"):
            stdin.stdin_blob(r)
    finally:
        os.close(r)
        t.join(timeout=30)
