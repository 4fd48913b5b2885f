"""Inputs are opened read-only and never modified by list, extract or scan (issue 7)."""

import builtins
import hashlib
import importlib.util
import os
import shutil

import builders as B
import pytest
from conftest import cli, fixture_path

FIXTURES = [
    "t13_raw_sm75_c75_sm120.fatbin",
    "t14_sm90a.cubin",
    "t15_c90a.ptx",
    "t01_exe_sm80",
    "t10_rdc_lib_sm80.a",
    "pe_nv_fatb_2fatbins.dll",
]
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


@pytest.fixture
def inputs(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    for name in FIXTURES:
        if os.path.exists(fixture_path("bin", name)):
            shutil.copy(fixture_path("bin", name), d / name)
    fb = B.sample_fatbin()
    (d / "k.whl").write_bytes(
        B.zip_archive([("pkg/lib.so", B.host_elf([(".nv_fatbin", fb)])), ("pkg/k.fatbin", fb)])
    )
    (d / "layer.tar.gz").write_bytes(B.tar_archive([("usr/lib/k.fatbin", fb)], gz=True))
    os.utime(d / "k.whl", ns=(1_000_000_000, 1_000_000_000))  # a distinct, old mtime
    return d


def _state(d):
    return {
        p: (
            hashlib.sha256(open(os.path.join(d, p), "rb").read()).hexdigest(),
            os.stat(os.path.join(d, p)).st_mtime_ns,
            os.stat(os.path.join(d, p)).st_mode,
        )
        for p in sorted(os.listdir(d))
    }


@pytest.fixture
def opened(monkeypatch, inputs):
    """Every (path, flags) the tool opens below the input directory."""
    seen = []
    root = str(inputs)
    real_os_open, real_open = os.open, builtins.open

    def os_open(path, flags, *a, **k):
        if str(path).startswith(root):
            seen.append((str(path), flags))
        return real_os_open(path, flags, *a, **k)

    def py_open(file, mode="r", *a, **k):
        if isinstance(file, (str, os.PathLike)) and str(file).startswith(root):
            seen.append((str(file), os.O_RDWR if any(c in mode for c in "wax+") else os.O_RDONLY))
        return real_open(file, mode, *a, **k)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", py_open)
    return seen


COMMANDS = [
    ["list", "--kernels", "--all-members", "--format", "json"],
    ["list", "--details"],
]


@pytest.mark.parametrize("argv", COMMANDS + [["extract"]], ids=["list-json", "list-table", "extract"])
def test_inputs_read_only_and_unchanged(argv, inputs, opened, tmp_path):
    before = _state(inputs)
    args = argv + [str(inputs)] + (["-d", str(tmp_path / "out")] if argv == ["extract"] else [])
    assert cli(*args).code == 0
    assert opened, "the inputs were never opened: the check would prove nothing"
    assert {p for p, _f in opened} >= {str(inputs / n) for n in os.listdir(inputs)}
    writes = [(p, f) for p, f in opened if f & WRITE_FLAGS]
    assert not writes
    assert _state(inputs) == before
    if argv == ["extract"]:
        assert os.listdir(tmp_path / "out")  # it did extract something, elsewhere


def test_scan_leaves_inputs_untouched(inputs, opened):
    if importlib.util.find_spec("fatbin_inspect.cli.scan") is None:
        pytest.skip("scan command not built yet")
    before = _state(inputs)
    assert cli("scan", str(inputs)).code in (0, 1)
    assert not [(p, f) for p, f in opened if f & WRITE_FLAGS]
    assert _state(inputs) == before
