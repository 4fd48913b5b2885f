"""action.yml and .pre-commit-hooks.yaml: the action's run steps executed as GitHub would (bash, a
fake GITHUB_* environment, ``${{ }}`` expressions evaluated), the hooks' entries run on fixtures."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest
import tomllib
from action_runner import LOCAL, SM80, SM90A, Runner, hook, load, project, sarif_results
from conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

tags_from_path = pytest.importorskip(
    "identify.identify", reason="identify (pre-commit's file types) is in the test extra"
).tags_from_path
UPLOAD = "github/codeql-action/upload-sarif@8aad20d150bbac5944a9f9d289da16a4b0d87c1e"


@pytest.mark.parametrize("shell", ["bash", "dash"])
def test_action_clean_gate_uploads_sarif_and_writes_the_summary(tmp_path, shell):
    project(tmp_path, SM80)
    r = Runner(tmp_path, {"paths": "t01_*", "args": "--require sm_80", **LOCAL}, shell=shell)
    code, log = r.run()
    assert code == 0, log
    assert r.ran == ["Set up fatbin-inspect", "Gate", "Result"]  # no install, no pip cache
    assert r.outputs["gate"]["exit-code"] == "0"
    sarif = json.loads((tmp_path / "fatbin-inspect.sarif").read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"] == []
    assert r.uses == [(UPLOAD, {"sarif_file": "fatbin-inspect.sarif", "category": "fatbin-inspect/gate"})]
    assert "fatbin-inspect" in r.summary.read_text()


def test_action_findings_annotate_fail_the_step_and_still_upload(tmp_path):
    project(tmp_path, SM80, SM90A)
    r = Runner(tmp_path, {"paths": "t0*", "args": "--require sm_80 --isolated", **LOCAL})
    code, log = r.run()
    assert code == 1 and r.outputs["gate"]["exit-code"] == "1"
    assert "::error" in log and "t04_exe_sm90a_c90a" in log  # the annotation names the file
    results = sarif_results(tmp_path / "fatbin-inspect.sarif")
    assert {x["ruleId"] for x in results} == {"FBI001"}
    assert [u for u, _ in r.uses] == [UPLOAD]
    assert "FBI001" in r.summary.read_text()


def test_action_runs_the_gate_once(tmp_path):
    # a python that logs each start of the gate: annotations and SARIF come from one run
    project(tmp_path, SM80, SM90A)
    log_file = tmp_path / "runs.log"
    shim = tmp_path / "py"
    shim.write_text(f'#!/bin/sh\necho "$*" >> "{log_file}"\nexec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    r = Runner(
        tmp_path,
        {"paths": "t0*", "args": "--require sm_80 --isolated", "install": "false", "python": str(shim)},
    )
    code, log = r.run()
    assert code == 1 and "::error" in log
    starts = log_file.read_text().splitlines()
    assert [s for s in starts if " gate " in f" {s} "] and len(
        [s for s in starts if "fatbin_inspect gate" in s]
    ) == 1, starts


@pytest.mark.slow
def test_action_matrix_jobs_get_their_own_category(tmp_path):
    cats = []
    for gpu in ("H100", "RTX 5090"):
        work = tmp_path / gpu.replace(" ", "_")
        work.mkdir()
        project(work, SM80)
        r = Runner(
            work, {"paths": "t01_*", "args": f'--isolated --gpu "{gpu}"', **LOCAL}, matrix={"gpu": gpu}
        )
        code, log = r.run()
        assert r.outputs["gate"]["exit-code"] in ("0", "1"), log
        cats.append(r.uses[0][1]["category"])
    assert cats == ["fatbin-inspect/gate/gpu:H100", "fatbin-inspect/gate/gpu:RTX 5090"]
    r = Runner(
        tmp_path / "H100", {"paths": "t01_*", "args": "--isolated --gpu H100", "category": "mine", **LOCAL}
    )
    r.run()
    assert r.uses[0][1]["category"] == "mine"


def test_action_exit_2_leaves_no_stale_sarif_to_upload(tmp_path):
    project(tmp_path, SM90A)
    stale = tmp_path / "fatbin-inspect.sarif"
    stale.write_text('{"stale": true}')
    r = Runner(tmp_path, {"paths": "t04_*", "args": "--gpu 'No Such GPU 9000'", **LOCAL})
    code, log = r.run()
    assert code == 2 and r.outputs["gate"]["exit-code"] == "2", log
    assert not stale.exists() and r.uses == []
    for bad in ({"args": "--gpu 'RTX 5090"}, {"args": "--format sarif"}, {"paths": "dist/*.whl"}):
        stale.write_text("{}")
        r = Runner(tmp_path, {"paths": "t04_*", "args": "--require sm_80", **LOCAL, **bad})
        code, log = r.run()
        assert code == 2 and "::error title=fatbin-inspect::" in log and r.uses == [], (bad, log)
        assert not stale.exists()


def test_action_fail_on_never(tmp_path):
    project(tmp_path, SM90A)
    code, _ = Runner(
        tmp_path, {"paths": "t04_*", "fail-on": "never", "args": "--require sm_80", **LOCAL}
    ).run()
    assert code == 0


def test_action_pins_what_it_uses_by_commit():
    for step in load("action.yml")["runs"]["steps"]:
        if "uses" in step:
            assert re.fullmatch(r"[\w-]+/[\w/-]+@[0-9a-f]{40}", step["uses"]), step["uses"]


@pytest.mark.slow
def test_action_installs_its_checkout_into_a_venv_on_a_pep_668_python(tmp_path):
    system = "/usr/bin/python3"
    marker = subprocess.run(
        [
            system,
            "-c",
            "import sysconfig,os;print(os.path.exists(os.path.join(sysconfig.get_path('stdlib'),'EXTERNALLY-MANAGED')))",
        ],
        capture_output=True,
        text=True,
    )
    if marker.stdout.strip() != "True":
        pytest.skip("no externally managed (PEP 668) system Python at /usr/bin/python3")
    project(tmp_path, SM80)
    r = Runner(tmp_path, {"paths": "t01_*", "args": "--require sm_80 --isolated", "python": system})
    home = tmp_path / "home"
    home.mkdir()
    code, log = r.run({"PYTHONPATH": "", "HOME": str(home)})
    assert code == 0, log
    assert r.ran == ["Set up fatbin-inspect", "Gate", "Result"]
    py = r.outputs["setup"]["python"]
    assert py.startswith(str(tmp_path / "_temp")) and os.access(py, os.X_OK)
    # pip's downloads go where actions/cache keeps them (the folder itself appears only when pip
    # downloads: here pip may take every wheel from the machine's local file indexes)
    cache_step = next(
        st for st in r.action["runs"]["steps"] if st.get("uses", "").startswith("actions/cache")
    )
    assert cache_step["with"]["path"] == "~/.cache/fatbin-inspect-pip"
    setup = next(st for st in r.action["runs"]["steps"] if st.get("id") == "setup")
    assert 'PIP_CACHE_DIR="$HOME/.cache/fatbin-inspect-pip"' in setup["run"]
    assert r.outputs["gate"]["exit-code"] == "0"


# --------------------------------------------------------------------------------- pre-commit
def run_hook(h, cwd, filenames, args=()):
    """The hook as pre-commit runs it: entry + args + the staged files its ``files`` regex selects."""
    argv = shlex.split(h["entry"])
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        scripts = tomllib.load(fh)["project"]["scripts"]
    assert h["language"] == "python" and argv[0] in scripts  # pip installs this repository's command
    # pre-commit's own file classification (identify): every tag of ``types`` must be present
    selected = [
        f
        for f in filenames
        if re.search(h["files"], f) and set(h.get("types", ["file"])) <= tags_from_path(os.path.join(cwd, f))
    ]
    cmd = [sys.executable, "-m", "fatbin_inspect", *argv[1:], *h.get("args", ()), *args, *selected]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    return proc.returncode, proc.stdout + proc.stderr, selected


def test_gate_hook_on_fixtures_with_the_project_policy(tmp_path):
    shutil.copyfile(SM80, tmp_path / "libk80.so")
    shutil.copyfile(SM90A, tmp_path / "libk90a.so.12")
    (tmp_path / "README.md").write_text("not CUDA")
    (tmp_path / "pyproject.toml").write_text('[tool.fatbin-inspect]\nrequire = ["sm_80"]\n')
    h = hook("fatbin-inspect-gate")
    code, out, selected = run_hook(h, tmp_path, ["libk80.so", "README.md"])
    assert selected == ["libk80.so"] and code == 0, out
    code, out, selected = run_hook(h, tmp_path, ["libk80.so", "libk90a.so.12", "README.md"])
    assert selected == ["libk80.so", "libk90a.so.12"] and code == 1
    assert "libk90a.so.12" in out and "FBI001" in out


def test_hooks_select_extensionless_executables_not_text(tmp_path):
    shutil.copyfile(SM90A, tmp_path / "app")  # the README's first example is such a file
    os.mkdir(tmp_path / "bin")
    shutil.copyfile(SM80, tmp_path / "bin" / "tool")
    for text in ("LICENSE", "Makefile", "bin/run"):
        (tmp_path / text).write_text("#!/bin/sh\necho not CUDA\n")
    (tmp_path / "pyproject.toml").write_text('[tool.fatbin-inspect]\nrequire = ["sm_80"]\n')
    staged = ["app", "bin/tool", "LICENSE", "Makefile", "bin/run", "pyproject.toml"]
    for hook_id in ("fatbin-inspect-gate", "fatbin-inspect-check"):
        code, out, selected = run_hook(
            hook(hook_id), tmp_path, staged, () if "gate" in hook_id else ["--gpu", "A100"]
        )
        assert selected == ["app", "bin/tool"], (hook_id, selected)
        assert code == 1 and "app" in out, out  # sm_90a only: fails the sm_80 policy / the A100
    selected = run_hook(hook("fatbin-inspect-gate"), tmp_path, ["LICENSE", "Makefile", "bin/run"])[2]
    assert selected == []  # pre-commit then skips the hook: a commit of text never meets FBI015


def test_check_hook_without_targets_says_what_to_do(tmp_path):
    shutil.copyfile(SM80, tmp_path / "libk80.so")
    code, out, _ = run_hook(hook("fatbin-inspect-check"), tmp_path, ["libk80.so"])
    assert code == 2 and "--gpu" in out and "--targets" in out and "[tool.fatbin-inspect]" in out, out


def test_check_hook_uses_the_project_targets(tmp_path):
    shutil.copyfile(SM80, tmp_path / "libk80.so")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fatbin-inspect]\ntargets = [{ name = "ci", gpu = "A100", driver = "580" }]\n'
    )
    code, out, _ = run_hook(hook("fatbin-inspect-check"), tmp_path, ["libk80.so"])
    assert code == 0 and "NATIVE" in out and "ci: " in out
    code, out, _ = run_hook(hook("fatbin-inspect-check"), tmp_path, ["libk80.so"], ["--gpu", "T4"])
    assert code == 1
