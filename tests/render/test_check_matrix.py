"""``check`` as a matrix (more than one file or target): cells, legend, notes once; ``--long``."""

import os

import pytest
from conftest import CORPUS, cli, fixture_path

from fatbin_inspect.compat.targets import resolve_driver
from fatbin_inspect.render.check_matrix import LEGEND

ASSUMED = resolve_driver(None).branch  # the newest branch the data confirms (R620 since 2026-12-01)

SM80 = fixture_path("bin", "t01_exe_sm80")  # sm_80 + compute_80, cudart 13
MULTI = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")
WIDE = {"COLUMNS": "200"}


def test_matrix_cells_legend_and_notes():
    ran = cli("check", SM80, MULTI, "--gpu", "H100", "--gpu", "T4", "--gpu", "RTX 5090", env=WIDE)
    code, out = ran.code, ran.out
    lines = out.splitlines()
    header = "\n".join(lines[:3])
    assert "H100" in header and "Tesla T4" in header and "RTX 5090" in header and f"drv {ASSUMED}*" in header
    assert "file (in " in header  # the shared folder is said once, rows show the rest
    row80 = next(ln for ln in lines if ln.startswith("t01_exe_sm80"))
    assert row80.split()[1:] == ["jit", "compute_80", "fail", "209", "jit", "compute_80"]
    row_multi = next(ln for ln in lines if ln.startswith("t02_exe_sm75_sm80_sm90_c90"))
    assert row_multi.split()[1:] == ["native", "sm_90", "native", "sm_75", "jit", "compute_90"]
    assert LEGEND.split(" · ")[0] in out.replace("\n", " ")
    notes = out[out.index("Notes") :]
    # each failure once, naming its target; the assumed driver once (not per target)
    assert (
        notes.count(
            f"209 cudaErrorNoKernelImageForDevice (R-SASS-1) on Tesla T4, driver {ASSUMED}: t01_exe_sm80:"
        )
        == 1
    )
    assert notes.count("no --driver given") == 1
    assert "on [" not in out
    assert "2 files × 3 targets: 2 native, 3 jit, 1 fail" in out
    assert code == 1


def test_one_file_and_one_target_keeps_the_block_and_long_forces_it():
    out = cli("check", SM80, "--gpu", "H100", env=WIDE).out
    assert "on [0]" in out and "Notes" not in out
    out = cli("check", SM80, MULTI, "--gpu", "H100", "--long", env=WIDE).out
    assert out.count("on [0]") == 2 and LEGEND[:20] not in out


def test_fleet_hosts_head_the_columns(tmp_path):
    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[[targets]]\nname = "node7"\ngpu = "A100"\ndriver = "580"\n')
    out = cli("check", SM80, MULTI, "--targets", str(fleet), env=WIDE).out
    assert out.splitlines()[0].split() == ["node7"] and "drv 580" in out.splitlines()[2]


def test_partial_coverage_is_marked_and_noted(tmp_path):
    import builders as B

    lib = tmp_path / "lib.so"  # one TU built for sm_90, one for sm_80 only: an H100 loads 1 of 2 fatbins
    lib.write_bytes(B.arch_library(B.arch_fatbin(["90"]), B.arch_fatbin(["80"])))
    out = cli("check", str(lib), "--gpu", "H100", "--gpu", "RTX 5090", "--driver", "580", env=WIDE).out
    row = next(ln for ln in out.splitlines() if ln.startswith(str(lib)))
    # H100: the sm_80 fatbin has no code for it (partial, ~); RTX 5090: nothing loads (no mark)
    assert row.split()[1:] == ["native", "sm_90~", "fail", "209"]
    notes = out[out.index("Notes") :]
    assert f"partial coverage of {lib} on H100, driver 580: 1 fatbin" in notes


def test_a_jit_cell_says_which_fatbins_jit_and_from_which_ptx(tmp_path):
    """spconv's shape: most fatbins have a cubin for sm_90 and compute_90 PTX, a third only sm_52
    code and compute_52 PTX. On an H100 the file JITs compute_52 for those only; on an RTX 5090
    every fatbin JITs, from two different PTX."""
    import builders as B

    lib = tmp_path / "libspconv_like.so"
    lib.write_bytes(
        B.arch_library(
            B.arch_fatbin(["80", "90"], ["90"]),
            B.arch_fatbin(["80", "90"], ["90"]),
            B.arch_fatbin(["52"], ["52"]),
        )
    )
    out = cli("check", str(lib), "--gpu", "H100", "--gpu", "RTX 5090", "--driver", "580", env=WIDE).out
    notes = " ".join(out[out.index("Notes") :].split())
    assert "jit on H100, driver 580" in notes
    assert (
        "1 of 3 fatbins JIT-compile PTX at the first launch (compute_52 ×1); 2 load a cubin (sm_90)" in notes
    )
    assert "all 3 fatbins JIT-compile PTX at the first launch (compute_90 ×2, compute_52 ×1)" in notes
    # one PTX for every fatbin: the cell says it all, no note
    out = cli("check", SM80, MULTI, "--gpu", "RTX 5090", "--driver", "580", env=WIDE).out
    assert "JIT-compile PTX" not in out


SPCONV = os.path.join(CORPUS, "spconv_cu120-2.3.6-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")


@pytest.mark.corpus
@pytest.mark.skipif(
    not os.path.exists(SPCONV),
    reason="no spconv-cu120 2.3.6 in .cache/corpus (scripts/fetch_corpus.sh)",
)
def test_spconv_jit_cells_name_the_mix():
    out = cli("check", SPCONV, "--gpu", "H100", "--gpu", "RTX 5090", "--driver", "580", env=WIDE).out
    notes = " ".join(out[out.index("Notes") :].split())
    assert (
        "195 of 606 fatbins JIT-compile PTX at the first launch (compute_52 ×195); 411 load a cubin (sm_90)"
        in notes
    )
    assert "all 606 fatbins JIT-compile PTX at the first launch (compute_90 ×411, compute_52 ×195)" in notes
