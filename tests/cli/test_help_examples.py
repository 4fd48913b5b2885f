"""Every ``Examples:`` line of every command's ``--help`` runs as written, in a shell, in a folder
holding the files it names (issue 56 item 6): nvcc-built fixtures under the names the examples
use (``app``, ``lib.so``, ``dist/*.whl``, ``old.whl``, ``image.tar``, ``.venv`` ...). An example
that names a GPU with ``auto`` or loads modules (``verify``) needs a GPU, one that asks a package
index or a registry (``releases``, ``pkg:pypi/``) the network: each is skipped with that reason; one that writes ``-o FILE`` must have written it. What each may exit with is the README's
table: 0 or 1 (findings), 4 for ``doctor`` on a machine without an NVIDIA driver; never 2 (a
usage or internal error) or 3, never a traceback."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import click
import pytest
from builders import layer_tar, oci_layout, tar_of_dir
from conftest import BIN, ROOT

from fatbin_inspect.cli.main import cli as group

NEEDS_GPU = ("--gpu auto", "fatbin-inspect verify")
NEEDS_NETWORK = ("fatbin-inspect releases", "pkg:pypi/", "docker://", "registry://")  # an index, a registry


def examples() -> list[tuple[str, str]]:
    """(command, example line) for every command of the group, in its --help order."""
    out = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # (the group loads its commands lazily)
        cmd = group.get_command(ctx, name)
        epilog = (cmd.epilog if cmd is not None else None) or ""
        if "Examples:" not in epilog:
            continue
        text = epilog.split("Examples:", 1)[1].replace("\\\n", " ")  # (a long one is continued)
        for line in text.splitlines():
            if line.strip().startswith("fatbin-inspect"):
                out.append((name, " ".join(line.split())))
    return out


def _wheel(path: Path, name: str, version: str, files: dict[str, str]) -> None:
    """A wheel of ``files`` (member -> fixture in fixtures/bin) with its dist-info."""
    path.parent.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for member, fixture in files.items():
            z.write(os.path.join(BIN, fixture), member)
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        z.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n"
        )
        z.writestr(f"{info}/RECORD", "".join(f"{m},,\n" for m in files))


def _doctor_report(path: Path) -> None:
    """A node's ``doctor --format json`` report (the fields ``--targets`` reads)."""
    gpu = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0", "tegra": False, "uuid": None}
    stack = {"gpus": [gpu], "kernel_driver": {"version": "580.95.05", "source": "nvml"}, "host": "node1"}
    doc = {"schema_version": 1, "tool": {"name": "fatbin-inspect", "version": "0.1.0"}, "stack": stack}
    path.write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the examples run in, and a ``fatbin-inspect`` on PATH that runs this checkout."""
    d = tmp_path_factory.mktemp("examples")
    lib, exe = "t12_lib_sm86_c89.so", "t02_exe_sm75_sm80_sm90_c90"
    for name, fixture in {"app": exe, "app.so": exe, "lib.so": lib}.items():
        shutil.copy(os.path.join(BIN, fixture), d / name)
    (d / "build").mkdir()
    shutil.copy(os.path.join(BIN, exe), d / "build" / "app")
    shutil.copy(os.path.join(BIN, lib), d / "build" / "libkernels.so")
    _wheel(d / "dist" / "mypkg-1.1-py3-none-linux_x86_64.whl", "mypkg", "1.1", {"mypkg/lib.so": lib})
    _wheel(
        d / "torch-2.14.1-py3-none-linux_x86_64.whl", "torch", "2.14.1", {"torch/lib/libtorch_cuda.so": exe}
    )
    old = {"mypkg/lib.so": lib, "mypkg/app.so": exe}
    _wheel(d / "old.whl", "mypkg", "1.0", old)
    _wheel(d / "new.whl", "mypkg", "1.1", {"mypkg/lib.so": lib})
    _wheel(d / "dist-1.0" / "mypkg-1.0-py3-none-linux_x86_64.whl", "mypkg", "1.0", old)
    _wheel(d / "dist-1.1" / "mypkg-1.1-py3-none-linux_x86_64.whl", "mypkg", "1.1", {"mypkg/lib.so": lib})
    layout = d / "layout"
    layer = layer_tar(
        [("usr/", None), ("usr/lib/", None), ("usr/lib/libk.so", (Path(BIN) / lib).read_bytes())]
    )
    oci_layout(layout, [layer])
    (d / "image.tar").write_bytes(tar_of_dir(layout))
    shutil.rmtree(layout)
    site = d / ".venv" / "lib" / "python3.12" / "site-packages"
    (site / "torch" / "lib").mkdir(parents=True)
    shutil.copy(os.path.join(BIN, exe), site / "torch" / "lib" / "libtorch_cuda.so")
    (site / "ext").mkdir()
    shutil.copy(os.path.join(BIN, lib), site / "ext" / "_C.so")
    _doctor_report(d / "doctor-node1.json")
    (d / "pyproject.toml").write_text(
        '[tool.fatbin-inspect]\nrequire = ["sm_80", "sm_90"]\n'
    )  # gate's policy
    tool = d / "bin" / "fatbin-inspect"
    tool.parent.mkdir()
    tool.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m fatbin_inspect "$@"\n')
    tool.chmod(0o755)
    return d


def test_every_command_with_examples_is_found() -> None:
    found = {name for name, _ in examples()}
    assert {"list", "check", "scan", "gate", "diff", "extract", "explain", "gpus", "doctor"} <= found


def _params() -> list:
    """The examples as test cases; the scan of this interpreter's site-packages is slow."""
    return [
        pytest.param(
            c,
            line,
            id=f"{c}:{i}",
            marks=[pytest.mark.slow] if line.split("#")[0].split() == ["fatbin-inspect", "scan"] else [],
        )
        for i, (c, line) in enumerate(examples())
    ]


@pytest.mark.parametrize("command,line", _params())
def test_help_example_runs(workdir: Path, command: str, line: str) -> None:
    if any(n in line for n in NEEDS_GPU):
        pytest.skip(f"needs a GPU (NVML or cuda-python): {line}")
    if any(n in line for n in NEEDS_NETWORK):
        pytest.skip(f"needs the network (a package index or registry): {line}")
    code = re.split(r"\s#\s", line, maxsplit=1)[0]
    env = dict(os.environ, PATH=f"{workdir / 'bin'}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=ROOT)
    env.update(HOME=str(workdir), XDG_CACHE_HOME=str(workdir / ".cache"), NO_COLOR="1", COLUMNS="100")
    env["NODE_NAME"] = "node1"  # (what a Kubernetes pod is given: doctor --host "$NODE_NAME")
    for key in [k for k in env if k.startswith("FATBIN_INSPECT_")]:
        del env[key]
    ran = subprocess.run(
        ["bash", "-c", code], cwd=workdir, env=env, capture_output=True, text=True, timeout=300
    )
    allowed = (0, 1, 4) if command == "doctor" else (0, 1)
    assert ran.returncode in allowed, (
        f"{line}\nexit {ran.returncode}\n{ran.stdout[-2000:]}\n{ran.stderr[-2000:]}"
    )
    assert "Traceback" not in ran.stderr and "internal error" not in ran.stderr, ran.stderr
    said = ran.stdout + ran.stderr
    for out in re.findall(r"(?:^|\s)-o\s+(\S+)", code):
        written = subprocess.run(["bash", "-c", f"ls {out}"], cwd=workdir, capture_output=True, text=True)
        assert written.returncode == 0, f"{line}: wrote no {out}"
        said += (workdir / written.stdout.split()[0]).read_text(encoding="utf-8")
        assert said, f"{line}: {out} is empty"
    if ran.returncode == 4:  # doctor on this machine: it says why
        assert "no NVIDIA kernel driver" in said or "no GPU" in said, said[-2000:]


def test_help_lists_the_examples_as_written() -> None:
    """click keeps the block as written (no rewrapping of the lines run above)."""
    cmd = group.get_command(click.Context(group), "gate")
    assert cmd is not None
    with click.Context(cmd, info_name="gate") as ctx:
        text = cmd.get_help(ctx)
    flat = " ".join(text.replace("\\\n", " ").split())
    assert all(line in flat for c, line in examples() if c == "gate")
