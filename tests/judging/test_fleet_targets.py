"""``--targets``: doctor JSON reports, fleet TOML and ``[tool.fatbin-inspect] targets`` as targets."""

import json
import shutil
from importlib import resources

import jsonschema
import pytest
from conftest import cli, fixture_path

from fatbin_inspect.errors import UsageError
from fatbin_inspect.judging import fleet

MULTI = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")  # sm_75 sm_80 sm_90 + compute_90, cudart 13


def doctor(tmp_path, file, host, gpus, driver):
    """A ``doctor --format json`` report (the fields ``--targets`` reads, as doctor writes them)."""
    doc = {
        "schema_version": 1,
        "tool": {"name": "fatbin-inspect", "version": "0.1.0"},
        "stack": {
            "gpus": [
                {"index": i, "name": n, "cc": cc, "tegra": False, "uuid": None}
                for i, (n, cc) in enumerate(gpus)
            ],
            "kernel_driver": {"version": driver, "source": "nvml"} if driver else None,
            "user_driver": None,
            "host": host,
        },
    }
    p = tmp_path / file
    p.write_text(json.dumps(doc))
    return str(p)


@pytest.fixture
def nodes(tmp_path):
    h100 = [("NVIDIA H100 80GB HBM3", "9.0")] * 8
    return [
        doctor(tmp_path, "doctor-a.json", "node01", h100, "580.95.05"),
        doctor(tmp_path, "doctor-b.json", "node02", h100, "580.95.05"),
        doctor(tmp_path, "doctor-c.json", "old03", h100, "550.54.14"),
        doctor(tmp_path, "doctor-d.json", "ws", [("NVIDIA GeForce GTX 1080", "6.1")], "580.95.05"),
    ]


def test_doctor_reports_dedup_by_gpu_and_driver_named_by_host(nodes):
    ts = fleet.merge(t for p in nodes for t in fleet.read_targets(p))
    assert [(t.hosts, t.gpu.cc, t.driver.version) for t in ts] == [
        (("node01", "node02"), (9, 0), "580.95.05"),
        (("old03",), (9, 0), "550.54.14"),
        (("ws",), (6, 1), "580.95.05"),
    ]
    assert ts[0].label.startswith("node01, node02: NVIDIA H100 80GB HBM3 (CC 9.0), driver 580.95.05")
    assert not ts[0].driver.assumed


def test_host_falls_back_to_the_file_name_and_gpu_less_reports_warn(tmp_path):
    p = doctor(tmp_path, "doctor-gpu7.json", None, [("NVIDIA A100-SXM4-80GB", "8.0")], None)
    (t,) = fleet.read_targets(p)
    assert t.hosts == ("gpu7",) and t.driver.assumed  # no driver in the report: the newest branch
    warned = []
    assert fleet.read_targets(doctor(tmp_path, "cpu.json", "cpu", [], None), warn=warned.append) == []
    assert "no GPU" in warned[0] and "cpu" in warned[0]


def test_fleet_toml_and_json_lists(tmp_path):
    toml = tmp_path / "fleet.toml"
    toml.write_text(
        '[[targets]]\nname = "orin"\ngpu = "Jetson AGX Orin"\ndriver = "540.4.0"\n\n'
        '[[targets]]\nname = "train"\ngpu = "sm_90"\n'
    )
    orin, train = fleet.read_targets(str(toml), default_driver="570")
    assert orin.gpu.tegra and orin.hosts == ("orin",) and orin.driver.version == "540.4.0"
    assert train.gpu.cc == (9, 0) and train.driver.version == "570"  # --driver fills the gap
    js = tmp_path / "fleet.json"
    js.write_text(json.dumps({"targets": [{"name": "x", "gpu": "A100", "driver": 535}]}))
    (x,) = fleet.read_targets(str(js))
    assert x.driver.branch == 535


@pytest.mark.parametrize(
    "text,needle",
    [
        ('{"stack": ', "offset 0xa: invalid JSON"),
        ("[[targets]]\nname = 1\ngpu = 'A100'", "name: expected a string"),
        ("[[targets]]\ngpu = 'A100'\nhost = 'x'", "unknown key 'host'"),
        ("[[targets]]\nname = 'x'", 'needs gpu = "NAME"'),
        ("[[targets]]\ngpu = 'no such gpu at all'", "targets[0]: --gpu 'no such gpu at all'"),
        ("[[targets]]\ngpu = 'A100'\ndriver = 'x'", "--driver 'x'"),
        ("title = 'no targets'", "no targets ="),
        ("not = toml = at all", "neither a doctor JSON report nor valid TOML"),
        ('{"schema_version": 1}', "not a `doctor --format json` report"),
    ],
)
def test_bad_files_are_one_line_usage_errors_naming_the_file(tmp_path, text, needle):
    p = tmp_path / "t.txt"
    p.write_text(text)
    with pytest.raises(UsageError) as exc:
        fleet.read_targets(str(p))
    assert str(p) in str(exc.value) and needle in str(exc.value)


def test_check_against_a_fleet_is_one_command(nodes):
    res = cli("check", MULTI, *(a for p in nodes for a in ("--targets", p)), "--format", "json")
    doc = res.json()
    assert [t["hosts"] for t in doc["targets"]] == [["node01", "node02"], ["old03"], ["ws"]]
    by_target = {r["target"]: r["verdict"] for r in doc["results"]}
    # cudart 13 needs R580 (old03 fails with 35); the GTX 1080 has no 6.x image (209)
    assert by_target == {0: "native", 1: "fail", 2: "fail"}
    assert res.code == 1 and res.err == ""


def test_gpu_and_targets_combine_and_env_switches_apply(nodes):
    res = cli(
        "check",
        MULTI,
        "--gpu",
        "RTX 5090",
        "--driver",
        "580",
        "--targets",
        nodes[0],
        "--format",
        "json",
        "--env",
        "CUDA_FORCE_PTX_JIT=1",
    )
    doc = res.json()
    assert doc["targets"][0]["cc"] == "12.0" and doc["targets"][0]["hosts"] == []
    assert doc["targets"][1]["hosts"] == ["node01"]
    assert all(t["env"]["CUDA_FORCE_PTX_JIT"] for t in doc["targets"])
    assert {r["verdict"] for r in doc["results"]} == {"jit"}  # cubins ignored, compute_90 PTX


def test_pyproject_targets_for_check_and_gate(nodes, tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    (proj / "fleet").mkdir(parents=True)
    for p in nodes[:2]:
        shutil.copyfile(p, proj / "fleet" / p.rsplit("/", 1)[1])
    (proj / "pyproject.toml").write_text(
        '[tool.fatbin-inspect]\ntargets = [{ name = "ci", gpu = "GTX 1080", driver = "580" }, "fleet/doctor-*.json"]\n'
    )
    monkeypatch.chdir(proj)
    res = cli("check", MULTI, "--format", "json")
    assert [t["hosts"] for t in res.json()["targets"]] == [["ci"], ["node01", "node02"]]
    assert res.code == 1
    res = cli("gate", MULTI, "--format", "json")
    findings = res.json()["findings"]
    assert {(f["rule_id"], f["target"].split(":")[0]) for f in findings} == {("FBI001", "ci")}
    assert res.code == 1
    # the command line wins over the file
    res = cli("gate", MULTI, "--targets", nodes[0], "--format", "json")
    assert res.json()["findings"] == [] and res.code == 0


def test_scan_takes_targets(nodes):
    res = cli("scan", MULTI, "--targets", nodes[2], "--targets", nodes[3], "--format", "json", "--no-cache")
    doc = res.json()
    assert [t["hosts"] for t in doc["targets"]] == [["old03"], ["ws"]]
    assert res.code == 1
    schema = json.loads(resources.files("fatbin_inspect").joinpath("schemas/scan.schema.json").read_text())
    jsonschema.validate(doc, schema)


def test_no_gpu_anywhere_is_a_usage_error(tmp_path):
    p = doctor(tmp_path, "cpu.json", "cpu", [], None)
    res = cli("check", MULTI, "--targets", p)
    assert res.code == 2 and "no GPU in any of the files" in res.err


def test_doctor_json_names_its_host():
    import socket

    res = cli("doctor", "--format", "json", "--no-torch-archs")
    assert res.json()["stack"]["host"] == socket.gethostname()


def _hosts(out):
    return sorted(tuple(t["hosts"]) for t in json.loads(out)["targets"])


EXPECTED_HOSTS = [("node01", "node02"), ("old03",), ("ws",)]


@pytest.mark.parametrize("cmd", ["check", "scan", "gate"])
def test_targets_glob_as_the_shell_expands_it(nodes, cmd):
    """``--targets doctor-*.json`` unquoted: the shell passes four words; every report is a
    target, none is read as an input (issue 22 item 1: only the first was used)."""
    res = cli(cmd, "--targets", *nodes, MULTI, "--format", "json")
    assert res.code in (0, 1), res.err
    if cmd != "gate":
        assert _hosts(res.out) == EXPECTED_HOSTS
    else:
        assert {res.json()["inputs"][0]} == {MULTI}
    assert "without device code" not in res.err


def test_targets_quoted_glob_and_folder(nodes, tmp_path):
    pattern = str(tmp_path / "doctor-*.json")
    for value in (pattern, str(tmp_path)):
        res = cli("check", MULTI, "--targets", value, "--format", "json")
        assert res.code in (0, 1), res.err
        assert _hosts(res.out) == EXPECTED_HOSTS
    res = cli("check", MULTI, "--targets", str(tmp_path / "nope-*.json"))
    assert res.code == 2 and "matches no file" in res.err


def test_a_json_input_after_double_dash_stays_an_input(nodes):
    res = cli("check", "--targets", nodes[0], "--format", "json", "--", nodes[1])
    assert res.code == 0, res.err  # read as a file to check (it has no device code), not as a target
    assert _hosts(res.out) == [("node01",)]


def test_a_toml_entry_and_a_doctor_report_of_one_gpu_and_driver_are_one_target(nodes, tmp_path):
    toml = tmp_path / "fleet.toml"
    toml.write_text('targets = [{name = "node09", gpu = "H100", driver = "580.95.05"}]\n')
    res = cli("check", MULTI, "--targets", nodes[0], "--targets", str(toml), "--format", "json")
    assert res.code in (0, 1), res.err
    (t,) = res.json()["targets"]
    assert t["hosts"] == ["node01", "node09"] and "NVIDIA H100" in t["matched"]


# ---------------------------------------------------------------- a target's env (issue 25 item 7)
JIT_LIB = fixture_path("bin", "t12_lib_sm86_c89.so")  # sm_86 + compute_89: JIT on H100


def fleet_with_env(tmp_path, env='{ CUDA_DISABLE_PTX_JIT = "1" }'):
    toml = tmp_path / "fleet.toml"
    toml.write_text(
        '[[targets]]\nname = "jit-ok"\ngpu = "H100"\ndriver = "580"\n\n'
        f'[[targets]]\nname = "no-jit"\ngpu = "H100"\ndriver = "580"\nenv = {env}\n'
    )
    return str(toml)


@pytest.mark.parametrize(
    "env", ['{ CUDA_DISABLE_PTX_JIT = "1" }', "{ CUDA_DISABLE_JIT = 1 }", '["CUDA_DISABLE_PTX_JIT=1"]']
)
def test_a_target_env_disables_jit_for_that_target_only(tmp_path, env):
    ran = cli("check", JIT_LIB, "--targets", fleet_with_env(tmp_path, env), "--format", "json")
    code, doc = ran.code, ran.json()
    assert [(t["hosts"], t["env"]["CUDA_DISABLE_PTX_JIT"]) for t in doc["targets"]] == [
        (["jit-ok"], False),
        (["no-jit"], True),
    ]
    assert {r["target"]: r["verdict"] for r in doc["results"]} == {0: "jit", 1: "fail"}
    assert code == 1


def test_gate_judges_each_target_with_its_env(tmp_path):
    out = cli("gate", JIT_LIB, "--isolated", "--targets", fleet_with_env(tmp_path), "--format", "json").out
    doc = json.loads(out)
    by_target = {}
    for f in doc["findings"]:
        by_target.setdefault(f["target"], set()).add(f["rule_id"])
    ok, off = (next(k for k in by_target if k.startswith(h + ":")) for h in ("jit-ok", "no-jit"))
    assert "FBI001" in by_target[off] and "FBI001" not in by_target[ok]


def test_env_of_the_command_line_still_applies_to_every_target(tmp_path):
    toml = tmp_path / "fleet.toml"
    toml.write_text(
        '[[targets]]\nname = "a"\ngpu = "H100"\ndriver = "580"\nenv = { CUDA_FORCE_PTX_JIT = "1" }\n'
    )
    out = cli(
        "check", JIT_LIB, "--targets", str(toml), "--env", "CUDA_DISABLE_PTX_JIT=1", "--format", "json"
    ).out
    (t,) = json.loads(out)["targets"]
    assert t["env"] == {"CUDA_FORCE_PTX_JIT": True, "CUDA_DISABLE_PTX_JIT": True}


def test_a_doctor_reports_env_is_its_nodes(tmp_path):
    p = doctor(tmp_path, "doctor-x.json", "x", [("NVIDIA H100 80GB HBM3", "9.0")], "580.95.05")
    doc = json.loads(open(p).read())
    doc["stack"]["env"] = [{"name": "CUDA_DISABLE_PTX_JIT", "value": "1", "effect": "1: no JIT"}]
    open(p, "w").write(json.dumps(doc))
    (t,) = fleet.read_targets(p)
    assert t.disable_ptx_jit and not t.force_ptx_jit


@pytest.mark.parametrize(
    "env,needle",
    [
        ("5", "targets[1]: env: expected a table"),
        ('{ "1BAD" = "1" }', "targets[1]: env: '1BAD' is not an environment variable name"),
        (
            "{ CUDA_DISABLE_PTX_JIT = true }",
            'targets[1]: env.CUDA_DISABLE_PTX_JIT: expected a string such as "1"',
        ),
        ('["CUDA_DISABLE_PTX_JIT"]', 'targets[1]: env[0]: expected "NAME=VALUE"'),
        ("{ CUDA_X = { a = 1 } }", "targets[1]: env.CUDA_X: expected a string"),
    ],
)
def test_a_bad_env_is_a_usage_error_naming_file_and_key(tmp_path, env, needle):
    path = fleet_with_env(tmp_path, env)
    ran = cli("check", JIT_LIB, "--targets", path)
    code, out, err = ran.code, ran.out, ran.err
    assert code == 2 and out == ""
    assert path in err and needle in err and "Traceback" not in err
