"""One option vocabulary across commands, walked through click: the same names, the same --format
and --fail-on choices, the environment rules, did-you-mean, completion, an Examples block."""

import click
import pytest
from click.shell_completion import ShellComplete
from conftest import cli, fixture_path

from fatbin_inspect.cli.main import COMMANDS
from fatbin_inspect.cli.main import cli as group
from fatbin_inspect.cli.options import FAIL_LEVELS, EnvOption
from fatbin_inspect.render.findings import FORMATS

EXITS_ONE = {"check", "scan", "gate", "diff", "doctor", "verify"}  # commands that can exit 1
FINDINGS = {"check", "gate", "diff"}  # their --format choices are the findings registry's
UI = {"--quiet", "--verbose", "--color", "--no-progress"}


def commands():
    ctx = click.Context(group)
    return {name: group.get_command(ctx, name) for name in COMMANDS}


def options(cmd) -> dict[str, click.Option]:
    return {o: p for p in cmd.params if isinstance(p, click.Option) for o in p.opts}


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
    res = cli(name, "--help")
    assert res.code == 0 and "Examples:" in res.out
    block = res.out.split("Examples:", 1)[1]
    assert f"fatbin-inspect {name}" in block or (name == "list" and "fatbin-inspect " in block)


def test_old_spellings_still_work():
    res = cli("explain", "209", "--format", "text")  # hidden alias of table
    assert res.code == 0 and res.out.startswith("209")
    lib = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")
    res = cli("list", lib, "--no-scan")
    assert res.code == 0 and ".nv_fatbin" in res.out
    assert cli("gate", lib, "--isolated", "--gpu", "H100", "--min-driver", "580").code in (0, 1)


def test_fail_on_never_and_exit_zero_on_check():
    lib = fixture_path("bin", "t12_lib_sm86_c89.so")  # fails on a Jetson
    base = ["check", lib, "--gpu", "Jetson AGX Orin", "--driver", "580"]
    assert cli(*base).code == 1
    assert cli(*base, "--fail-on", "never").code == 0
    assert cli(*base, "--exit-zero", "--format", "sarif").code == 0
    assert cli("check", lib, "--gpu", "H100", "--driver", "580").code == 0  # JIT is a warning
    assert cli("check", lib, "--gpu", "H100", "--driver", "580", "--fail-on", "warning").code == 1


def test_a_shared_variable_applies_only_where_its_value_is_valid():
    lib = fixture_path("bin", "t01_exe_sm80")
    res = cli("scan", lib, "--no-cache", env={"FATBIN_INSPECT_FORMAT": "sarif"})
    assert res.code == 0 and "dist / folder" in res.out and "FATBIN_INSPECT_FORMAT=sarif" in res.err
    res = cli("check", lib, "--gpu", "H100", env={"FATBIN_INSPECT_FORMAT": "sarif"})
    assert res.json()["version"] == "2.1.0"
    res = cli("explain", "209", env={"FATBIN_INSPECT_FORMAT": "table"})
    assert res.code == 0 and res.out.startswith("209")
    res = cli("gpus", env={"FATBIN_INSPECT_FORMAT": "xml"})
    assert res.code == 2 and "FATBIN_INSPECT_FORMAT" in res.err
    res = cli("scan", lib, "--no-cache", env={"FATBIN_INSPECT_SCAN_FORMAT": "sarif"})
    assert res.code == 2 and "FATBIN_INSPECT_SCAN_FORMAT" in res.err and "environment" in res.err
    res = cli("scan", lib, "--no-cache", env={"FATBIN_INSPECT_SCAN_JOBS": "many"})
    assert res.code == 2 and "FATBIN_INSPECT_SCAN_JOBS" in res.err
    res = cli("gpus", "-v", env={"FATBIN_INSPECT_GPUS_CC": "9.0"})
    assert res.code == 0 and "FATBIN_INSPECT_GPUS_CC" in res.err
    assert {line.split()[0] for line in res.out.splitlines()[1:-1]} == {"9.0"}


def test_repeatable_options_read_comma_lists_from_the_environment():
    lib = fixture_path("bin", "t01_exe_sm80")
    doc = cli("check", lib, "--format", "json", env={"FATBIN_INSPECT_GPU": "H100,RTX 5090"}).json()
    assert [t["gpu"] for t in doc["targets"]] == ["NVIDIA H100", "NVIDIA GeForce RTX 5090"]


def test_did_you_mean():
    res = cli("chekc", "x")
    assert res.code == 2 and "did you mean 'check'" in res.err
    res = cli("check", "--formt", "json", fixture_path("bin", "t01_exe_sm80"))
    assert res.code == 2 and "Did you mean" in res.err and "'--format'" in res.err


def test_bare_command_prints_its_help_as_written():
    # the escaping of input text (render/escape.py) must not reach the tool's own help text
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "fatbin_inspect"], capture_output=True, text=True)
    text = res.stdout + res.stderr
    assert res.returncode == 2 and "\\x0a" not in text, text[:200]
    assert text.startswith("Usage: fatbin-inspect") and "\nCommands:\n" in text and "  check " in text


def test_completion_of_commands_options_and_gpu_names():
    comp = ShellComplete(group, {}, "fatbin-inspect", "_FATBIN_INSPECT_COMPLETE")
    assert "check" in [c.value for c in comp.get_completions([], "che")]
    assert "--format" in [c.value for c in comp.get_completions(["check", "x"], "--form")]
    gpus = [c.value for c in comp.get_completions(["check", "x", "--gpu"], "h10")]
    assert "NVIDIA H100 80GB HBM3" in gpus and all("H10" in g.upper() for g in gpus)
    assert "sarif" in [c.value for c in comp.get_completions(["gate", "x", "--format"], "s")]


def test_progress_only_for_tables_and_never_when_asked_not_to(monkeypatch):
    from fatbin_inspect.cli.common import progress_for
    from fatbin_inspect.cli.options import UI
    from fatbin_inspect.render import view

    monkeypatch.setenv("FATBIN_INSPECT_PROGRESS", "1")  # as if stderr were a terminal
    with click.Context(group) as ctx:
        assert progress_for(view("check", "table"), "x").enabled
        assert progress_for(view("gate", "html"), "x").enabled
        assert not progress_for(view("check", "json"), "x").enabled
        assert not progress_for(view("gate", "sarif"), "x").enabled
        ctx.meta[UI] = {"progress": False}
        assert not progress_for(view("check", "table"), "x").enabled
        ctx.meta[UI] = {"quiet": True}
        assert not progress_for(view("check", "table"), "x").enabled


def test_color_option_wins_over_the_environment(monkeypatch):
    lib = fixture_path("bin", "t01_exe_sm80")
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" in cli("list", lib, "--color", "always").out
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" not in cli("list", lib, "--color", "never").out
    assert "\x1b[" in cli("list", lib).out
