"""One option vocabulary across commands, walked through click: the same names, the same --format
and --fail-on choices, the environment rules, did-you-mean, completion, an Examples block."""

import json

import click
import pytest
from click.shell_completion import ShellComplete
from click.testing import CliRunner
from conftest import fixture_path

from fatbin_inspect.cli.main import COMMANDS, cli
from fatbin_inspect.cli.options import FAIL_LEVELS, EnvOption
from fatbin_inspect.render.findings import FORMATS

EXITS_ONE = {"check", "scan", "gate", "diff", "doctor", "verify"}  # commands that can exit 1
FINDINGS = {"check", "gate", "diff"}  # their --format choices are the findings registry's
UI = {"--quiet", "--verbose", "--color", "--no-progress"}


def commands():
    ctx = click.Context(cli)
    return {name: cli.get_command(ctx, name) for name in COMMANDS}


def options(cmd) -> dict[str, click.Option]:
    return {o: p for p in cmd.params if isinstance(p, click.Option) for o in p.opts}


def run(args, env=None):
    res = CliRunner().invoke(cli, args, env=env or {}, catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_speaks_the_shared_vocabulary(name):
    cmd = commands()[name]
    opts = options(cmd)
    assert set(opts) >= UI and {"-q", "-v"} <= set(opts), name
    assert tuple(opts["--color"].type.choices) == ("auto", "always", "never")
    assert {"-o", "--output", "--format"} <= set(opts), name  # every command writes a report
    fmt = list(opts["--format"].type.choices)
    assert fmt[0] == "table" and "json" in fmt and "text" not in fmt, (name, fmt)
    if name in FINDINGS:
        assert list(FORMATS) == [f for f in fmt if f in FORMATS] and set(FORMATS) <= set(fmt)
    if name in EXITS_ONE:
        assert {"--fail-on", "--exit-zero"} <= set(opts), name
    if "--fail-on" in opts:
        assert tuple(opts["--fail-on"].type.choices) == FAIL_LEVELS and "--exit-zero" in opts
    if "--gpu" in opts:
        assert opts["--gpu"].multiple and "--driver" in opts, name
        assert opts["--gpu"].name == "gpus" and opts["--driver"].name in ("driver", "min_driver")
    assert "--min-driver" not in opts or opts["--min-driver"] is opts["--driver"]  # only an alias
    assert "--output-dir" not in opts or opts["--output-dir"].opts == ["--output-dir", "-d"]
    assert all(isinstance(p, EnvOption) for p in cmd.params if isinstance(p, click.Option))


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_help_has_examples(name):
    code, out, _ = run([name, "--help"])
    assert code == 0 and "Examples:" in out
    block = out.split("Examples:", 1)[1]
    assert f"fatbin-inspect {name}" in block or (name == "list" and "fatbin-inspect " in block)


def test_old_spellings_still_work():
    code, out, _ = run(["explain", "209", "--format", "text"])  # hidden alias of table
    assert code == 0 and out.startswith("209")
    lib = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")
    code, out, _ = run(["list", lib, "--no-scan"])
    assert code == 0 and ".nv_fatbin" in out
    code, _, _ = run(["gate", lib, "--isolated", "--gpu", "H100", "--min-driver", "580"])
    assert code in (0, 1)


def test_fail_on_never_and_exit_zero_on_check():
    lib = fixture_path("bin", "t12_lib_sm86_c89.so")  # fails on a Jetson
    base = ["check", lib, "--gpu", "Jetson AGX Orin", "--driver", "580"]
    assert run(base)[0] == 1
    assert run([*base, "--fail-on", "never"])[0] == 0
    assert run([*base, "--exit-zero", "--format", "sarif"])[0] == 0
    assert run(["check", lib, "--gpu", "H100", "--driver", "580"])[0] == 0  # JIT is a warning
    assert run(["check", lib, "--gpu", "H100", "--driver", "580", "--fail-on", "warning"])[0] == 1


def test_a_shared_variable_applies_only_where_its_value_is_valid():
    lib = fixture_path("bin", "t01_exe_sm80")
    code, out, err = run(["scan", lib, "--no-cache"], {"FATBIN_INSPECT_FORMAT": "sarif"})
    assert code == 0 and "dist / folder" in out and "FATBIN_INSPECT_FORMAT=sarif" in err
    code, out, _ = run(["check", lib, "--gpu", "H100"], {"FATBIN_INSPECT_FORMAT": "sarif"})
    assert json.loads(out)["version"] == "2.1.0"
    code, out, _ = run(["explain", "209"], {"FATBIN_INSPECT_FORMAT": "table"})
    assert code == 0 and out.startswith("209")
    code, _, err = run(["gpus"], {"FATBIN_INSPECT_FORMAT": "xml"})
    assert code == 2 and "FATBIN_INSPECT_FORMAT" in err
    code, _, err = run(["scan", lib, "--no-cache"], {"FATBIN_INSPECT_SCAN_FORMAT": "sarif"})
    assert code == 2 and "FATBIN_INSPECT_SCAN_FORMAT" in err and "environment" in err
    code, _, err = run(["scan", lib, "--no-cache"], {"FATBIN_INSPECT_SCAN_JOBS": "many"})
    assert code == 2 and "FATBIN_INSPECT_SCAN_JOBS" in err
    code, out, err = run(["gpus", "-v"], {"FATBIN_INSPECT_GPUS_CC": "9.0"})
    assert code == 0 and "FATBIN_INSPECT_GPUS_CC" in err
    assert {line.split()[0] for line in out.splitlines()[1:-1]} == {"9.0"}


def test_repeatable_options_read_comma_lists_from_the_environment():
    lib = fixture_path("bin", "t01_exe_sm80")
    code, out, _ = run(["check", lib, "--format", "json"], {"FATBIN_INSPECT_GPU": "H100,RTX 5090"})
    assert [t["gpu"] for t in json.loads(out)["targets"]] == ["NVIDIA H100", "NVIDIA GeForce RTX 5090"]


def test_did_you_mean():
    code, _, err = run(["chekc", "x"])
    assert code == 2 and "did you mean 'check'" in err
    code, _, err = run(["check", "--formt", "json", fixture_path("bin", "t01_exe_sm80")])
    assert code == 2 and "Did you mean" in err and "'--format'" in err


def test_bare_command_prints_its_help_as_written():
    # the escaping of input text (render/escape.py) must not reach the tool's own help text
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "fatbin_inspect"], capture_output=True, text=True)
    text = res.stdout + res.stderr
    assert res.returncode == 2 and "\\x0a" not in text, text[:200]
    assert text.startswith("Usage: fatbin-inspect") and "\nCommands:\n" in text and "  check " in text


def test_completion_of_commands_options_and_gpu_names():
    comp = ShellComplete(cli, {}, "fatbin-inspect", "_FATBIN_INSPECT_COMPLETE")
    assert "check" in [c.value for c in comp.get_completions([], "che")]
    assert "--format" in [c.value for c in comp.get_completions(["check", "x"], "--form")]
    gpus = [c.value for c in comp.get_completions(["check", "x", "--gpu"], "h10")]
    assert "NVIDIA H100 80GB HBM3" in gpus and all("H10" in g.upper() for g in gpus)
    assert "sarif" in [c.value for c in comp.get_completions(["gate", "x", "--format"], "s")]


def test_progress_only_for_tables_and_never_when_asked_not_to(monkeypatch):
    from fatbin_inspect.cli.common import progress_for
    from fatbin_inspect.cli.options import UI

    monkeypatch.setenv("FATBIN_INSPECT_PROGRESS", "1")  # as if stderr were a terminal
    with click.Context(cli) as ctx:
        assert progress_for("table", "x").enabled
        assert not progress_for("json", "x").enabled and not progress_for("sarif", "x").enabled
        ctx.meta[UI] = {"progress": False}
        assert not progress_for("table", "x").enabled
        ctx.meta[UI] = {"quiet": True}
        assert not progress_for("table", "x").enabled


def test_color_option_wins_over_the_environment(monkeypatch):
    lib = fixture_path("bin", "t01_exe_sm80")
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" in run(["list", lib, "--color", "always"])[1]
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" not in run(["list", lib, "--color", "never"])[1]
    assert "\x1b[" in run(["list", lib])[1]
