"""Every committed real fixture lists exactly the entries fixtures/README.md says nvcc put there."""

import pytest
from conftest import fixture_path

from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path


def legend(report):
    """fixtures/README.md legend: E:80/zs, P:c90, L:c80, R:c80; fatbins joined by ' ; '."""
    parts = []
    for fb in report.fatbins:
        items = []
        for e in fb.entries:
            k = {"sass": "E", "ptx": "P", "ltoir": "L"}[e.kind]
            if e.relocatable_ptx:
                k = "R"
            arch = f"{'' if e.kind == 'sass' else 'c'}{e.sm}{e.variant}"
            comp = {"zstd": "/zs", "lz4": "/lz4", "none": ""}[e.compression]
            items.append(f"{k}:{arch}{comp}")
        parts.append(" ".join(items) or "(empty)")
    return " ; ".join(parts)


# file -> (sections, legend) as documented in fixtures/README.md for the same nvcc/fatbinary commands
EXPECTED = {
    "t01_exe_sm80": ({".nv_fatbin"}, "E:80 ; E:80 P:c80/zs"),
    "t02_exe_sm75_sm80_sm90_c90": ({".nv_fatbin"}, "E:75 E:80 E:90 ; E:75 E:80 E:90 P:c90/zs"),
    "t03_exe_ptx_only_c80": ({".nv_fatbin"}, "(empty) ; P:c80/zs"),
    "t04_exe_sm90a_c90a": ({".nv_fatbin"}, "E:90a ; E:90a P:c90a/zs"),
    "t05_exe_af_targets": (
        {".nv_fatbin"},
        "E:100f E:120f E:100a E:103f E:110f E:121a ; E:100f P:c100f/zs E:120f E:100a E:103f E:110f E:121a",
    ),
    "t06_exe_compress_all": ({".nv_fatbin"}, "E:80/zs ; E:80/zs P:c80/zs"),
    "t07_exe_no_compress": ({".nv_fatbin"}, "E:80 ; E:80 P:c80"),
    "t08_exe_mode_size": ({".nv_fatbin"}, "E:80/zs ; E:80/zs P:c80/zs"),
    "t08_exe_mode_speed_lz4": ({".nv_fatbin"}, "E:80 ; E:80 P:c80/lz4"),
    "t09_rdc_a_sm80.o": ({"__nv_relfatbin"}, "E:80/zs P:c80/zs"),
    "t11_exe_rdc_sm80": (
        {".nv_fatbin", "__nv_relfatbin"},
        "E:80 ; E:80/zs P:c80/zs ; E:80/zs P:c80/zs ; E:80/zs P:c80/zs",
    ),
    "t12_lib_sm86_c89.so": ({".nv_fatbin"}, "E:86 ; E:86 P:c89/zs"),
    "t13_raw_sm75_c75_sm120.fatbin": ({None}, "E:75 P:c75/zs E:120"),
    "t14_sm90a.cubin": ({None}, "E:90a"),
    "t15_c90a.ptx": ({None}, "P:c90a"),
    "t16_exe_debug_G_sm80": ({".nv_fatbin"}, "E:80/zs ; E:80/zs P:c80/zs"),
    "t17_nonrdc_sm80.o": ({".nv_fatbin"}, "E:80"),
    "t18_lto80.o": ({"__nv_relfatbin"}, "L:c80/zs"),
    "t18_lto80_sm90.fatbin": ({None}, "L:c80/zs E:90/zs"),
    "t19_exe_lineinfo_sm80": ({".nv_fatbin"}, "E:80 ; E:80 P:c80/zs"),
    "v1_sm100_sm100a_sm103f_c120_c120a_c120f.fatbin": (
        {None},
        "E:100 E:100a E:103f P:c120/zs P:c120a/zs P:c120f/zs",
    ),
    "o1_sm35_ptxas118.cubin": ({None}, "E:35"),
    "o2_sm35_sm50_c50.fatbin": ({None}, "E:35 E:50 P:c50/zs"),
    "o3_sm50_sm90a_sm100a_sm120f_c50.fatbin": ({None}, "E:50 E:90a E:100a E:120f P:c50/zs"),
    "o3_sm100a_ptxas129.cubin": ({None}, "E:100a"),
    "hidden_rodata_fatbin.so": ({".rodata"}, "E:75 P:c75/zs E:120"),
    "hidden_ldata_2fatbins.so": ({".ldata"}, "E:75 P:c75/zs E:120 ; L:c80/zs E:90/zs"),
    "pe_nv_fatb_2fatbins.dll": (
        {".nv_fatb"},
        "E:75 P:c75/zs E:120 ; E:100 E:100a E:103f P:c120/zs P:c120a/zs P:c120f/zs",
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_entries(name):
    sections, expected = EXPECTED[name]
    (report,) = list(inspect_path(fixture_path("bin", name), Options(details=True)))
    assert report.error is None
    assert legend(report) == expected
    assert {fb.section for fb in report.fatbins} == sections
    for e in report.entries:
        assert e.decode_error is None, e
        if e.kind == "sass" and e.cubin is not None and e.header_size:
            assert e.cubin.sm == e.sm  # e_flags (decoded by ABI version) agree with the header


def test_archive_members_named_container_bang_member():
    reports = list(inspect_path(fixture_path("bin", "t10_rdc_lib_sm80.a")))
    assert [r.path.rsplit("/", 1)[-1] for r in reports] == [
        "t10_rdc_lib_sm80.a",
        "t10_rdc_lib_sm80.a!rdc_a.o",
        "t10_rdc_lib_sm80.a!rdc_b.o",
    ]
    assert reports[0].format == "ar" and not reports[0].fatbins
    assert [legend(r) for r in reports[1:]] == ["E:80/zs P:c80/zs"] * 2


def test_details_from_cubin_and_headers():
    (r,) = inspect_path(fixture_path("bin", "t01_exe_sm80"), Options(kernels=True))
    dl, real, ptx = r.entries
    assert dl.cubin.device_link and dl.kernels == () and dl.cubin.toolkit.startswith("nvlink")
    assert not real.cubin.device_link and real.cubin.toolkit.startswith("ptxas 13.0")
    assert real.cubin.elf_abi == 8 and real.code_version == (1, 8) and real.cubin.elf_type == "exec"
    assert ptx.ptx_isa == "9.0" and ptx.ptx_target == "sm_80"
    names = {k.demangled for k in real.kernels}
    assert names == {k.demangled for k in ptx.kernels}
    assert "add_kernel(float const*, float const*, float*, int)" in names
    assert r.needs == ("libcudart.so.13",)


def test_kernel_resources_match_cuobjdump_res_usage():
    # docs/format.md §3.6: REG 12/8/10, SHARED 2048/0/0 for add/scale/tmpl (nvcc 13.0, sm_80)
    (r,) = inspect_path(fixture_path("bin", "t07_exe_no_compress"), Options(kernels=True))
    real = r.fatbins[1].entries[0]
    by = {k.demangled.split("(")[0].replace("void ", ""): k for k in real.kernels}
    assert by["add_kernel"].shared == 2048
    assert by["scale_kernel"].max_threads == (128, 1, 1)
    assert by["add_kernel"].registers and by["scale_kernel"].registers
    assert all(k.constant0 and k.constant0 > 0 for k in real.kernels)


def test_debug_identifier_and_options():
    (r,) = inspect_path(fixture_path("bin", "t16_exe_debug_G_sm80"))
    ptx = [e for e in r.entries if e.kind == "ptx"][0]
    assert ptx.debug and ptx.identifier == "k.cu"
    assert "-g" in ptx.options.split()


def test_ltoir_is_listed_never_decoded():
    (r,) = inspect_path(fixture_path("bin", "t18_lto80_sm90.fatbin"), Options(kernels=True))
    lto = r.entries[0]
    assert lto.kind == "ltoir" and lto.arch == "lto_80" and lto.kernels is None and lto.decode_error is None


def test_v7_cubins_and_old_ptxas():
    (r,) = inspect_path(fixture_path("bin", "o1_sm35_ptxas118.cubin"), Options(kernels=True))
    (e,) = r.entries
    assert e.cubin.elf_abi == 7 and e.sm == 35 and len(e.kernels) == 3
    (r,) = inspect_path(fixture_path("bin", "o3_sm100a_ptxas129.cubin"), Options(details=True))
    assert r.entries[0].arch == "sm_100a" and r.entries[0].cubin.arch_specific


def test_pe_host_flag_and_imports():
    (r,) = inspect_path(fixture_path("bin", "pe_nv_fatb_2fatbins.dll"))
    assert r.format == "pe"
    assert all(fb.offset % 16 == 0 for fb in r.fatbins)


def test_cut_download_still_lists_the_fatbins_that_exist(tmp_path):
    # the section table sits at the end of an ELF: a truncated file loses it, not its fatbins
    data = open(fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90"), "rb").read()
    cut = tmp_path / "cut.so"
    cut.write_bytes(data[: len(data) - 200])
    (r,) = inspect_path(str(cut))
    assert r.error is not None and r.error.offset is not None
    assert legend(r) == EXPECTED["t02_exe_sm75_sm80_sm90_c90"][1]
    assert {fb.found_by for fb in r.fatbins} == {"scan"}


def test_pe_section_spans_match_lief():
    # VirtualSize comes before VirtualAddress in a PE section header; a swap broke the import
    # directory lookup of real DLLs (bitsandbytes' libbitsandbytes_cpu.dll)
    import lief

    from fatbin_inspect.containers import pe
    from fatbin_inspect.formats.binio import open_blob

    path = fixture_path("bin", "pe_nv_fatb_2fatbins.dll")
    blob = open_blob(path)
    (pe_off,) = __import__("struct").unpack_from("<I", blob.head(0x40), 0x3C)
    ours = pe._section_spans(blob, pe_off + 4)
    binary = lief.PE.parse(path)  # keep a reference: sections die with their binary
    ref = [
        (s.virtual_address, s.virtual_size, s.sizeof_raw_data, s.pointerto_raw_data) for s in binary.sections
    ]
    assert ours == ref
