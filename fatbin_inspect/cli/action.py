"""The gate step of the GitHub Action (``action.yml``): ``python -m fatbin_inspect.cli.action``.

Its inputs arrive in the environment (``FBI_PATHS``, ``FBI_REQUIREMENTS``, ``FBI_ARGS``, ``FBI_FAIL_ON``, ``FBI_SARIF``,
``FBI_CATEGORY``, ``FBI_MATRIX``), never pasted into a script, and are split here, not by a shell:

- ``args`` and ``paths`` are split by ``words`` (POSIX shell quoting, ``shlex``): ``--gpu "RTX
  5090"`` is two words; nothing is expanded or run (no ``$(...)``, no variables).
- Each path word holding ``*``, ``?`` or ``[`` is a glob expanded here (``**`` recursive; hidden
  files only when the pattern names them, as in a shell); a glob that matches nothing is an error.
  The paths follow ``--`` on the gate's command line, so a file named ``--help`` stays a file.
- The gate runs once, with ``--format json``; the annotations (stdout), the job summary and the
  SARIF file are rendered from that one report (``render.findings.json.report``).
- The SARIF file is removed first and written only when the gate ran (exit 0 or 1): an exit 2
  leaves none behind to upload. Its code-scanning ``category`` is the input, else
  ``fatbin-inspect/<job>`` plus the matrix values, so the jobs of a matrix do not overwrite each
  other's alerts.

Outputs (``$GITHUB_OUTPUT``): ``exit-code`` (0, 1 or 2), ``sarif-file`` (empty when none was
written) and ``category``. The step itself always succeeds; the action's last step fails the job.
"""

from __future__ import annotations

import glob
import json
import os
import shlex
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING

from fatbin_inspect.errors import UsageError

if TYPE_CHECKING:
    from fatbin_inspect.release.findings import FindingsReport

# options the action sets itself; in ``args`` they would change what the action parses
OWNED = ("--format", "--output", "-o", "--fail-on")


def words(text: str, what: str) -> list[str]:
    """``text`` split as a POSIX shell splits it (quotes, backslashes; no expansion, no
    comments). The one quoting rule of the action, for ``args`` and ``paths`` alike."""
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError as exc:  # "No closing quotation"
        raise UsageError(f"{what}: {exc}: {text!r}") from None


def expand(patterns: list[str]) -> list[str]:
    """Glob words expanded (sorted, each match once); plain words kept as they are."""
    out: list[str] = []
    for p in patterns:
        if not glob.has_magic(p):
            out.append(p)
            continue
        found = sorted(glob.glob(p, recursive=True))
        if not found:
            raise UsageError(f"paths: no input matches {p!r}")
        out += [f for f in found if f not in out]
    return out


def category(given: str, job: str, matrix: str) -> str:
    """The SARIF category: ``given``, else ``fatbin-inspect/<job>[/key:value...]`` from the
    calling job's matrix (``toJson(matrix)``; ``null`` outside a matrix)."""
    if given.strip():
        return given.strip()
    parts = [f"fatbin-inspect/{job or 'job'}"]
    try:
        values = json.loads(matrix) if matrix.strip() else None
    except ValueError:
        values = None
    if isinstance(values, dict):
        parts += [f"{k}:{json.dumps(v) if not isinstance(v, str) else v}" for k, v in sorted(values.items())]
    return "/".join(parts)


def gate_argv(python: str, args: list[str], fail_on: str, report: str, paths: list[str]) -> list[str]:
    for a in args:
        if a.split("=", 1)[0] in OWNED or (a.startswith("-o") and a != "-o" and not a.startswith("--")):
            raise UsageError(
                f"args: {a!r} is set by the action (inputs fail-on and sarif-file choose the level and the report)"
            )
    fixed = ["--fail-on", fail_on, "--format", "json", "-o", report]
    return [python, "-m", "fatbin_inspect", "gate", *args, *fixed, "--", *paths]


def _set_outputs(**values: str) -> None:
    path = os.environ.get("GITHUB_OUTPUT")
    if not path:
        return
    from fatbin_inspect.cli.outfile import append_summary  # the same refusals as the summary

    append_summary(path, "".join(f"{k.replace('_', '-')}={v}\n" for k, v in values.items()))


def run(env: dict[str, str]) -> int:
    """The step; returns the gate's exit code (also written to ``exit-code``)."""
    from fatbin_inspect.render import findings

    sarif = env.get("FBI_SARIF", "fatbin-inspect.sarif")
    cat = category(env.get("FBI_CATEGORY", ""), env.get("GITHUB_JOB", ""), env.get("FBI_MATRIX", ""))
    if sarif and os.path.lexists(sarif) and not os.path.isdir(sarif):
        os.unlink(sarif)  # never upload the report of an earlier run
    fail_on = env.get("FBI_FAIL_ON", "error") or "error"
    try:
        code, rep = _gate(env, fail_on)
    except UsageError as exc:
        print(f"::error title=fatbin-inspect::{findings.module('github').escape_data(str(exc))}", flush=True)
        _set_outputs(exit_code="2", sarif_file="", category=cat)
        return 2
    if rep is None:  # the gate could not give a report: its exit code (2 for a 0/1 without one)
        _set_outputs(exit_code=str(code), sarif_file="", category=cat)
        return code
    written = _publish(rep, env, sarif, fail_on)
    _set_outputs(exit_code=str(code), sarif_file=written, category=cat)
    return code


def _publish(rep: FindingsReport, env: dict[str, str], sarif: str, fail_on: str) -> str:
    """Annotations on stdout, the job summary, the SARIF file; returns the SARIF path written."""
    from fatbin_inspect.cli.outfile import append_summary, write_report
    from fatbin_inspect.render import findings

    annotations, summary = findings.render(rep, "github", fail_on)
    sys.stdout.write(annotations)
    sys.stdout.flush()
    if summary is not None and env.get("GITHUB_STEP_SUMMARY"):
        append_summary(env["GITHUB_STEP_SUMMARY"], summary + "\n")
    if not sarif:
        return ""
    inputs = [*rep.inputs, *(c.path for c in rep.checks)]
    write_report(findings.render(rep, "sarif", fail_on)[0], sarif, inputs)
    return sarif


def _gate(env: dict[str, str], fail_on: str) -> tuple[int, FindingsReport | None]:
    """(exit code, report) of one gate run over the step's inputs; report None when the gate
    ended without one (usage error, crash: code 2 unless it said otherwise)."""
    from fatbin_inspect.render.findings.json import report as read_report

    args = words(env.get("FBI_ARGS", ""), "args")
    paths = expand(words(env.get("FBI_PATHS", ""), "paths"))
    reqs = expand(words(env.get("FBI_REQUIREMENTS", ""), "requirements"))
    args += [w for r in reqs for w in ("-r", r)]  # packages judged from the index (gate -r)
    if not paths and not reqs:
        raise UsageError("paths: no input given")
    with tempfile.TemporaryDirectory(prefix="fatbin-inspect-") as tmp:
        doc_path = os.path.join(tmp, "gate.json")
        argv = gate_argv(env.get("FBI_PYTHON") or sys.executable, args, fail_on, doc_path, paths)
        code = subprocess.run(argv, check=False).returncode  # its errors reach the log as they are
        if code not in (0, 1) or not os.path.isfile(doc_path):
            return (code if code not in (0, 1) else 2), None
        with open(doc_path, encoding="utf-8") as fh:
            return code, read_report(json.load(fh))


def main() -> None:
    try:
        run(dict(os.environ))
    except UsageError as exc:  # an output the runner gave that cannot be written
        print(f"::error title=fatbin-inspect::{exc}", flush=True)
        sys.exit(2)
    sys.exit(0)  # the action's last step fails the job on the exit-code output


if __name__ == "__main__":
    main()
