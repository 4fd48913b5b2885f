"""The guard of clause (i) (docs/compatibility.md §4): a dropped GPU generation is not "specialised
elsewhere", in the engine and in every command that takes its verdicts from it.

fixtures/units/f5_dropped_gen.so (nvcc 11.8, scripts/build_fixtures.sh): three TUs built for sm_70,
sm_75, sm_80, sm_86 and sm_90 (one kernel each: attn, gemm, norm) and one helper TU built without
``-arch`` (sm_52 + compute_52). On a CC 6.1 GPU only the helper loads (JIT); the other three are
code for newer GPUs in a build that targets CC 6.x nowhere: gaps, so the file fails with partial
coverage. On 7.5, 8.0 and 9.0 every fatbin loads (the helper through the JIT). Driver R580.
"""

import zipfile

import pytest
from conftest import cli, cli_json, fixture_path

import fatbin_inspect as fi
from fatbin_inspect.compat import runtime, units
from fatbin_inspect.compat.engine import evaluate
from fatbin_inspect.compat.targets import resolve_targets
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path
from fatbin_inspect.render.findings.json import document
from fatbin_inspect.verify import compare

F5 = fixture_path("units", "f5_dropped_gen.so")
GPUS = ("GTX 1080 Ti", "RTX 2080", "A100", "H100")
EXPECTED = {  # verdict, coverage, error, gaps
    "GTX 1080 Ti": ("fail", "partial", 209, 3),
    "RTX 2080": ("jit", "full", None, 0),
    "A100": ("jit", "full", None, 0),
    "H100": ("jit", "full", None, 0),
}
BROAD_KERNELS = ["attn_kernel", "gemm_kernel", "norm_kernel"]


def _report(path=F5, kernels=False):
    return next(inspect_path(path, Options(kernels=kernels, probe_small=True)))


def _targets(gpus=GPUS):
    return resolve_targets(list(gpus), "580")


def _code(error):
    """An error as the engine (a number), check's JSON ({code, name}) or scan's JSON ('209 name') gives it."""
    if error is None or isinstance(error, int):
        return error
    return error["code"] if isinstance(error, dict) else int(error.split()[0])


def _wheel(tmp_path, name, files):
    path = tmp_path / f"{name}-1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}-1.0.dist-info/METADATA", f"Name: {name}\nVersion: 1.0\n\n")
        for sub, f in files:
            z.write(fixture_path(sub, f), f"{name}/{f}")
    return str(path)


def test_the_fixture_holds_broad_fatbins_and_one_stray_old_one():
    r = _report()
    assert r.needs == ("libcudart.so.11.0",) and runtime.for_file(r).version == "11"
    archs = [tuple(e.arch for e in fb.entries) for fb in r.fatbins]
    assert archs == [("sm_70", "sm_75", "sm_80", "sm_86", "sm_90")] * 3 + [("sm_52", "compute_52")]


@pytest.mark.parametrize("gpu", GPUS)
def test_engine_verdicts(gpu):
    (t,) = _targets([gpu])
    r = _report(kernels=True)
    v = evaluate(r, t, runtime.for_file(r))
    verdict, coverage, error, gaps = EXPECTED[gpu]
    assert (v.verdict, v.coverage, _code(v.error and v.error.code), v.gaps.count if v.gaps else 0) == (
        verdict,
        coverage,
        error,
        gaps,
    ), v.reason
    assert v.specialised is None  # nothing is set aside on any of them
    if gpu == "GTX 1080 Ti":
        # without the guard these three would be "specialised elsewhere" (kind (i)): broad code for
        # newer GPUs; the stray sm_52 + compute_52 fatbin is the one that loads
        failing = [f for f in v.fatbins if f.verdict == "fail"]
        assert [f.elsewhere for f in failing] == [("i",)] * 3 and not any(f.narrow for f in failing)
        assert [f.verdict for f in v.fatbins] == ["fail", "fail", "fail", "jit"]
        assert list(v.gaps.kernels) == BROAD_KERNELS
        assert any(
            n.startswith("no fatbin holds sm_60…sm_61 or compute_60…compute_61 code") and "3 fatbins" in n
            for n in v.notes
        )
    else:
        assert not any("guard of (i)" in n for n in v.notes)


def test_check_table_names_the_kernels_without_code():
    res = cli("check", F5, "--gpu", "GTX 1080 Ti", "--driver", "580", "--kernels")
    assert res.code == 1, res.err
    assert "FAIL  209" in res.out
    assert "coverage partial: fail; 3 fatbins (3 kernels) have no code for CC 6.1" in res.out
    assert "attn_kernel, gemm_kernel, norm_kernel" in res.out
    assert "fatbins are specialised for other GPUs" not in res.out + res.err
    res = cli("check", F5, "--gpu", "H100", "--driver", "580")
    assert res.code == 0 and "JIT" in res.out and "coverage" not in res.out + res.err


def test_every_command_gives_the_engines_verdict(tmp_path):
    """check (json), list --gpu, scan --gpu (file and distribution), the API and the R-UNIT roll-up
    of a one-file distribution all give the engine's verdict, coverage and error; the gate fails the
    same targets with FBI001 and notes no specialised fatbins."""
    gpus = [a for g in GPUS for a in ("--gpu", g)]
    r = _report()
    rt = runtime.for_file(r)
    targets = _targets()
    engine = [evaluate(r, t, rt) for t in targets]
    want = [(v.verdict, v.coverage, _code(v.error and v.error.code)) for v in engine]
    assert want == [EXPECTED[g][:3] for g in GPUS]

    def of(results):
        ordered = sorted(results, key=lambda d: d["target"])
        return [(d["verdict"], d["coverage"], _code(d["error"])) for d in ordered]

    res = cli("check", F5, *gpus, "--driver", "580", "--kernels", "--format", "json", codes=(0, 1))
    doc = res.json()
    assert of(doc["results"]) == want and res.code == 1
    gaps = doc["results"][0]["gaps"]
    assert (gaps["count"], gaps["kernels"]) == (3, BROAD_KERNELS)
    doc = cli_json("list", F5, *gpus, "--driver", "580")
    assert of(doc["results"]) == want

    api = fi.check(F5, gpus=list(GPUS), driver="580")
    assert [(v.verdict, v.coverage, _code(v.error and v.error.code)) for v in api] == want

    unit = [units.unit_verdict([(r.path, v)]) for v in engine]
    assert [(u.verdict, u.coverage, _code(u.error and u.error.code)) for u in unit] == want

    whl = _wheel(tmp_path, "engine", [("units", "f5_dropped_gen.so")])
    doc = cli_json("scan", whl, *gpus, "--driver", "580", "--no-cache")
    (row,) = doc["coverage"]["rows"]
    (child,) = row["children"]
    assert [(v["verdict"], v["coverage"], _code(v["error"])) for v in child["verdicts"]] == want
    assert [(v["verdict"], v["coverage"], _code(v["error"])) for v in row["verdicts"]] == want
    _, cov = fi.scan(whl, gpus=list(GPUS), driver="580")
    (api_row,) = cov.rows
    assert [(v.verdict, v.coverage) for v in api_row.verdicts] == [w[:2] for w in want]

    res = cli("gate", F5, *gpus, "--driver", "580", "--isolated", "--format", "json", codes=(0, 1))
    doc = res.json()
    by_target = {}
    for f in doc["findings"]:
        by_target.setdefault(f["target"].split(" (CC")[0], set()).add((f["rule_id"], f["severity"]))
    failing = {t.gpu.name for t, v in zip(targets, engine, strict=True) if v.verdict == "fail"}
    assert {t for t, fs in by_target.items() if ("FBI001", "error") in fs} == failing
    assert not any(rule == "FBI014" for fs in by_target.values() for rule, _ in fs)  # nothing specialised
    gate_api = fi.gate(F5, "", gpus=list(GPUS), min_driver="580")  # "": no policy file, as --isolated
    assert document(gate_api, "error") == doc


def test_verify_judges_the_loads_with_the_guard():
    """verify's R-FILE over what the driver did: a CC 6.1 driver loads only the stray fatbin (JIT)."""
    (t,) = _targets(["GTX 1080 Ti"])
    fv = evaluate(_report(), t, stack=False)
    counted = [v for v in fv.fatbins if v.ignored is None]
    seen = [compare.FAIL, compare.FAIL, compare.FAIL, compare.JIT]
    assert compare.observed_verdict(counted, seen) == f"{fv.verdict}/{fv.coverage}" == "fail/partial"
    # the same loads on a GPU whose generation the file targets: failing fatbins set aside
    (h100,) = _targets(["H100"])
    fh = evaluate(_report(), h100, stack=False)
    assert compare.observed_verdict(list(fh.fatbins), [compare.NATIVE] * 3 + [compare.JIT]) == "jit/full"


def _dist(files, gpu="GTX 1080"):
    (t,) = _targets([gpu])
    out = []
    for sub, f in files:
        r = _report(fixture_path(sub, f))
        out.append((r.path, evaluate(r, t, runtime.for_file(r))))
    return units.unit_verdict(out)


def test_unit_guard_asks_whether_the_distribution_targets_the_generation():
    # f1 (sm_80/90/100/120 + compute_120, broad) beside a file with sm_60 code: the distribution
    # targets CC 6.x, so f1 is made for other GPUs and set aside
    u = _dist([("units", "f1_full.so"), ("compat", "case33.fatbin")])
    assert (u.verdict, u.coverage) == ("native", "partial")
    assert [p.rsplit("/", 1)[1] for p in u.set_aside] == ["f1_full.so"]
    # beside a stray sm_52 + compute_52 file instead, CC 6.x is targeted nowhere: f1 is not set aside
    # and fails the distribution (without the guard: jit, partial)
    u = _dist([("units", "f1_full.so"), ("compat", "case35.fatbin")])
    assert (u.verdict, u.coverage, u.error.code, u.set_aside) == ("fail", "partial", 209, ())
    assert u.path.endswith("f1_full.so")
    # the Hopper-only file stays set aside ((ii) has no guard); the broad one does not
    u = _dist([("units", "f1_full.so"), ("units", "f2_sm90a_only.so")])
    assert [p.rsplit("/", 1)[1] for p in u.set_aside] == ["f2_sm90a_only.so"]


def test_scan_rows_take_the_unit_guard(tmp_path):
    mixed = _wheel(tmp_path, "mixed", [("units", "f1_full.so"), ("compat", "case33.fatbin")])
    stray = _wheel(tmp_path, "stray", [("units", "f1_full.so"), ("compat", "case35.fatbin")])
    doc = cli_json("scan", mixed, stray, "--gpu", "GTX 1080", "--driver", "580", "--no-cache")
    rows = {r["name"]: r["verdicts"][0] for r in doc["coverage"]["rows"]}
    assert (rows["mixed 1.0"]["verdict"], rows["mixed 1.0"]["coverage"]) == ("native", "partial")
    assert [p.rsplit("/", 1)[1] for p in rows["mixed 1.0"]["set_aside"]] == ["f1_full.so"]
    assert (rows["stray 1.0"]["verdict"], rows["stray 1.0"]["set_aside"]) == ("fail", [])


def test_gate_sets_aside_by_the_unit_guard(tmp_path):
    stray = _wheel(tmp_path, "stray", [("units", "f1_full.so"), ("compat", "case35.fatbin")])
    mixed = _wheel(tmp_path, "mixed", [("units", "f1_full.so"), ("compat", "case33.fatbin")])
    args = ["--gpu", "GTX 1080", "--driver", "580", "--isolated"]
    doc = cli_json("gate", stray, *args)
    assert any(f["rule_id"] == "FBI001" and f["path"].endswith("f1_full.so") for f in doc["findings"])
    doc = cli_json("gate", mixed, *args)
    assert not any(f["rule_id"] == "FBI001" and f["path"].endswith("f1_full.so") for f in doc["findings"])
