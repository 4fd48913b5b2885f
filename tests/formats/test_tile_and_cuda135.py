"""Tile IR (kind ``tile``, R-TILE) and the CUDA 13.5 fixtures: Rubin sm_107/sm_107f, Thor sm_110f,
PTX ISA 9.5, nvcc -enable-tile (t20-t22, scripts/build_fixtures.sh with NVCC135)."""

import pytest
from builders import KIND_PTX, entry, fatbin, ptx_text
from conftest import cli, device_only, fixture_path

from fatbin_inspect.compat import rules
from fatbin_inspect.compat.engine import evaluate, evaluate_fatbin
from fatbin_inspect.compat.targets import resolve_targets
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.formats.fatbin import parse_fatbin
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.payloads import payload
from fatbin_inspect.inventory.reader import inspect_path

KIND_TILE_CODE = 0x80
TILE_IR = b"\x7fTileIR\x00\x0d\x05\x00\x00" + bytes(40)  # bytecode 13.5 header, body zeroed
T20 = fixture_path("bin", "t20_exe_sm107f_sm110f_c107_c107f")
T21 = fixture_path("bin", "t21_exe_tile_sm100")
T22 = fixture_path("bin", "t22_exe_tile_ir_c100")


def T(gpu, driver):
    return device_only(resolve_targets([gpu], driver))[0]


def tile_fatbin(arch=100, compress="zstd"):
    return parse_fatbin(
        Blob(fatbin([entry(KIND_TILE_CODE, arch, TILE_IR, code=(0x0D05, 0), compress=compress)])), 0
    )


def report_of(path):
    return next(inspect_path(path, Options(kernels=True, details=True, resources=False)))


# ------------------------------------------------------------------------------------ format
def test_tile_entry_is_its_own_kind_with_its_version():
    fb = tile_fatbin()
    (e,) = fb.entries
    assert (e.kind, e.kind_code, e.arch, e.tile_ir_version, e.ptx_isa) == (
        "tile",
        0x80,
        "tile_100",
        "13.5",
        None,
    )
    assert (
        payload(Blob(fatbin([entry(KIND_TILE_CODE, 100, TILE_IR, code=(0x0D05, 0), compress="zstd")])), e)
        == TILE_IR
    )


def test_nvcc_enable_tile_ir_fixture_lists_a_tile_entry():
    rep = report_of(T22)
    kinds = [(e.kind, e.arch) for e in rep.entries]
    assert ("tile", "tile_100") in kinds and ("ptx", "compute_100") in kinds
    tile = next(e for e in rep.entries if e.kind == "tile")
    assert tile.tile_ir_version == "13.5" and tile.compression == "zstd"
    res = cli("list", T22)
    assert res.code == 0 and "tile_100" in res.out and "Tile IR 13.5" in res.out


def test_tile_cubin_is_arch_specific_inside():
    """tileiras builds the Tile cubin as sm_100a (.nv.compat) under a plain sm_100 fatbin header."""
    rep = report_of(T21)
    cubins = [e for e in rep.entries if e.kind == "sass"]
    assert len(cubins) == 3 and {e.arch for e in cubins} == {"sm_100"}
    assert sum(rules.arch_specific(e) for e in cubins) == 1
    v = evaluate(rep, T("B300", "580"))  # 10.3: the Tile cubin's fatbin has nothing that loads
    assert v.verdict == "native" and v.counts["fail"] == 1
    assert evaluate(rep, T("B200", "580")).counts == {"native": 2, "jit": 0, "fail": 0}


# ------------------------------------------------------------------------------------ R-TILE
@pytest.mark.parametrize(
    "gpu,driver,ok,word",
    [
        ("B200", "580", True, "R580"),
        ("RTX 5090", "595", True, "12.0"),
        ("B200", "575", False, "R580 or newer"),
        ("H100", "580", False, "9.0"),  # NVIDIA names 8.x, 10.x, 11.x, 12.x
        ("A100", "580", False, "above CC 8.0"),  # IR made for arch 100
    ],
)
def test_r_tile_requirements(gpu, driver, ok, word):
    (e,) = tile_fatbin().entries
    o = rules.tile_ir(e, T(gpu, driver))
    assert o.ok is ok and o.rule == "R-TILE" and o.confidence == "medium" and word in o.reason
    assert (o.error is None) if ok else (o.error == 209)


def test_tile_only_fatbin_is_jit_not_no_device_code():
    v = evaluate_fatbin(tile_fatbin(), T("B200", "580"))
    assert v.verdict == "jit" and v.rule == "R-TILE" and v.chosen.kind == "tile" and v.confidence == "medium"
    bad = evaluate_fatbin(tile_fatbin(), T("H100", "580"))
    assert bad.verdict == "fail" and bad.error.code == 209 and bad.rule == "R-TILE"


def test_tile_ir_fixture_on_b200_needs_a_driver_for_its_ptx_isa_9_5():
    rep = report_of(T22)
    old = evaluate(rep, T("B200", "580"))  # the SIMT fatbin's PTX is ISA 9.5: R580 JITs up to 9.0
    assert old.verdict == "fail" and old.error.code == 222
    new = evaluate(rep, T("B200", "620"))
    assert new.verdict == "jit" and "R-TILE" in new.rules


# ------------------------------------------------------------------- CUDA 13.5 fixtures (t20)
def test_t20_lists_sm107f_sm110f_and_isa_9_5():
    rep = report_of(T20)
    archs = {e.arch for e in rep.entries}
    assert {"sm_107f", "sm_110f", "compute_107", "compute_107f"} <= archs
    assert {e.ptx_isa for e in rep.entries if e.kind == "ptx"} == {"9.5"}


@pytest.mark.parametrize(
    "gpu,driver,verdict,rule",
    [
        ("VR200", "615", "native", "R-SASS-F"),
        ("VR200", "610", "fail", "R-GPU"),  # R610 does not drive a Rubin
        ("Jetson AGX Thor", "580", "native", "R-SASS-F"),
        ("B300", "620", "fail", "R-SASS-F"),  # 107f code serves 10.7 only, compute_107 needs 10.7+
        ("RTX 5090", "620", "jit", "R-PTX-TARGET-1"),  # compute_107 PTX JITs upward
        ("RTX 5090", "615", "fail", "R-PTX-ISA"),  # ISA 9.5 needs CUDA 13.5 (R620)
    ],
)
def test_t20_verdicts(gpu, driver, verdict, rule):
    v = evaluate(report_of(T20), T(gpu, driver))
    assert v.verdict == verdict, v.reason
    assert v.rule == rule or rule in v.rules, (v.rule, v.rules)


def test_sm100f_code_runs_on_rubin_cli():
    """The issue's check: sm_100f code runs on 10.7 with R615; R610 does not drive a Rubin."""
    f = fixture_path("bin", "t05_exe_af_targets")
    ok = cli("check", f, "--gpu", "VR200", "--driver", "615")
    assert ok.code == 0 and "NATIVE" in ok.out
    bad = cli("check", f, "--gpu", "VR200", "--driver", "610")
    assert bad.code == 1 and "100" in bad.out and "R615" in bad.out


def test_ptx_builder_still_makes_plain_ptx():  # guard: the tile kind did not swallow kind 1
    fb = parse_fatbin(Blob(fatbin([entry(KIND_PTX, 100, ptx_text((9, 5), "sm_100"), code=(9, 5))])), 0)
    assert fb.entries[0].kind == "ptx" and fb.entries[0].ptx_isa == "9.5"
