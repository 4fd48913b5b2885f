"""What a person at a terminal or a REPL meets first: every ``--help`` fits 80 columns, a
mistyped value gets a suggestion, and the library API shows in ``dir()`` and ``help()``."""

from __future__ import annotations

import inspect
import pydoc
import re
import shlex
import subprocess
import sys

import pytest
from conftest import ROOT, cli

import fatbin_inspect as fi
from fatbin_inspect.cli.main import COMMANDS
from fatbin_inspect.cli.options import example_lines

API = ("check", "gate", "inspect", "scan", "targets")


@pytest.mark.parametrize("command", ["", *sorted(COMMANDS)])
def test_every_help_line_fits_80_columns(command):
    ran = cli(*([command] if command else []), "--help", env={"COLUMNS": "80"}, codes=0)
    long = [line for line in ran.out.splitlines() if len(line) > 80]
    assert not long, "\n".join(long)
    assert ran.out.strip()


@pytest.mark.parametrize(
    "line",
    [
        "fatbin-inspect gate dist/*.whl --require sm_80,sm_90,sm_100,sm_120 --format sarif -o gate.sarif",
        "fatbin-inspect gate dist/ --gpu H100 --gpu 'RTX 5090' --gpu 'GeForce RTX 4090' --driver 550",
        'fatbin-inspect explain "no kernel image is available for execution on the device"   # words',
        "fatbin-inspect scan                          # this interpreter's site-packages",
    ],
)
def test_a_long_example_wraps_at_a_space_and_reads_back_as_the_same_command(line):
    lines = example_lines(line)
    assert all(len(part) + 4 <= 80 for part in lines)
    command = [part for part in lines if not part.startswith("# ")]
    joined = " ".join(part.removesuffix(" \\").strip() for part in command)
    # the shell reads the wrapped lines as the command that was written, quotes and all
    assert shlex.split(joined) == shlex.split(re.split(r"\s{2,}#", line)[0])
    assert all(part.endswith(" \\") for part in command[:-1])


@pytest.mark.parametrize(
    ("args", "suggested"),
    [
        (["check", "x.so", "--format", "sarf"], "'sarif'"),
        (["check", "x.so", "--fail-on", "warnings"], "'warning'"),
        (["gate", "x.so", "--format", "junt"], "'junit'"),
        (["list", "x.so", "--format", "jsonll"], "'jsonl'"),
        (["scan", "--format", "htm"], "'html'"),
    ],
)
def test_a_mistyped_value_is_given_the_closest_choice(args, suggested):
    ran = cli(*args, codes=2)
    assert f"did you mean {suggested}?" in ran.err, ran.err


def test_a_mistyped_value_from_the_environment_is_given_the_closest_choice_too():
    ran = cli("check", "x.so", env={"FATBIN_INSPECT_FORMAT": "jsn"}, codes=2)
    assert "FATBIN_INSPECT_FORMAT" in ran.err and "did you mean 'json'?" in ran.err, ran.err


def test_gpus_with_a_query_matching_nothing_names_the_closest_gpus():
    """``gpus QUERY`` suggests as ``--gpu`` does."""
    ran = cli("gpus", "GTX 1008", codes=2)
    assert ran.err.startswith("fatbin-inspect: gpus: nothing matches 'GTX 1008'; closest: ")
    assert "GeForce GTX 1080" in ran.err, ran.err


def test_a_value_like_none_of_the_choices_gets_no_guess():
    ran = cli("check", "x.so", "--format", "yaml", codes=2)
    assert "did you mean" not in ran.err and "'sarif'" in ran.err


def test_dir_shows_the_api_before_it_is_loaded():
    code = (
        "import sys, fatbin_inspect as f; print(sorted(dir(f))); print('fatbin_inspect.api' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    names, loaded = out.stdout.splitlines()
    assert all(repr(n) in names for n in (*API, "__version__")), names
    assert loaded == "False"  # import fatbin_inspect stays cheap: dir() loads nothing


def test_help_lists_the_api_with_its_signatures():
    text = pydoc.render_doc(fi, renderer=pydoc.plaintext)
    for name in API:
        fn = getattr(fi, name)
        assert f"{name}{inspect.signature(fn)}".split("(")[0] + "(" in text
        assert (fn.__doc__ or "").split()[0] in text
    assert str(inspect.signature(fi.check)).startswith("(paths")
