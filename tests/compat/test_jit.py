"""R-JIT-COST: what a JIT costs (compat.jit), in check's JSON and table, doctor's JIT cache and
explain; on a corpus library with only PTX for the target, ptx_bytes against cuobjdump -xptx."""

import dataclasses
import glob
import importlib.util
import json
import os
import subprocess
import zipfile
from importlib import resources

import jsonschema
import pytest
from conftest import CORPUS, ROOT, cli, cli_json, fixture_path

import fatbin_inspect as fi
from fatbin_inspect.compat import jit
from fatbin_inspect.compat.explain import explain
from fatbin_inspect.formats import ptx
from fatbin_inspect.formats.model import PtxShape
from fatbin_inspect.system.diagnose import jit_cache

PTX_ONLY = fixture_path("bin", "t03_exe_ptx_only_c80")  # one compute_80 PTX image, no cubin
MIXED = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")  # sm_75/80/90 cubins + compute_90 PTX
AF = fixture_path("bin", "t05_exe_af_targets")  # sm_100f/120f/100a/103f/110f/121a + compute_100f PTX
RAW_PTX = fixture_path("bin", "t15_c90a.ptx")  # a standalone compute_90a .ptx


def ptx_sizes(path, arch):
    return [e.size for r in fi.inspect(path) for e in r.entries if e.kind == "ptx" and e.arch == arch]


def check_json(*args):
    doc = cli_json("check", *args)
    schema = json.loads(resources.files("fatbin_inspect").joinpath("schemas/check.schema.json").read_text())
    jsonschema.validate(doc, schema)
    return doc


def one(path, gpu, env=None):
    (v,) = fi.check(path, gpus=[gpu], env=env)
    return v


def test_ptx_only_fixture_costs_its_one_image():
    v = one(PTX_ONLY, "A100")
    c = jit.cost(v)
    assert v.verdict == "jit" and c is not None
    assert (c.images, c.ptx_bytes) == (1, sum(ptx_sizes(PTX_ONLY, "compute_80")))
    assert c.family == "sm_80" and c.estimate_s > 0 and c.cache_bytes > 0 and c.repeats is None
    assert jit.cost(one(PTX_ONLY, "H100")).family == "sm_90"  # the same PTX, another generation


def test_mixed_fatbin_native_where_a_cubin_fits_jit_above():
    assert jit.cost(one(MIXED, "H100")) is None  # sm_90 cubins: nothing compiled
    c = jit.cost(one(MIXED, "RTX 5090"))  # CC 12.0: only the compute_90 PTX fits
    assert c is not None and c.images == 1 and c.family == "sm_120"
    assert c.ptx_bytes == sum(ptx_sizes(MIXED, "compute_90"))


def test_force_ptx_jit_compiles_what_the_cubins_served():
    c = jit.cost(one(MIXED, "H100", {"CUDA_FORCE_PTX_JIT": "1"}))
    assert c is not None and c.forced and c.images == 1  # the PTX-less fatbin fails, the other JITs
    assert jit.cost(one(MIXED, "A100", {"CUDA_FORCE_PTX_JIT": "1"})) is None  # compute_90 PTX: 209


def test_family_and_arch_specific_ptx():
    # compute_100f JITs for CC 10.3's family only when no cubin fits: sm_103f is there, so native
    assert jit.cost(one(AF, "B300")) is None
    assert one(AF, "B300").verdict == "native"
    a = one(RAW_PTX, "H100")  # compute_90a PTX on CC 9.0: JIT, exactly that arch
    c = jit.cost(a)
    assert a.verdict == "jit" and c is not None and c.ptx_bytes == os.path.getsize(RAW_PTX)
    assert jit.cost(one(RAW_PTX, "B200")) is None  # compute_90a does not JIT for 10.0 (fail)


def test_per_image_model_grows_with_the_ptx():
    for fam in jit.model()["families"]:
        small, big = jit.per_image(10_000, fam), jit.per_image(1_000_000, fam)
        assert 0 < small[0] < big[0] and 0 < small[1] < big[1]
        few = jit.per_image(10_000, fam, _shape(instructions=200, largest=200))
        many = jit.per_image(10_000, fam, _shape(instructions=20_000, largest=20_000))
        split = jit.per_image(10_000, fam, _shape(instructions=20_000, largest=200, entries=100))
        assert 0 < few[0] < split[0] < many[0]  # the same bytes: more instructions, larger functions
    m = jit.model()["measured"]
    assert m["ptxas"].startswith("13.") and m["cpu"] and m["date"] and len(m["libraries"]) >= 6
    assert {"sm_80", "sm_90", "sm_100", "sm_120"} <= set(jit.model()["families"])


def _shape(**counts):
    return PtxShape(**{"bytes": 10_000, "instructions": 0, "entries": 1, "funcs": 0, "largest": 0, **counts})


def _measure_jit():
    spec = importlib.util.spec_from_file_location(
        "measure_jit", os.path.join(ROOT, "scripts", "measure_jit.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_model_is_the_fit_of_the_committed_measurements():
    """data/jit_model.json is what scripts/measure_jit.py --fit makes of tests/data/jit_measurements.csv
    (no ptxas needed), and its leave-one-library-out errors are those of that data."""
    mj = _measure_jit()
    rows = mj.read_csv()
    m = jit.model()
    assert len({r["library"] for r in rows}) >= 6 and len(rows) == m["measured"]["compiles"]
    for key, out, models in (
        ("seconds", "seconds", mj.MODELS),
        ("cubin_bytes", "cache_bytes", mj.CACHE_MODELS),
    ):
        for name, features in models.items():
            assert mj.fit_power(rows, features, key).as_json() == m[out][name], (out, name)
    lolo = m["leave_one_library_out"]
    for name, features in mj.MODELS.items():
        assert mj.leave_one_out(rows, features) == lolo[name], name
    # the measurements are the shapes the package counts: the counts of a row are ptx.shape's fields
    assert set(PtxShape.__dataclass_fields__) <= set(rows[0])


def test_check_counts_the_ptx_it_would_compile(tmp_path):
    """check reads the PTX the driver would compile (judging.ptx_shapes): its counts are those of
    the image extract writes, and the estimate rests on its instructions."""
    v = one(MIXED, "RTX 5090")
    (f,) = jit.jit_fatbins(v)
    cli("extract", MIXED, "--kind", "ptx", "--arch", "compute_90", "-d", tmp_path, "-q", codes=0)
    (written,) = tmp_path.glob("*.ptx")
    assert f.chosen.shape == ptx.shape(written.read_bytes()) and f.chosen.shape.instructions > 10
    c = jit.cost(v)
    seconds, cache_bytes = jit.per_image(f.chosen.size, "sm_120", f.chosen.shape)
    assert c.estimate_s == round(seconds, 3) and c.cache_bytes == int(cache_bytes)
    unread = dataclasses.replace(
        v,
        fatbins=tuple(
            dataclasses.replace(x, chosen=dataclasses.replace(x.chosen, shape=None)) if x.chosen else x
            for x in v.fatbins
        ),
    )
    assert jit.cost(unread).estimate_s == round(jit.per_image(f.chosen.size, "sm_120")[0], 3)  # bytes


def test_ptx_shape_counts_what_the_text_holds():
    """Against a line-by-line count of the nvcc-built standalone PTX: statements that are not
    directives, .entry lines, the statements of each function."""
    text = open(RAW_PTX, "rb").read()
    s = ptx.shape(text)
    lines = [ln.strip() for ln in text.decode().splitlines()]
    body = [ln for ln in lines if ln.endswith(";") and not ln.startswith((".", "//"))]
    assert s.bytes == len(text) and s.entries == sum(".entry " in ln for ln in lines) >= 1
    assert abs(s.instructions - len(body)) <= 0.05 * len(body)
    per_function = [0]
    for ln in lines:  # a function runs from its .entry/.func line to the next one
        if ".entry " in ln or ".func " in ln:
            per_function.append(0)
        per_function[-1] += ln.count(";")
    assert s.largest == max(per_function) and s.funcs == 0 and len(per_function) == 1 + s.entries
    assert ptx.shape(text + b"\0garbage;;;") == s  # up to the NUL


def test_check_json_has_the_jit_object_and_the_cache_env():
    doc = check_json(PTX_ONLY, MIXED, "--gpu", "A100", "--gpu", "H100")
    by = {(os.path.basename(r["path"]), r["target"]): r for r in doc["results"]}
    j = by[("t03_exe_ptx_only_c80", 0)]["jit"]
    assert j["images"] == 1 and j["ptx_bytes"] > 0 and j["estimate_s"] > 0 and j["repeats"] is None
    assert j["summary"].startswith("jit: ")
    assert by[("t02_exe_sm75_sm80_sm90_c90", 1)]["jit"] is None  # native on H100
    off = check_json(PTX_ONLY, "--gpu", "A100", "--env", "CUDA_CACHE_DISABLE=1")["results"][0]["jit"]
    assert off["cache_disabled"] and "CUDA_CACHE_DISABLE" in off["repeats"]
    tiny = check_json(PTX_ONLY, "--gpu", "A100", "--env", "CUDA_CACHE_MAXSIZE=100")["results"][0]["jit"]
    assert tiny["cache_limit"] == 100 and "smaller than" in tiny["repeats"]
    big = check_json(PTX_ONLY, "--gpu", "A100", "--env", "CUDA_CACHE_MAXSIZE=4294967296")["results"][0]
    assert big["jit"]["repeats"] is None


def test_embedded_default_and_cap():
    assert jit.CacheSettings().limit(embedded=True) == 256 << 20
    assert jit.CacheSettings().limit() == 1 << 30
    assert jit.CacheSettings(maxsize=64 << 30).limit() == 4 << 30  # the driver's maximum


def test_bad_cache_size_is_one_line_naming_the_variable():
    res = cli("check", PTX_ONLY, "--gpu", "A100", "--env", "CUDA_CACHE_MAXSIZE=1GB")
    assert res.code == 2
    err = res.err.strip().splitlines()
    assert len(err) == 1 and "CUDA_CACHE_MAXSIZE" in err[0]


def test_table_and_matrix_say_it_in_one_phrase():
    res = cli("check", PTX_ONLY, "--gpu", "A100", "--color", "never")
    assert "jit: " in res.out and "of compilation" in res.out and "of cache" in res.out
    res = cli("check", PTX_ONLY, MIXED, "--gpu", "A100", "--gpu", "H100", "--color", "never")
    assert res.out.count("of compilation") == 2  # t03 on both; t02 is native on both
    res = cli("check", PTX_ONLY, "--gpu", "A100", "--env", "CUDA_CACHE_DISABLE=1", "--color", "never")
    assert "repeated at every start" in " ".join(res.out.split())


def test_phrase_units():
    c = jit.JitCost(ptx_bytes=10, images=3, estimate_s=25.2, cache_bytes=8_000_000, family="sm_90")
    assert jit.phrase(c) == "jit: ~25 s of compilation, 8.0 MB of cache (3 PTX images)"
    assert jit.seconds_text(1900) == "~32 min" and jit.seconds_text(7200) == "~2.0 h"
    assert jit.size_text(1 << 30, binary=True) == "1.0 GiB"


def test_doctor_jit_cache(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    c = jit_cache({"HOME": str(home)}, mounts=str(tmp_path / "none"))
    assert c.path == str(home / ".nv" / "ComputeCache") and c.path_from == "default"
    assert c.writable and c.usable and c.maxsize == 1 << 30 and c.maxsize_from == "driver default"
    assert jit_cache({"HOME": str(home)}, embedded=True).maxsize == 256 << 20
    blocker = tmp_path / "file"
    blocker.write_text("")
    bad = jit_cache({"CUDA_CACHE_PATH": str(blocker / "cache"), "CUDA_CACHE_MAXSIZE": "100"})
    assert not bad.writable and bad.path_from == "CUDA_CACHE_PATH" and bad.maxsize == 100
    assert jit_cache({"HOME": str(home), "CUDA_CACHE_DISABLE": "1"}).disabled
    mounts = tmp_path / "mounts"
    mounts.write_text(f"tmpfs {tmp_path} tmpfs rw 0 0\n/dev/vda / ext4 rw 0 0\n")
    t = jit_cache({"CUDA_CACHE_PATH": str(home)}, mounts=str(mounts))
    assert t.tmpfs and "tmpfs" in t.why
    odd = jit_cache({"HOME": str(home), "CUDA_CACHE_MAXSIZE": "lots"})
    assert odd.maxsize == 1 << 30 and "not a number" in odd.maxsize_from


def test_doctor_reports_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_CACHE_DISABLE", "1")
    monkeypatch.setenv("CUDA_CACHE_PATH", str(tmp_path / "jit"))
    res = cli("doctor", "--no-torch-archs", "--format", "json", "--exit-zero")
    doc = res.json()
    assert doc["jit_cache"]["disabled"] and doc["jit_cache"]["path"] == str(tmp_path / "jit")
    assert "jit-cache" in [w["code"] for w in doc["warnings"]]
    res = cli("doctor", "--no-torch-archs", "--color", "never", "--exit-zero")
    assert "JIT cache" in res.out and "CUDA_CACHE_DISABLE=1" in res.out


@pytest.mark.parametrize(
    "text",
    [
        "TensorFlow was not built with CUDA kernel binaries compatible with compute capability 12.0. "
        "CUDA kernels will be jit-compiled from PTX, which could take 30 minutes or longer.",
        "how large must the JIT cache be?",
        "CUDA_CACHE_MAXSIZE",
    ],
)
def test_explain_points_to_the_numbers(text):
    e = explain(text)
    assert e is not None and e.number is None and "R-JIT-COST" in e.rules
    assert any("jit.estimate_s" in c for c in e.checks) and "CUDA_CACHE_MAXSIZE" in (e.command or "")


def test_explain_of_an_error_still_wins():
    assert explain("209").number == 209
    assert explain("cudaErrorUnsupportedPtxVersion JIT cache").number == 222


# --------------------------------------------------------------------------- corpus: issue 27's check
# cupy-cuda11x's random module: a CUDA 11.8 build with SASS up to sm_90 and compute_90 PTX, so on
# CC 10.0 and 12.0 only its PTX runs. cuobjdump 13.x refuses it (it holds sm_35): the 12.8 one in
# the corpus's triton wheel reads it. (ptxas timings against the estimate: scripts/measure_jit.py
# --validate, never a test.)
CUPY = "cupy/random/_generator_api.cpython-311-x86_64-linux-gnu.so"


def _from_wheel(pattern, member, dest):
    wheels = sorted(glob.glob(os.path.join(CORPUS, pattern)))
    if not wheels:
        pytest.skip(f"{pattern} is not in .cache/corpus (scripts/fetch_corpus.sh)")
    with zipfile.ZipFile(wheels[0]) as z:
        dest.write_bytes(z.read(member))
    return str(dest)


@pytest.fixture(scope="module")
def cupy_lib(tmp_path_factory):
    return _from_wheel("cupy_cuda11x-13.6.0-*.whl", CUPY, tmp_path_factory.mktemp("cupy") / "gen.so")


@pytest.fixture(scope="module")
def cuobjdump_12(tmp_path_factory):
    exe = tmp_path_factory.mktemp("tools") / "cuobjdump"
    _from_wheel("triton-3.3.1-*.whl", "triton/backends/nvidia/bin/cuobjdump", exe)
    exe.chmod(0o755)
    return str(exe)


@pytest.mark.corpus
@pytest.mark.parametrize("gpu,family", [("B200", "sm_100"), ("RTX 5090", "sm_120")])
def test_ptx_bytes_equal_what_cuobjdump_extracts(cupy_lib, cuobjdump_12, tmp_path, gpu, family):
    v = one(cupy_lib, gpu)
    c = jit.cost(v)
    assert v.verdict == "jit" and c is not None and c.family == family
    assert {f.chosen.arch for f in jit.jit_fatbins(v)} == {"compute_90"}
    subprocess.run([cuobjdump_12, "-xptx", "all", cupy_lib], cwd=tmp_path, check=True, capture_output=True)
    extracted = list(tmp_path.glob("*.sm_90.ptx"))  # cuobjdump names compute_90 PTX sm_90
    assert c.images == len(extracted) == 1
    size = sum(p.stat().st_size for p in extracted)
    assert abs(c.ptx_bytes / size - 1) <= 0.01, (c.ptx_bytes, size)
    assert c.estimate_s > 1 and c.cache_bytes > 100_000  # megabytes of PTX: seconds, not zero


# ------------------------------------------------------------------------ gate (FBI021) and scan
def test_gate_max_jit_seconds_is_off_by_default_and_fires_when_set():
    from fatbin_inspect.release.policy import Policy

    quiet = fi.gate([PTX_ONLY], Policy(gpus=("A100",), ptx_counts=True))
    assert "FBI021" not in [f.rule_id for f in quiet.findings]
    strict = fi.gate([PTX_ONLY], Policy(gpus=("A100",), ptx_counts=True, max_jit_seconds=0))
    (hit,) = [f for f in strict.findings if f.rule_id == "FBI021"]
    assert hit.severity == "error" and "max-jit-seconds = 0" in hit.message
    lax = fi.gate([PTX_ONLY], Policy(gpus=("A100",), ptx_counts=True, max_jit_seconds=3600))
    assert "FBI021" not in [f.rule_id for f in lax.findings]


@pytest.mark.parametrize("value", ['"soon"', "true", "-1"])
def test_gate_max_jit_seconds_bad_values(tmp_path, value):
    from fatbin_inspect.errors import UsageError
    from fatbin_inspect.release import policy

    (tmp_path / "pyproject.toml").write_text(f"[tool.fatbin-inspect]\nmax-jit-seconds = {value}\n")
    with pytest.raises(UsageError, match="max-jit-seconds"):
        policy.load(str(tmp_path / "pyproject.toml"), {})


def test_scan_rows_sum_the_jit_of_their_files(tmp_path):
    import shutil

    for name in ("a", "b"):
        shutil.copy(PTX_ONLY, tmp_path / name)
    _result, cov = fi.scan([str(tmp_path)], gpus=["A100"])
    (row,) = cov.rows
    (one_file,) = {c.verdicts[0].jit for c in row.children}  # the same bytes, the same cost
    assert row.verdicts[0].jit.images == 2 == 2 * one_file.images
    assert row.verdicts[0].jit.ptx_bytes == 2 * one_file.ptx_bytes
