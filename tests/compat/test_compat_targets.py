"""--gpu / --driver / --env resolution, ambiguity errors, and the packaged data they rest on."""

import pytest

from fatbin_inspect.compat import data, targets
from fatbin_inspect.compat.targets import resolve_driver, resolve_gpu, resolve_targets
from fatbin_inspect.errors import DeviceError, UsageError


@pytest.mark.parametrize(
    "query,cc",
    [
        ("NVIDIA H100 80GB HBM3", (9, 0)),
        ("H100", (9, 0)),
        ("RTX 4090", (8, 9)),
        ("4090", (8, 9)),
        ("Jetson AGX Orin", (8, 7)),
        ("GB10", (12, 1)),
        ("B200", (10, 0)),
        ("B300", (10, 3)),
        ("V100", (7, 0)),
        ("GTX 1080", (6, 1)),
        ("8.9", (8, 9)),
        ("sm_89", (8, 9)),
        ("sm_90a", (9, 0)),
        ("12.1", (12, 1)),
        ("nvidia geforce rtx 5090", (12, 0)),
    ],
)
def test_gpu_names_and_numbers(query, cc):
    assert resolve_gpu(query).cc == cc


def test_name_matches_are_checked_against_the_data():
    g = resolve_gpu("4090")
    assert len(g.matched) > 1 and all("4090" in n for n in g.matched)
    known = {x["name"]: x["compute_capability"] for x in data.gpus()}
    assert {known[n] for n in g.matched} == {"8.9"}


def test_tegra_flag_comes_from_the_data():
    assert resolve_gpu("Jetson AGX Orin").tegra and resolve_gpu("sm_87").tegra
    assert not resolve_gpu("GB10").tegra and not resolve_gpu("A100").tegra


def test_ambiguous_name_lists_the_capabilities():
    with pytest.raises(UsageError) as exc:
        resolve_gpu("GT 730")  # GK107 (3.0) and GK208 (3.5) boards share the name
    assert "3.0" in str(exc.value) and "3.5" in str(exc.value)


def test_one_entry_per_real_product_gt_1030_is_pascal():
    """The Kepler 3.0 "GT 1030" came from one pci.ids line; the product is GP108 (6.1)."""
    g = resolve_gpu("GT 1030")
    assert g.cc == (6, 1) and g.architecture == "Pascal" and g.confidence == "high"


def test_unknown_name_lists_closest_matches():
    with pytest.raises(UsageError) as exc:
        resolve_gpu("RTX 4099")
    assert "closest" in str(exc.value) and "4090" in str(exc.value)


@pytest.mark.parametrize(
    "text,branch,version",
    [("550.54.14", 550, "550.54.14"), ("550", 550, "550"), ("R535", 535, "535"), ("551", 550, "551")],
)
def test_driver_forms(text, branch, version):
    d = resolve_driver(text)
    row = next(b for b in data.branches() if int(b["branch"]) == branch)
    assert (d.branch, d.version, d.cuda, d.max_ptx_isa) == (
        branch,
        version,
        row["max_cuda_version"],
        row["max_ptx_isa_jit"],
    )
    assert not d.assumed and (d.note is not None) == (text == "551")


def test_no_driver_assumes_the_newest_confirmed_branch_and_says_so():
    d = resolve_driver(None)
    confirmed = [int(b["branch"]) for b in data.branches() if b["confidence"] != "low"]
    assert d.assumed and d.branch == max(confirmed) and "assum" in d.note


@pytest.mark.parametrize("bad", ["abc", "5.5", "300"])
def test_bad_driver_is_a_usage_error(bad):
    with pytest.raises(UsageError):
        resolve_driver(bad)


def test_several_gpus_and_env():
    ts = resolve_targets(
        ["H100", "sm_90", "GB10"], "580", {"CUDA_FORCE_PTX_JIT": "1", "CUDA_DISABLE_JIT": "1"}
    )
    assert [t.cc for t in ts] == [(9, 0), (9, 0), (12, 1)] or len(ts) == 3
    assert all(t.force_ptx_jit and t.disable_ptx_jit for t in ts)
    assert targets.jit_switches({"CUDA_FORCE_JIT": "1", "CUDA_FORCE_PTX_JIT": "0"}) == (False, False)


def test_auto_without_a_gpu_is_a_device_error():
    with pytest.raises(DeviceError):
        resolve_targets(["auto"], "580")  # nothing probed: the engine never probes by itself
    with pytest.raises(DeviceError):
        resolve_targets(["auto"], "580", local=targets.LocalDevices(gpus=()))
    with pytest.raises(DeviceError):
        resolve_driver("auto", None)


def test_auto_uses_the_reported_capability():
    local = targets.LocalDevices(gpus=(("NVIDIA H200", (9, 0)), ("NVIDIA H200", (9, 0))), driver="570.86.15")
    (t,) = resolve_targets(["auto"], "auto", local=local)
    assert t.gpu.name == "NVIDIA H200" and t.cc == (9, 0) and t.driver.version == "570.86.15"


def test_local_devices_probes_only_for_auto(monkeypatch):
    from fatbin_inspect.system import stack

    calls = []
    nvml = stack.LocalGpu(0, "NVIDIA H200", "9.0", False)
    monkeypatch.setattr(stack, "nvml_gpus", lambda: calls.append("nvml") or ([nvml], "570.86.15", None))
    monkeypatch.setattr(stack, "cuda_python_gpus", lambda: calls.append("cuda") or ([], None, "absent"))
    assert stack.local_devices(["H100"], "580") is targets.NOT_PROBED and calls == []
    local = stack.local_devices(["auto"], "auto")
    assert local == targets.LocalDevices(gpus=(("NVIDIA H200", (9, 0)),), driver="570.86.15")
    assert calls == ["nvml"]
    monkeypatch.setattr(stack, "nvml_gpus", lambda: ([], None, "NVML unavailable"))
    monkeypatch.setattr(stack, "proc_driver_version", lambda proc: stack.KernelDriver("580.95.05", proc))
    local = stack.local_devices(["auto"], "auto")  # cuda-python for the GPUs, /proc for the driver
    assert local.gpus == () and local.driver == "580.95.05"


def test_packaged_data_keeps_sources_and_as_of():
    for name in ("gpus", "drivers", "errors", "target_rules", "toolkits"):
        doc = data.load(name)
        assert doc["as_of"] and doc["sources"], name
    assert all(g["confidence"] in ("high", "medium", "low") for g in data.gpus())


@pytest.mark.parametrize(
    "query,name",
    [
        ("h100 sxm", "NVIDIA H100"),  # board words nvidia-smi does not print
        ("H100-SXM5-80GB", "NVIDIA H100 80GB HBM3"),  # the 80GB HBM3 board is the SXM5 one
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"),  # the nvidia-smi string
        ("nvidia h100 pcie", "NVIDIA H100 PCIe"),
    ],
)
def test_token_matching_resolves_board_names(query, name):
    g = resolve_gpu(query)
    assert g.cc == (9, 0) and g.name == name


def test_the_more_specific_or_more_confident_product_wins_a_shared_name():
    from fatbin_inspect.compat import gpu_names

    rows = [
        {"name": "X 10", "compute_capability": "3.0", "tegra_igpu": False, "confidence": "medium"},
        {"name": "X 10 Ti", "compute_capability": "5.0", "tegra_igpu": False, "confidence": "high"},
        {"name": "Y 20", "compute_capability": "3.0", "tegra_igpu": False, "confidence": "medium"},
        {"name": "Y 20", "compute_capability": "6.1", "tegra_igpu": False, "confidence": "high"},
        {"name": "Z 30", "compute_capability": "3.0", "tegra_igpu": False, "confidence": "medium"},
        {"name": "Z 30", "compute_capability": "6.1", "tegra_igpu": False, "confidence": "medium"},
    ]
    assert [m.row["name"] for m in gpu_names.narrow(gpu_names.match("x", rows))] == ["X 10"]
    assert [m.cc for m in gpu_names.narrow(gpu_names.match("y 20", rows))] == [(6, 1)]
    assert len(gpu_names.narrow(gpu_names.match("z 30", rows))) == 2  # a real tie stays an error
    assert gpu_names.match("x 11", rows) == []  # the model number must match


def test_search_is_sorted_by_capability_then_name():
    rows = targets.search_gpus()
    keys = [(data.parse_cc(r["compute_capability"]), r["name"].lower()) for r in rows]
    assert keys == sorted(keys) and len(rows) == len(data.gpus())
    hopper = targets.search_gpus(cc="9.0")
    assert hopper and {r["compute_capability"] for r in hopper} == {"9.0"}
    assert {r["name"] for r in targets.search_gpus("h100 sxm")} >= {"NVIDIA H100 80GB HBM3"}
    with pytest.raises(UsageError):
        targets.search_gpus(cc="hopper")


@pytest.mark.slow
def test_gpu_name_index_matches_scoring_every_row():
    """``match`` scores only the rows sharing a token with the query (an index of the data); the
    answer is the one scoring every row gives, for every name and nvidia-smi name in the data
    and for relaxed, partial and unknown spellings."""
    from fatbin_inspect.compat import data, gpu_names

    every = data.gpus()
    queries = [n for row in every for n in gpu_names.names_of(row)]
    queries += ["h100 sxm", "H100-SXM5-80GB", "rtx 4090 24gb", "a100", "orin", "gb10", "nvidia", "zz 9"]
    queries += [q.split()[-1] for q in queries[:200]] + ["geforce", "quadro rtx", "tesla"]
    for q in queries:
        for listing in (False, True):
            got = [m.row["name"] for m in gpu_names.match(q, listing=listing)]
            want = [m.row["name"] for m in gpu_names.match(q, list(every), listing=listing)]
            assert got == want, q
