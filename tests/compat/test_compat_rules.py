"""Each R- rule on its own, R-SEL's choices, and the file roll-up, over synthesized records."""

import pytest
from record_builders import E

from fatbin_inspect.compat import data, rules
from fatbin_inspect.compat.engine import evaluate, evaluate_fatbin
from fatbin_inspect.compat.runtime import RuntimeNeed
from fatbin_inspect.compat.targets import Target, gpu_for_cc, resolve_driver, resolve_gpu
from fatbin_inspect.formats.model import CubinInfo, Entry, Fatbin, FileReport


def T(gpu, driver="580", **env):
    return Target(resolve_gpu(gpu), resolve_driver(driver), **env)


@pytest.mark.parametrize(
    "arch,gpu,ok",
    [
        ("sm_80", "8.0", True),
        ("sm_80", "8.6", True),
        ("sm_80", "8.9", True),
        ("sm_86", "8.9", True),
        ("sm_86", "8.0", False),
        ("sm_89", "8.6", False),
        ("sm_80", "9.0", False),
        ("sm_90", "10.0", False),
        ("sm_100", "10.3", True),
        ("sm_103", "10.0", False),
        ("sm_120", "12.1", True),
        ("sm_121", "12.0", False),
        ("sm_100", "12.0", False),
    ],
)
def test_r_sass_1(arch, gpu, ok):
    o = rules.sass(E(arch), T(gpu))
    assert o.ok is ok and o.rule == "R-SASS-1"
    assert o.error == (None if ok else 209)


@pytest.mark.parametrize(
    "arch,gpu,ok",
    [
        ("sm_80", "Jetson AGX Orin", False),
        ("sm_86", "sm_87", False),
        ("sm_87", "Jetson AGX Orin", True),
        ("sm_70", "7.2", False),
        ("sm_60", "6.2", False),
    ],
)
def test_r_sass_tegra(arch, gpu, ok):
    o = rules.sass(E(arch), T(gpu))
    assert o.ok is ok
    assert o.rule == ("R-SASS-1" if ok else "R-SASS-TEGRA")


def test_tegra_cubin_on_desktop_of_higher_minor_fails():
    assert not rules.sass(E("sm_87"), T("8.9")).ok  # an 8.7 cubin is Tegra-only


@pytest.mark.parametrize(
    "arch,gpu,ok",
    [
        ("sm_90a", "H100", True),
        ("sm_100a", "B200", True),
        ("sm_100a", "B300", False),
        ("sm_120a", "GB10", False),
        ("sm_90a", "B200", False),
    ],
)
def test_r_sass_a(arch, gpu, ok):
    o = rules.sass(E(arch), T(gpu))
    assert (o.ok, o.rule) == (ok, "R-SASS-A")


def test_r_sass_a_from_cubin_marker_without_header_variant():
    e = E("sm_90a")
    plain = Entry(**{**e.__dict__, "variant": ""})  # CUDA 13 cubin: only .nv.compat says "a"
    assert plain.cubin.arch_specific and rules.sass(plain, T("H100")).rule == "R-SASS-A"


@pytest.mark.parametrize(
    "arch,gpu",
    [
        ("sm_100f", "10.0"),
        ("sm_100f", "10.3"),
        ("sm_120f", "12.1"),
        ("sm_103f", "10.3"),
        ("sm_100f", "12.0"),
        ("sm_103f", "10.0"),
    ],
)
def test_r_sass_f_follows_family_data(arch, gpu):
    t = T(gpu)
    members = data.family_members(int(arch[3:-1]))
    o = rules.sass(E(arch), t)
    assert o.rule == "R-SASS-F" and o.ok is (t.cc in members)


def test_r_sass_thor_is_low_confidence():
    o = rules.sass(E("sm_101"), T("Jetson AGX Thor"))
    assert o.ok and o.rule == "R-SASS-THOR" and o.confidence == "low"
    assert not rules.sass(E("sm_101"), T("B200")).ok


@pytest.mark.parametrize(
    "arch,gpu,ok,rule",
    [
        ("compute_80", "8.0", True, "R-PTX-TARGET-1"),
        ("compute_80", "12.0", True, "R-PTX-TARGET-1"),
        ("compute_80", "Jetson AGX Orin", True, "R-PTX-TARGET-1"),
        ("compute_86", "8.0", False, "R-PTX-TARGET-1"),
        ("compute_90a", "H100", True, "R-PTX-TARGET-A"),
        ("compute_90a", "B200", False, "R-PTX-TARGET-A"),
        ("compute_100a", "B300", False, "R-PTX-TARGET-A"),
        ("compute_100f", "B300", True, "R-PTX-TARGET-F"),
        ("compute_100f", "RTX 5090", False, "R-PTX-TARGET-F"),
        ("compute_120f", "GB10", True, "R-PTX-TARGET-F"),
    ],
)
def test_r_ptx_target(arch, gpu, ok, rule):
    o = rules.ptx_target(E(arch, "8.0"), T(gpu))
    assert (o.ok, o.rule) == (ok, rule)


@pytest.mark.parametrize("branch", [row["branch"] for row in data.branches()][::4])
def test_r_ptx_isa_boundary_is_the_drivers_max(branch):
    t = T("8.0", branch)
    major, minor = (int(x) for x in t.driver.max_ptx_isa.split("."))
    assert rules.ptx_isa(E("compute_80", f"{major}.{minor}"), t).ok
    newer = rules.ptx_isa(E("compute_80", f"{major}.{minor + 1}"), t)
    assert not newer.ok and newer.error == 222 and newer.rule == "R-PTX-ISA"


def test_r_sel_prefers_closest_cubin_over_exact_ptx():
    sel = rules.select([E("sm_80"), E("sm_86"), E("compute_89", "8.0")], T("8.9", "550"))
    assert sel.verdict == "native" and sel.entry.arch == "sm_86" and "R-SEL" in sel.rules


def test_r_sel_jits_highest_usable_ptx_and_does_not_fall_back_on_isa():
    t = T("10.0", "570")  # ISA <= 8.7
    sel = rules.select([E("compute_80", "8.4"), E("compute_90", "8.8")], t)
    assert sel.verdict == "fail" and sel.entry.arch == "compute_90" and sel.outcome.error == 222
    sel = rules.select([E("compute_80", "8.4"), E("compute_90", "8.4")], t)
    assert sel.verdict == "jit" and sel.entry.arch == "compute_90"


def test_jit_env_switches():
    fb = [E("sm_80"), E("compute_80", "8.0")]
    assert rules.select(fb, T("8.0", "535", force_ptx_jit=True)).verdict == "jit"
    assert rules.select(fb, T("8.0", "535", disable_ptx_jit=True)).verdict == "native"
    sel = rules.select([E("compute_80", "8.0")], T("8.0", "535", disable_ptx_jit=True))
    assert (sel.verdict, sel.outcome.error, sel.outcome.rule) == ("fail", 223, "R-JIT-ENV")


@pytest.mark.parametrize(
    "runtime,driver,ok",
    [
        ("12", "470", False),
        ("12", "525.60.13", True),
        ("12", "525.60.12", False),
        ("12", "525", True),
        ("13", "575", False),
        ("13", "580", True),
        ("11", "450.80.02", True),
        ("11", "450.51.05", False),
        ("10.1", "418.39", True),
        ("10.2", "418", False),
        ("12", "620", True),
    ],
)
def test_r_drv(runtime, driver, ok):
    o = rules.driver_for_runtime(RuntimeNeed(runtime, "test"), T("8.0", driver))
    assert (o.ok, o.rule, o.error) == (ok, "R-DRV", None if ok else 35)


def test_r_mvc_note_only_for_newer_minor_of_same_major():
    assert rules.mvc(RuntimeNeed("12.8", "t"), T("H100", "525")).rule == "R-MVC"
    assert rules.mvc(RuntimeNeed("12.2", "t"), T("H100", "535")) is None
    assert rules.mvc(RuntimeNeed("12", "t"), T("H100", "525")) is None


@pytest.mark.parametrize(
    "gpu,driver,ok",
    [
        ("GTX 1080", "580", True),
        ("GTX 1080", "590", False),
        ("RTX 5090", "565", False),
        ("RTX 5090", "570", True),
        ("B300", "570", False),
        ("Tesla K80", "470", True),
        ("Tesla K80", "525", False),
    ],
)
def test_r_gpu(gpu, driver, ok):
    o = rules.gpu_supported(T(gpu, driver))
    assert (o.ok, o.rule, o.error) == (ok, "R-GPU", None if ok else 100)


def test_r_toolkit_targets_names_the_toolkits_from_data():
    hint = rules.toolkit_targets(T("GTX 1080"))
    vs = data.toolkits_targeting("sm_61")
    assert vs and vs[0] in hint and vs[-1] in hint and not any(v.startswith("13.") for v in vs)


def report(*fatbins, needs=()):
    return FileReport(path="x.so", format="elf", size=1, fatbins=tuple(fatbins), needs=needs)


def FB(offset, *entries, section=".nv_fatbin"):
    return Fatbin(offset=offset, size=1, section=section, entries=tuple(entries))


def test_device_link_and_relocatable_fatbins_do_not_fail_a_file():
    r = report(
        FB(0, E("sm_80", kernels=(), device_link=True)),
        FB(100, E("sm_86"), E("compute_86", "8.0")),
        FB(200, E("sm_75"), section="__nv_relfatbin"),
    )
    v = evaluate(r, T("8.9", "550"))
    assert v.verdict == "native" and v.counts == {"native": 1, "jit": 0, "fail": 0}
    ignored = [f for f in v.fatbins if f.ignored]
    assert [f.offset for f in ignored] == [0, 200]


def test_a_gap_fails_the_file_and_counts_are_kept():
    # compute_80 PTX of ISA 8.4 targets the A100 but R535's JIT stops at 8.2: a gap (R-FILE 4)
    r = report(FB(0, E("sm_80")), FB(10, E("compute_80", "8.0")), FB(20, E("compute_80", "8.4")))
    v = evaluate(r, T("A100", "535"))
    assert v.verdict == "fail" and v.error.code == 222 and v.counts == {"native": 1, "jit": 1, "fail": 1}
    assert v.coverage == "partial" and v.gaps.count == 1 and v.specialised is None
    assert v.chosen is None and v.advice and "1 of 3 fatbins" in v.reason


def test_a_fatbin_for_newer_gpus_is_set_aside():
    # sm_90 only on an A100: specialised elsewhere (i); the file's verdict is the loading fatbins' (R-FILE 3)
    r = report(FB(0, E("sm_80")), FB(10, E("compute_80", "8.0")), FB(20, E("sm_90", kernels=("hopper",))))
    v = evaluate(r, T("A100", "535"))
    assert v.verdict == "jit" and v.error is None and v.counts == {"native": 1, "jit": 1, "fail": 1}
    assert v.coverage == "partial" and v.gaps is None
    assert v.specialised.count == 1 and v.specialised.kinds == (("i", 1),)
    assert v.specialised.archs == (("sm_90", 1),) and v.specialised.kernels == ("hopper",)


def test_missing_kernels_are_those_only_other_images_have():
    fb = FB(0, E("sm_75", kernels=("a",)), E("sm_90a", kernels=("a", "hopper_only")))
    v = evaluate(report(fb), T("7.5"))
    assert v.verdict == "native" and v.missing_kernels == ("hopper_only",)
    assert evaluate(report(fb), T("H100")).missing_kernels == ()


def test_runtime_failures_come_before_images():
    r = report(FB(0, E("sm_90")), needs=("libcudart.so.13",))
    v = evaluate(r, T("H100", "570"))
    assert (v.verdict, v.error.code, v.rule) == ("fail", 35, "R-DRV")
    v = evaluate(r, T("GTX 1080", "590"))
    assert (v.verdict, v.error.code, v.rule) == ("fail", 100, "R-GPU")


def test_no_device_code():
    assert evaluate(report(), T("H100")).verdict == "no-device-code"


def test_evaluate_fatbin_keeps_offsets_and_per_entry_verdicts():
    fb = FB(4096, E("sm_80", offset=4112), E("compute_90", "9.0", offset=5000))
    v = evaluate_fatbin(fb, T("A100", "535"))
    assert v.offset == 4096 and v.chosen.offset == 4112
    assert [(e.arch, e.verdict) for e in v.entries] == [("sm_80", "native"), ("compute_90", "fail")]
    assert gpu_for_cc((8, 7)).tegra


def test_stray_accelerator_bit_below_sm90_is_not_arch_specific():
    # CUDA 12.4 cuBLAS: v7 e_flags 0x800 on sm_50/60/61 cubins whose fatbin header says plain sm_XY
    e = E("sm_50")
    stray = Entry(**{**e.__dict__, "cubin": CubinInfo(7, "exec", 50, True, 50, False, None, None)})
    o = rules.sass(stray, T("5.2"))
    assert o.ok and o.rule == "R-SASS-1"
