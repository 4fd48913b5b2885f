"""Just enough of the GitHub Actions runner to run action.yml's steps as GitHub would, and the
hooks of .pre-commit-hooks.yaml, for the tests of the action and the hooks."""

from __future__ import annotations

import json
import os
import pathlib
import re
import resource
import shutil
import subprocess
import sys
from typing import Any

import pytest
from conftest import ROOT, fixture_path

yaml = pytest.importorskip("yaml", reason="PyYAML is in the test extra (pip install -e '.[test]')")
SM80 = fixture_path("bin", "t01_exe_sm80")  # sm_80 SASS + compute_80 PTX
SM90A = fixture_path("bin", "t04_exe_sm90a_c90a")
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load(name: str) -> Any:
    """A YAML file of the repository, parsed."""
    with open(os.path.join(ROOT, name), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


class Runner:
    """Just enough of the Actions runner for a composite action: inputs (defaults with their
    expressions), env, outputs, if:, ``uses`` steps recorded. ``shell``: how a ``bash`` step is
    run; ``dash`` stands in for the oldest bash (3.2 on macOS): a script it runs uses nothing of
    bash 4 (arrays, ``mapfile``, ``${x,,}``)."""

    def __init__(
        self,
        tmp_path: pathlib.Path,
        inputs: dict[str, str],
        job: str = "gate",
        matrix: dict[str, Any] | None = None,
        shell: str = "bash",
        mem: int | None = None,
        timeout: float = 600,
    ) -> None:
        self.action = load("action.yml")
        self.mem, self.timeout = mem, timeout  # RLIMIT_AS of each step's shell (and what it runs)
        self.job, self.matrix, self.shell = job, matrix, shell
        self.inputs = {k: str(v.get("default", "")) for k, v in self.action["inputs"].items()} | inputs
        self.inputs = {k: self.interpolate(v) for k, v in self.inputs.items()}
        self.outputs: dict[str, dict[str, str]] = {}
        self.uses: list[tuple[str, dict]] = []
        self.ran: list[str] = []
        self.tmp = tmp_path
        self.summary = tmp_path / "summary.md"
        self.summary.write_text("")

    def value(self, expr: str) -> str:
        expr = expr.strip()
        if expr.startswith("inputs."):
            return self.inputs[expr[len("inputs.") :]]
        simple = {
            "github.action_path": ROOT,
            "github.action_ref": "",
            "runner.os": "Linux",
            "runner.arch": "X64",
            "toJson(matrix)": "null" if self.matrix is None else json.dumps(self.matrix, indent=2),
        }
        if expr in simple:
            return simple[expr]
        m = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
        if m:
            return self.outputs.get(m.group(1), {}).get(m.group(2), "")
        m = re.fullmatch(r"'(.*)'", expr)
        if m:
            return m.group(1)
        raise AssertionError(f"expression not modelled: {expr}")

    def condition(self, text: str) -> bool:
        for term in (t.strip() for t in text.split("&&")):
            if term == "always()":
                continue
            m = re.fullmatch(r"(.+?)\s*(==|!=)\s*(.+)", term)
            assert m, term
            equal = self.value(m.group(1)) == self.value(m.group(3))
            if equal != (m.group(2) == "=="):
                return False
        return True

    def interpolate(self, text: object) -> str:
        return EXPR.sub(lambda m: self.value(m.group(1)), str(text))

    def _limit(self) -> None:
        resource.setrlimit(resource.RLIMIT_AS, (self.mem, self.mem))

    def run(self, env_extra: dict[str, str] | None = None) -> tuple[int, str]:
        env = dict(os.environ, PYTHONPATH=ROOT, GITHUB_STEP_SUMMARY=str(self.summary), GITHUB_ACTIONS="true")
        env.update(GITHUB_ACTION_PATH=ROOT, GITHUB_WORKSPACE=str(self.tmp), NO_COLOR="1", GITHUB_JOB=self.job)
        env.update(RUNNER_TEMP=str(self.tmp / "_temp"), **(env_extra or {}))
        os.makedirs(env["RUNNER_TEMP"], exist_ok=True)
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
            argv = (
                ["bash", "--noprofile", "--norc", "-eo", "pipefail"]
                if self.shell == "bash"
                else ["dash", "-e"]
            )
            proc = subprocess.run(
                [*argv, str(script)],
                cwd=self.tmp,
                env=step_env,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                preexec_fn=None if self.mem is None else self._limit,
            )
            self.ran.append(step["name"])
            log += proc.stdout + proc.stderr
            lines = [ln.split("=", 1) for ln in out_file.read_text().splitlines() if "=" in ln]
            self.outputs[step.get("id", str(i))] = dict(lines)
            if proc.returncode != 0:
                code = proc.returncode
                break
        return code, log


def project(tmp_path: pathlib.Path, *files: str) -> pathlib.Path:
    """``tmp_path`` with copies of ``files``: the workspace the action runs in."""
    for f in files:
        shutil.copyfile(f, tmp_path / os.path.basename(f))
    return tmp_path


LOCAL = {"install": "false", "python": sys.executable}  # the checkout, without pip


def sarif_results(path: pathlib.Path) -> list[Any]:
    return json.loads(path.read_text())["runs"][0]["results"]


def hook(hook_id: str) -> dict[str, Any]:
    """The hook ``hook_id`` of .pre-commit-hooks.yaml."""
    return next(h for h in load(".pre-commit-hooks.yaml") if h["id"] == hook_id)
