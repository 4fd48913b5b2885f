"""Hostile inputs, round three (issue 23), class 8: the Action.

``paths`` and ``args`` are split as a shell user expects (quotes kept, ``"RTX 5090"`` one
argument), ``--`` stands before the paths so a file named like an option (``--help``) is gated as
a file, and globs are expanded by the action itself, never by evaluating the input (a file named
``$(touch pwned)`` runs nothing). The action's run steps execute as GitHub runs them
(action_runner.py's ``Runner``), each step's shell, and the CLI it starts, under an
address-space limit and a timeout (``hostile_runner``'s bounds).
"""

import os
import shutil

from action_runner import LOCAL, SM80, SM90A, Runner, project, sarif_results
from hostile_runner import MEMORY, TIMEOUT

LIMITS = {"mem": MEMORY, "timeout": TIMEOUT}


def test_action_quoted_gpu_names_and_option_like_file_names(tmp_path):
    project(tmp_path, SM80)
    os.mkdir(tmp_path / "my dist")
    shutil.copyfile(SM90A, tmp_path / "my dist" / "--help")  # a file named like an option
    args = "--require sm_80 --isolated --gpu \"RTX 5090\" --gpu 'Jetson AGX Orin'"
    r = Runner(tmp_path, {"paths": 't01_exe_sm80 "my dist"/*', "args": args, **LOCAL}, **LIMITS)
    code, log = r.run()
    assert r.outputs["gate"]["exit-code"] == "1", log
    assert "does not exist" not in log and "Usage:" not in log
    results = sarif_results(tmp_path / "fatbin-inspect.sarif")
    targets = {x.get("properties", {}).get("target") for x in results}
    assert any("RTX 5090" in (t or "") for t in targets) and any("Orin" in (t or "") for t in targets), (
        targets
    )
    uris = {x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for x in results}
    assert "my%20dist/--help" in uris, uris  # the option-like name was gated as a file


def test_action_glob_expansion_is_the_actions_own(tmp_path):
    project(tmp_path, SM80)
    (tmp_path / "wheels" / "a").mkdir(parents=True)
    shutil.copyfile(SM90A, tmp_path / "wheels" / "a" / "lib90a.so")
    (tmp_path / "$(touch pwned)").write_text("")  # a name a shell would run if it evaluated it
    r = Runner(
        tmp_path,
        {"paths": "wheels/**/*.so '$(touch pwned)'", "args": "--require sm_80 --isolated", **LOCAL},
        **LIMITS,
    )
    code, log = r.run()
    assert r.outputs["gate"]["exit-code"] == "1", log
    assert not (tmp_path / "pwned").exists()
    uris = {
        x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for x in sarif_results(tmp_path / "fatbin-inspect.sarif")
    }
    assert uris == {"wheels/a/lib90a.so"}, uris
