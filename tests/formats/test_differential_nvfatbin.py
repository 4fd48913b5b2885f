"""Differential test: fatbins that NVIDIA's own library (nvFatbin, through ctypes) assembles from
known entries must list exactly those entries, in order, with their bytes intact.

The library comes from the ``nvidia-nvfatbin`` wheel (13.1+ has ``nvFatbinAddTileIR``): found in
``FATBIN_INSPECT_NVFATBIN``, the repository's ``.tc135`` folder (scripts/build_fixtures.sh) or any
site-packages ``nvidia/*/lib``. Without it the tests skip and say so.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import site
from pathlib import Path

import pytest
from builders import ptx_text
from conftest import BIN, ROOT

from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.formats.fatbin import parse_fatbin
from fatbin_inspect.inventory.payloads import payload

pytestmark = pytest.mark.nvfatbin


def _find_library() -> str | None:
    env = os.environ.get("FATBIN_INSPECT_NVFATBIN")
    if env:
        return env if os.path.exists(env) else None
    dirs = [os.path.join(ROOT, ".tc135")]
    with contextlib.suppress(AttributeError):  # some virtualenvs lack these
        dirs += [*site.getsitepackages(), site.getusersitepackages()]
    for d in dirs:
        hits = sorted(glob.glob(os.path.join(d, "nvidia", "*", "lib", "libnvfatbin.so*")))
        if hits:
            return hits[0]
    return None


class NvFatbin:
    """The few nvFatbin calls the test needs; every non-zero result raises."""

    def __init__(self, path: str):
        self.lib = ctypes.CDLL(path)
        self.lib.nvFatbinGetErrorString.restype = ctypes.c_char_p
        self.tile = hasattr(self.lib, "nvFatbinAddTileIR")

    def _ok(self, rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what}: {self.lib.nvFatbinGetErrorString(rc).decode()} ({rc})")

    def build(self, items, options=()) -> bytes:
        """``items``: ("ptx", arch, text) / ("cubin", arch, bytes) / ("tile", None, bytes)."""
        handle = ctypes.c_void_p()
        opts = (ctypes.c_char_p * max(1, len(options)))(*[o.encode() for o in options])
        self._ok(self.lib.nvFatbinCreate(ctypes.byref(handle), opts, ctypes.c_size_t(len(options))), "create")
        try:
            for kind, arch, code in items:
                ident = f"{kind}_{arch}".encode()
                if kind == "ptx":
                    buf = code if code.endswith(b"\0") else code + b"\0"
                    rc = self.lib.nvFatbinAddPTX(
                        handle, buf, ctypes.c_size_t(len(buf)), arch.encode(), ident, b""
                    )
                elif kind == "cubin":
                    rc = self.lib.nvFatbinAddCubin(
                        handle, code, ctypes.c_size_t(len(code)), arch.encode(), ident
                    )
                else:
                    rc = self.lib.nvFatbinAddTileIR(handle, code, ctypes.c_size_t(len(code)), ident, b"")
                self._ok(rc, f"add {kind} {arch}")
            size = ctypes.c_size_t()
            self._ok(self.lib.nvFatbinSize(handle, ctypes.byref(size)), "size")
            out = ctypes.create_string_buffer(size.value)
            self._ok(self.lib.nvFatbinGet(handle, out), "get")
            return out.raw
        finally:
            self.lib.nvFatbinDestroy(ctypes.byref(handle))


@pytest.fixture(scope="module")
def nvfatbin() -> NvFatbin:
    path = _find_library()
    if path is None:
        pytest.skip(
            "libnvfatbin not found: pip install nvidia-nvfatbin (or set FATBIN_INSPECT_NVFATBIN); "
            "scripts/build_fixtures.sh installs it into .tc135"
        )
    return NvFatbin(path)


def _entries(raw: bytes):
    blob = Blob(raw)
    fb = parse_fatbin(blob, 0)
    return blob, fb.entries


def _tile_ir_bytes() -> bytes:
    """The cuda_tile IR nvcc 13.5 embedded in the committed Tile IR fixture (kind 0x80)."""
    path = Path(BIN, "t22_exe_tile_ir_c100")
    if not path.exists():
        pytest.skip("fixtures/bin/t22_exe_tile_ir_c100 missing (scripts/build_fixtures.sh with NVCC135)")
    from fatbin_inspect.inventory.reader import inspect_path

    rep = next(inspect_path(str(path)))
    tile = next(e for e in rep.entries if e.kind == "tile")
    with open(path, "rb") as fh:
        return payload(Blob(fh.read()), tile)


def test_ptx_entries_are_listed_exactly(nvfatbin):
    a = ptx_text((9, 5), "sm_100", ("k_one",))
    b = ptx_text((9, 0), "sm_90a", ("k_two",))
    blob, entries = _entries(nvfatbin.build([("ptx", "100", a), ("ptx", "90a", b)]))
    assert [(e.kind, e.arch, e.ptx_isa) for e in entries] == [
        ("ptx", "compute_100", "9.5"),
        ("ptx", "compute_90a", "9.0"),
    ]
    assert [payload(blob, e).rstrip(b"\0") for e in entries] == [a.rstrip(b"\0"), b.rstrip(b"\0")]
    assert [e.identifier for e in entries] == ["ptx_100", "ptx_90a"]


@pytest.mark.parametrize("options", [(), ("-compress-all",), ("-compress-mode=none",), ("-host=windows",)])
def test_cubins_are_listed_with_their_bytes(nvfatbin, options):
    cubins = [("90a", Path(BIN, "t14_sm90a.cubin")), ("100a", Path(BIN, "o3_sm100a_ptxas129.cubin"))]
    items = [("cubin", arch, p.read_bytes()) for arch, p in cubins]
    blob, entries = _entries(nvfatbin.build(items, options))
    assert [(e.kind, e.arch) for e in entries] == [("sass", "sm_90a"), ("sass", "sm_100a")]
    assert [payload(blob, e) for e in entries] == [code for _k, _a, code in items]
    if "-host=windows" in options:
        assert {e.host for e in entries} == {"windows"}
    if "-compress-mode=none" in options:
        assert {e.compression for e in entries} == {"none"}


def test_tile_ir_entry_is_its_own_kind(nvfatbin):
    if not nvfatbin.tile:
        pytest.skip("this libnvfatbin predates nvFatbinAddTileIR (CUDA 13.1)")
    ir = _tile_ir_bytes()
    assert ir.startswith(b"\x7fTileIR\0")
    ptx = ptx_text((9, 5), "sm_100", ("simt",))
    blob, entries = _entries(nvfatbin.build([("tile", None, ir), ("ptx", "100", ptx)]))
    assert [e.kind for e in entries] == ["tile", "ptx"]
    tile = entries[0]
    assert tile.kind_code == 0x80 and tile.tile_ir_version == f"{ir[8]}.{ir[9]}"
    assert payload(blob, tile) == ir
