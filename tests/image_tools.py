"""Helpers for the tests of OCI images built by real tools (umoci, skopeo): the tools run, the
images and layers made, the CLI run over them, a real registry (Debian's docker-registry)."""

from __future__ import annotations

import io
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import pytest
from conftest import ROOT, cli, fixture_path, read_file
from index_servers import free_port

LIB = fixture_path("bin", "t12_lib_sm86_c89.so")  # sm_86 SASS + compute_89 PTX, links libcudart 13


def need(*tools: str) -> None:
    """Skip the test unless every tool is on PATH."""
    for t in tools:
        if shutil.which(t) is None:
            pytest.skip(f"{t} is not installed (.ci/run installs it with apt-get)")


def run(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


NO_CACHE = {"FATBIN_INSPECT_CACHE_DIR": os.devnull}  # what a run may cache goes nowhere


def child_cli(*args: str, stdin: IO[bytes] | int | None) -> tuple[int, str, str]:
    """The CLI in a child process reading ``stdin`` (a real pipe or file: what ``-`` is for a
    user): (exit code, stdout, stderr)."""
    p = subprocess.run(
        [sys.executable, "-m", "fatbin_inspect", *args],
        capture_output=True,
        env=dict(os.environ, PYTHONPATH=ROOT, **NO_CACHE),
        stdin=stdin,
        timeout=300,
        cwd=ROOT,
    )
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def scan_json(
    *args: str, stdin: IO[bytes] | int | None = None, env: dict[str, str] | None = None
) -> tuple[int, Any, str]:
    """``scan --no-cache --format json ARGS``: (exit code, report, stderr); in-process through
    conftest's ``cli``, in a child when ``stdin`` is given."""
    argv = ("scan", "--no-cache", "--format", "json", *args)
    if stdin is not None:
        rc, out, err = child_cli(*argv, stdin=stdin)
        assert "Traceback" not in err, err
        return rc, json.loads(out), err
    r = cli(*argv, env={**NO_CACHE, **(env or {})})
    return r.code, r.json(), r.err


def inside(path: str) -> str:
    """``INPUT[!IMAGE]!LAYER!PATH`` -> PATH."""
    return path.rsplit("!", 1)[-1]


def umoci_layout(tmp_path: pathlib.Path, name: str = "L") -> str:
    """A layout as umoci makes it: an empty ``base`` tag; ``t`` with libx.so and its hard link
    liby.so in one layer; ``t2`` = t with libx.so deleted (a whiteout in a second layer)."""
    need("umoci")
    lay, bundle = str(tmp_path / name), str(tmp_path / f"{name}-bundle")
    run("umoci", "init", "--layout", lay)
    run("umoci", "new", "--image", f"{lay}:base")
    run("umoci", "unpack", "--rootless", "--image", f"{lay}:base", bundle)
    lib = os.path.join(bundle, "rootfs", "usr", "lib")
    os.makedirs(lib)
    shutil.copy(LIB, os.path.join(lib, "libx.so"))
    os.link(os.path.join(lib, "libx.so"), os.path.join(lib, "liby.so"))
    run("umoci", "repack", "--image", f"{lay}:t", bundle)
    shutil.rmtree(bundle)
    run("umoci", "unpack", "--rootless", "--image", f"{lay}:t", bundle)
    os.unlink(os.path.join(bundle, "rootfs", "usr", "lib", "libx.so"))
    run("umoci", "repack", "--image", f"{lay}:t2", bundle)
    shutil.rmtree(bundle)
    return lay


def layer_tar(entries: Iterable[tuple[str, bytes | tuple[str, str]]]) -> bytes:
    """A layer tar: (name, bytes) files, (name, ("hardlink", target)) links, in order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in entries:
            ti = tarfile.TarInfo(name)
            if isinstance(data, tuple):
                ti.type, ti.linkname = tarfile.LNKTYPE, data[1]
                tf.addfile(ti)
            else:
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def manifest_of(layout: str, tag: str) -> tuple[str, dict[str, Any]]:
    """The digest and manifest of the image ``tag`` of an OCI layout."""
    index = json.loads(open(os.path.join(layout, "index.json")).read())
    for m in index["manifests"]:
        if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag:
            return m["digest"], json.loads(
                read_file(os.path.join(layout, "blobs", "sha256", m["digest"][7:]))
            )
    raise KeyError(tag)


def layer_image(
    tmp_path: pathlib.Path, entries: Iterable[tuple[str, bytes | tuple[str, str]]], name: str = "M"
) -> str:
    """An OCI layout whose image ``t`` is one layer made of ``entries`` (``layer_tar``): its reference."""
    need("umoci")
    lay = str(tmp_path / name)
    run("umoci", "init", "--layout", lay)
    run("umoci", "new", "--image", f"{lay}:base")
    (tmp_path / "l.tar").write_bytes(layer_tar(entries))
    run("umoci", "raw", "add-layer", "--image", f"{lay}:base", "--tag", "t", str(tmp_path / "l.tar"))
    return f"{lay}:t"


def _wait_port(port: int, proc: subprocess.Popen[bytes], deadline: float = 20.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            pytest.fail(f"docker-registry exited: {proc.stdout.read().decode()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    pytest.fail("docker-registry did not listen")


@pytest.fixture
def registry(tmp_path: pathlib.Path) -> Iterator[Callable[[str], int]]:
    """Start a registry: ``start(auth_yaml="")`` -> port; stopped by its process group."""
    need("docker-registry", "skopeo")
    procs: list[subprocess.Popen[bytes]] = []

    def start(auth: str = "") -> int:
        port = free_port()
        cfg = tmp_path / f"reg{port}.yml"
        cfg.write_text(
            "version: 0.1\nlog: {level: error}\n"
            f"storage: {{filesystem: {{rootdirectory: {tmp_path}/store{port}}}}}\n"
            f"http: {{addr: 127.0.0.1:{port}}}\n" + auth
        )
        proc = subprocess.Popen(
            ["docker-registry", "serve", str(cfg)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        procs.append(proc)
        _wait_port(port, proc)
        return port

    yield start
    for proc in procs:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
