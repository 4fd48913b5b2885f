"""R-FILE on real multi-TU libraries (fixtures/units, built by scripts/build_fixtures.sh from unit.cu).

Each library links several translation units whose fatbins target different GPUs (one kernel per
TU, named after it): f1 every TU for sm_80/90/100/120 (+compute_120), f2 only sm_90a, f3 a general
TU (sm_80/90/120) beside TUs for sm_90a, sm_100f, sm_75 and sm_120 only, f4 general code for sm_80
only beside an sm_90a TU (docs/compatibility.md §4's gap example). Driver R580 throughout.
"""

import json
from importlib import resources

import jsonschema
import pytest
from conftest import cli, device_only, fixture_path

from fatbin_inspect.compat import runtime
from fatbin_inspect.compat.engine import evaluate
from fatbin_inspect.compat.targets import resolve_targets
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path

GPUS = ("A100", "H100", "RTX 4090", "RTX 5090", "B200", "GB10", "Jetson AGX Orin", "GTX 1080")
# file -> per GPU (in GPUS order): verdict, coverage, specialisation kinds of the set-aside fatbins, gaps
N, J, F = "native", "jit", "fail"
EXPECTED = {
    "f1_full.so": [
        (N, "full", {}, 0),
        (N, "full", {}, 0),
        (N, "full", {}, 0),
        (N, "full", {}, 0),
        (N, "full", {}, 0),
        (N, "full", {}, 0),
        (F, "none", {}, 2),  # desktop sm_80 cubins never run on Tegra; compute_120 PTX cannot reach 8.7
        (F, "none", {}, 2),  # broad code for newer GPUs, CC 6.x targeted nowhere: gaps (guard of (i))
    ],
    "f2_sm90a_only.so": [(F, "none", {"ii": 2}, 0)] + [(N, "full", {}, 0)] + [(F, "none", {"ii": 2}, 0)] * 6,
    "f3_specialised.so": [
        (N, "partial", {"i": 1, "ii": 2, "iii": 1}, 0),  # sm_75 TU replaced by the general sm_80 code
        (N, "partial", {"i": 1, "ii": 1, "iii": 1}, 0),  # the sm_90a TU loads here
        (N, "partial", {"i": 1, "ii": 2, "iii": 1}, 0),
        (N, "partial", {"ii": 2, "iii": 1}, 0),
        (N, "partial", {"i": 2, "ii": 1, "iii": 2}, 0),  # the sm_100f TU is the general code here
        (N, "partial", {"ii": 2, "iii": 1}, 0),
        (F, "none", {"i": 1, "ii": 2}, 2),  # sm_80 and sm_75 code target Orin's generation: gaps
        (F, "none", {"i": 2, "ii": 2}, 1),  # the narrow sm_75 / sm_120 TUs set aside, the broad gen TU a gap
    ],
    "f4_gap.so": [
        (N, "partial", {"ii": 1}, 0),
        (F, "partial", {}, 1),  # general code only for sm_80: it is launched on the H100 and fails
        (N, "partial", {"ii": 1}, 0),
        (F, "none", {"ii": 1}, 1),
        (F, "none", {"ii": 1}, 1),
        (F, "none", {"ii": 1}, 1),
        (F, "none", {"ii": 1}, 1),
        (F, "none", {"i": 1, "ii": 1}, 0),
    ],
}
TARGETS = device_only(resolve_targets(list(GPUS), "580"))


def _report(name, kernels=False):
    return next(inspect_path(fixture_path("units", name), Options(kernels=kernels, probe_small=True)))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_file_verdicts_on_eight_gpus(name):
    r = _report(name)
    assert r.error is None and len(r.fatbins) >= 2
    rt = runtime.for_file(r)
    assert rt is not None and rt.version == "13"
    got = []
    for t in TARGETS:
        v = evaluate(r, t, rt)
        kinds = dict(v.specialised.kinds) if v.specialised else {}
        got.append((v.verdict, v.coverage, kinds, v.gaps.count if v.gaps else 0))
        assert (v.error is None) == (v.verdict != "fail")
        if v.verdict == "fail":
            assert v.error.code == 209
    assert got == EXPECTED[name]


def test_a_gap_names_its_kernels_and_set_aside_kernels_are_those_only_there():
    r = _report("f4_gap.so", kernels=True)
    (h100,) = resolve_targets(["H100"], "580")
    v = evaluate(r, h100)
    assert v.kernels_analysed and v.gaps.kernels == ("gen80_kernel",)
    (a100,) = resolve_targets(["A100"], "580")
    v = evaluate(r, a100)
    assert v.specialised.kernels == ("hopper_kernel",) and v.specialised.archs == (("sm_90a", 1),)


def test_only_for_other_gpus_is_said():
    v = evaluate(_report("f2_sm90a_only.so"), resolve_targets(["A100"], "580")[0])
    assert "only code for sm_90a" in v.reason and v.error.code == 209


def test_without_kernels_no_payload_is_decoded_and_the_output_says_so():
    r = _report("f3_specialised.so")
    assert all(e.kernels is None for e in r.entries)
    res = cli("check", fixture_path("units", "f3_specialised.so"), "--gpu", "H100")
    assert res.code == 0, res.out
    assert "coverage partial: native (sm_90); 3 fatbins are specialised for other GPUs" in res.out
    assert "check --kernels" in res.out
    res = cli("check", fixture_path("units", "f3_specialised.so"), "--gpu", "H100", "--kernels")
    assert "3 kernels exist only in the specialised fatbins" in res.out


def test_check_json_validates_and_carries_coverage():
    schema = json.loads(resources.files("fatbin_inspect").joinpath("schemas/check.schema.json").read_text())
    paths = [fixture_path("units", n) for n in sorted(EXPECTED)]
    gpus = [a for g in GPUS[:5] for a in ("--gpu", g)]
    res = cli("check", *paths, *gpus, "--driver", "580", "--format", "json", "--per-fatbin")
    doc = res.json()
    jsonschema.validate(doc, schema)
    by = {(r["path"].rsplit("/", 1)[1], doc["targets"][r["target"]]["gpu"]): r for r in doc["results"]}
    h100 = by[("f4_gap.so", "NVIDIA H100")]
    assert (h100["verdict"], h100["coverage"], h100["gaps"]["count"]) == ("fail", "partial", 1)
    assert h100["gaps"]["kernels"] is None and h100["kernels_analysed"] is False
    a100 = by[("f3_specialised.so", "NVIDIA A100 80GB PCIe")]
    assert a100["specialised"]["kinds"] == {"i": 1, "ii": 2, "iii": 1}
    assert sum(1 for f in a100["fatbin_verdicts"] if f["specialised"]) == 4
    assert res.code == 1  # f2/f4 fail somewhere


def test_the_same_fatbins_are_counted_by_list_check_and_per_fatbin():
    path = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")  # nvcc 13: a device-link fatbin + the real one
    args = ["--gpu", "H100", "--format", "json"]
    listed = cli(path, *args).json()["results"][0]["fatbins"]
    checked = cli("check", path, *args, "--per-fatbin").json()["results"][0]
    with_kernels = cli("check", path, *args, "--kernels").json()["results"][0]
    assert listed == checked["fatbins"] == with_kernels["fatbins"] == {"native": 1, "jit": 0, "fail": 0}
    assert sum(1 for f in checked["fatbin_verdicts"] if f["ignored"] is None) == 1
    # the gate counts the same fatbins: sm_75/80/90 in the one that counts, not the device-link one
    gate = cli("gate", path, "--require", "sm_100", "--isolated", "--format", "json")
    (f,) = [f for f in gate.json()["findings"] if f["rule_id"] == "FBI002"]
    assert "its only fatbin" in f["message"]
