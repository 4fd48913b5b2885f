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
from conftest import ROOT, fixture_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

yaml = pytest.importorskip("yaml", reason="PyYAML is in the test extra (pip install -e '.[test]')")

SM80 = fixture_path("bin", "t01_exe_sm80")  # sm_80 SASS + compute_80 PTX
SM90A = fixture_path("bin", "t04_exe_sm90a_c90a")
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


class Runner:
    """Just enough of the Actions runner for a composite action: inputs, env, outputs, if:."""

    def __init__(self, tmp_path, inputs):
        self.action = load("action.yml")
        self.inputs = {k: str(v.get("default", "")) for k, v in self.action["inputs"].items()} | inputs
        self.outputs: dict[str, dict[str, str]] = {}
        self.uses: list[tuple[str, dict]] = []
        self.ran: list[str] = []
        self.tmp = tmp_path
        self.summary = tmp_path / "summary.md"
        self.summary.write_text("")

    def value(self, expr):
        expr = expr.strip()
        if expr.startswith("inputs."):
            return self.inputs[expr[len("inputs.") :]]
        if expr == "github.action_path":
            return ROOT
        m = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
        if m:
            return self.outputs.get(m.group(1), {}).get(m.group(2), "")
        m = re.fullmatch(r"hashFiles\((.*)\)", expr)
        if m:
            return "hash" if (self.tmp / self.value(m.group(1))).exists() else ""
        m = re.fullmatch(r"'(.*)'", expr)
        if m:
            return m.group(1)
        raise AssertionError(f"expression not modelled: {expr}")

    def condition(self, text):
        for term in (t.strip() for t in text.split("&&")):
            if term == "always()":
                continue
            m = re.fullmatch(r"(.+?)\s*(==|!=)\s*(.+)", term)
            assert m, term
            equal = self.value(m.group(1)) == self.value(m.group(3))
            if equal != (m.group(2) == "=="):
                return False
        return True

    def interpolate(self, text):
        return EXPR.sub(lambda m: self.value(m.group(1)), str(text))

    def run(self):
        env = dict(os.environ, PYTHONPATH=ROOT, GITHUB_STEP_SUMMARY=str(self.summary), GITHUB_ACTIONS="true")
        env.update(GITHUB_ACTION_PATH=ROOT, GITHUB_WORKSPACE=str(self.tmp), NO_COLOR="1")
        log, code = "", 0
        for i, step in enumerate(self.action["runs"]["steps"]):
            if "if" in step and not self.condition(step["if"]):
                continue
            if "uses" in step:
                self.uses.append((step["uses"], {k: self.interpolate(v) for k, v in step["with"].items()}))
                continue
            assert "${{" not in step["run"], "inputs reach scripts through env only"
            assert step["shell"] == "bash"
            out_file = self.tmp / f"output-{i}"
            out_file.write_text("")
            script = self.tmp / f"step-{i}.sh"
            script.write_text(step["run"])
            step_env = env | {k: self.interpolate(v) for k, v in step.get("env", {}).items()}
            step_env["GITHUB_OUTPUT"] = str(out_file)
            # how the runner runs a bash step: bash --noprofile --norc -eo pipefail {0}
            proc = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=self.tmp,
                env=step_env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            self.ran.append(step["name"])
            log += proc.stdout + proc.stderr
            lines = [ln.split("=", 1) for ln in out_file.read_text().splitlines() if "=" in ln]
            self.outputs[step.get("id", str(i))] = dict(lines)
            if proc.returncode != 0:
                code = proc.returncode
                break
        return code, log


def project(tmp_path, *files):
    for f in files:
        shutil.copyfile(f, tmp_path / os.path.basename(f))
    return tmp_path


def test_action_clean_gate_uploads_sarif_and_writes_the_summary(tmp_path):
    project(tmp_path, SM80)
    r = Runner(
        tmp_path, {"paths": "t01_*", "args": "--require sm_80", "install": "false", "python": sys.executable}
    )
    code, log = r.run()
    assert code == 0, log
    assert r.ran == ["Gate", "Result"]  # install skipped on request
    assert r.outputs["gate"]["exit-code"] == "0"
    sarif = json.loads((tmp_path / "fatbin-inspect.sarif").read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"] == []
    assert r.uses == [
        (
            "github/codeql-action/upload-sarif@v3",
            {"sarif_file": "fatbin-inspect.sarif", "category": "fatbin-inspect"},
        )
    ]
    assert "fatbin-inspect" in r.summary.read_text()


def test_action_findings_annotate_fail_the_step_and_still_upload(tmp_path):
    project(tmp_path, SM80, SM90A)
    r = Runner(
        tmp_path,
        {"paths": "t0*", "args": "--require sm_80 --isolated", "install": "false", "python": sys.executable},
    )
    code, log = r.run()
    assert code == 1 and r.outputs["gate"]["exit-code"] == "1"
    assert "::error" in log and "t04_exe_sm90a_c90a" in log  # the annotation names the file
    results = json.loads((tmp_path / "fatbin-inspect.sarif").read_text())["runs"][0]["results"]
    assert {x["ruleId"] for x in results} == {"FBI001"}
    assert [u for u, _ in r.uses] == ["github/codeql-action/upload-sarif@v3"]
    assert "FBI001" in r.summary.read_text()


def test_action_fail_on_never_and_no_inputs(tmp_path):
    project(tmp_path, SM90A)
    args = {"args": "--require sm_80", "install": "false", "python": sys.executable}
    code, _ = Runner(tmp_path, {"paths": "t04_*", "fail-on": "never", **args}).run()
    assert code == 0
    r = Runner(tmp_path, {"paths": "dist/*.whl", "upload-sarif": "false", **args})
    code, log = r.run()
    assert code == 2 and "no input matches" in log and r.uses == []


def test_action_install_step_installs_this_checkout():
    step = load("action.yml")["runs"]["steps"][0]
    assert step["if"] == "inputs.install == 'true'"
    assert step["env"]["FBI_SOURCE"] == "${{ github.action_path }}" and '"$FBI_SOURCE"' in step["run"]


# --------------------------------------------------------------------------------- pre-commit
def hook(hook_id):
    return next(h for h in load(".pre-commit-hooks.yaml") if h["id"] == hook_id)


def run_hook(h, cwd, filenames, args=()):
    """The hook as pre-commit runs it: entry + args + the staged files its ``files`` regex selects."""
    argv = shlex.split(h["entry"])
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        scripts = tomllib.load(fh)["project"]["scripts"]
    assert h["language"] == "python" and argv[0] in scripts  # pip installs this repository's command
    selected = [f for f in filenames if re.search(h["files"], f)]
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


def test_check_hook_uses_the_project_targets(tmp_path):
    shutil.copyfile(SM80, tmp_path / "libk80.so")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fatbin-inspect]\ntargets = [{ name = "ci", gpu = "A100", driver = "580" }]\n'
    )
    code, out, _ = run_hook(hook("fatbin-inspect-check"), tmp_path, ["libk80.so"])
    assert code == 0 and "NATIVE" in out and "ci: " in out
    code, out, _ = run_hook(hook("fatbin-inspect-check"), tmp_path, ["libk80.so"], ["--gpu", "T4"])
    assert code == 1
