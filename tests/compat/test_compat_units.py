"""R-UNIT and R-VARIANT: distributions assembled from the committed fixtures/units libraries.

extdist: a generic extension (sm_80/90/100/120), a Hopper-only one (sm_90a) and an older attention
extension (sm_80 + compute_80), docs/compatibility.md §4's example. vardist: the same library built for
CUDA 12.6 (sm_80/90, libcudart.so.12) and CUDA 13.0 (sm_80/90/100/120, libcudart.so.13).
"""

import json
import zipfile
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from conftest import cli, device_only, fixture_path

from fatbin_inspect.compat import runtime, units
from fatbin_inspect.compat.engine import evaluate
from fatbin_inspect.compat.targets import resolve_targets
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path

EXT = ("ext_generic.so", "ext_hopper.so", "ext_attn.so")
VAR = ("libvar_cuda126.so", "libvar_cuda130.so")


def wheel(tmp_path, name, files):
    path = tmp_path / f"{name}-1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}-1.0.dist-info/METADATA", f"Name: {name}\nVersion: 1.0\n\n")
        for f in files:
            z.write(fixture_path("units", f), f"{name}/{f}")
    return str(path)


def verdicts(files, gpu, driver, rt=None):
    (t,) = device_only(resolve_targets([gpu], driver))
    out = []
    for f in files:
        r = next(inspect_path(fixture_path("units", f), Options(probe_small=True)))
        out.append((r.path, evaluate(r, t, runtime.for_file(r))))
    return units.unit_verdict(out, rt)


@pytest.mark.parametrize(
    "gpu,verdict,coverage,aside",
    [
        ("A100", "native", "partial", {"ext_hopper.so"}),  # the Hopper-only extension is set aside
        ("H100", "jit", "full", set()),  # the old extension is JIT-compiled there if used
        ("RTX 4090", "native", "partial", {"ext_hopper.so"}),
        ("RTX 5090", "jit", "partial", {"ext_hopper.so"}),
        ("B200", "jit", "partial", {"ext_hopper.so"}),
        ("GB10", "jit", "partial", {"ext_hopper.so"}),
        # code for newer GPUs only, but no file targets CC 6.x: the broad generic extension is not
        # specialised (guard of (i)); the Hopper-only and the narrow sm_80 ones are
        ("GTX 1080", "fail", "none", {"ext_hopper.so", "ext_attn.so"}),
    ],
)
def test_unit_sets_aside_files_made_for_other_gpus(gpu, verdict, coverage, aside):
    u = verdicts(EXT, gpu, "580")
    assert (u.verdict, u.coverage) == (verdict, coverage), u.reason
    assert {p.rsplit("/", 1)[1] for p in u.set_aside} == aside


def test_a_unit_where_nothing_loads_fails():
    u = verdicts(("ext_hopper.so", "f2_sm90a_only.so"), "A100", "580")
    assert (u.verdict, u.coverage, u.error.code) == ("fail", "none", 209)


@pytest.mark.parametrize(
    "gpu,driver,rt,verdict,error,picked",
    [
        ("H100", "575", None, "native", None, "libvar_cuda126.so"),  # 13.x needs R580: the 12.x build decides
        ("H100", "575", (13, 0), "fail", 35, "libvar_cuda130.so"),
        ("RTX 5090", "580", None, "native", None, "libvar_cuda130.so"),
        (
            "RTX 5090",
            "580",
            (12, 8),
            "fail",
            209,
            "libvar_cuda126.so",
        ),  # torch 12.8 beside it: no sm_120 build
        ("B200", "580", (13,), "native", None, "libvar_cuda130.so"),
        ("A100", "580", (12, 6), "native", None, "libvar_cuda126.so"),
    ],
)
def test_variant_is_picked_by_the_runtime_else_the_best(gpu, driver, rt, verdict, error, picked):
    u = verdicts(VAR, gpu, driver, rt)
    assert (u.verdict, u.error.code if u.error else None) == (verdict, error), u.reason
    assert [p.rsplit("/", 1)[1] for p in u.variants] == [picked]
    assert len(u.variants_unused) == 1


def test_variant_tokens():
    assert units.variant_of("a/libbitsandbytes_cuda118.so").cuda == (11, 8)
    assert units.variant_of("a/x_cu12.so").cuda == (12,)
    assert units.variant_of("a/libfoo_cuda12x.so").cuda == (12,)
    assert units.variant_of("a/libcudart.so.12") is None and units.variant_of("a/libx.so") is None
    sets = units.variant_sets(["d/lib_cuda126.so", "d/lib_cuda130.so", "d/other.so", "e/lib_cuda126.so"])
    assert sorted(map(len, sets)) == [1, 1, 2]
    assert units.parse_runtime("12.8") == (12, 8) and units.parse_runtime("cu130") == (13, 0)


def test_scan_rows_use_unit_and_variant_verdicts(tmp_path):
    paths = [wheel(tmp_path, "extdist", EXT), wheel(tmp_path, "vardist", VAR)]
    args = ["scan", *paths, "--gpu", "A100", "--gpu", "RTX 5090", "--driver", "580", "--no-cache"]
    res = cli(*args, "--format", "json")
    doc = res.json()
    schema = json.loads(resources.files("fatbin_inspect").joinpath("schemas/scan.schema.json").read_text())
    jsonschema.validate(doc, schema)
    rows = {r["name"]: r for r in doc["coverage"]["rows"]}
    a100, rtx = rows["extdist 1.0"]["verdicts"]
    assert (a100["verdict"], a100["coverage"]) == ("native", "partial")
    assert [p.rsplit("/", 1)[1] for p in a100["set_aside"]] == ["ext_hopper.so"]
    assert rtx["verdict"] == "jit" and rtx["path"].endswith("ext_attn.so")
    files = {c["name"].rsplit("/", 1)[1]: c["verdicts"] for c in rows["extdist 1.0"]["children"]}
    assert files["ext_hopper.so"][0]["verdict"] == "fail"  # each file keeps its own verdict
    var = rows["vardist 1.0"]["verdicts"][1]
    assert var["verdict"] == "native" and var["variants"][0].endswith("libvar_cuda130.so")
    res = cli(*args, "--runtime", "12.8", "--files")
    assert "fail (209" in res.out and "[variant: libvar_cuda126.so]" in res.out
    assert res.code == 1


def test_scan_flags_an_extension_of_another_cuda_major_than_torch(tmp_path):
    site = tmp_path / "site"
    (site / "torch" / "lib").mkdir(parents=True)
    (site / "ext").mkdir()
    units_dir = Path(fixture_path("units"))
    (site / "torch" / "lib" / "libtorch_cuda.so").write_bytes((units_dir / "libvar_cuda130.so").read_bytes())
    (site / "ext" / "_C.so").write_bytes((units_dir / "libvar_cuda126.so").read_bytes())
    res = cli("scan", str(site), "--gpu", "H100", "--driver", "580", "--no-cache")
    assert "CUDA runtime differs from torch's" in res.out
    assert "_C.so needs CUDA 12" in res.out and "torch uses CUDA 13" in res.out
