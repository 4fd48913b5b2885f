"""Shell completion inserts a GPU name with spaces as one argument (issue 25 item 5): click's
completion protocol as each shell's script calls it, and the real bash, zsh and fish completing
a typed line in a terminal (``cli.completion``)."""

import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time

import pytest
from conftest import ROOT


def protocol(shell, words, cword=None, **extra):
    env = dict(os.environ, _FATBIN_INSPECT_COMPLETE=f"{shell}_complete", PYTHONPATH=ROOT, **extra)
    env["COMP_WORDS"] = words
    env["COMP_CWORD"] = str(len(words.split("\n")) - 1) if cword is None else cword
    out = subprocess.run(
        [sys.executable, "-m", "fatbin_inspect"], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout


def test_bash_reply_is_one_escaped_word():
    # the script joins COMP_WORDS with its IFS (a newline)
    assert protocol("bash", "fatbin-inspect\ncheck\n--gpu\nGB1").splitlines() == ["plain,NVIDIA\\ GB10"]
    assert (
        "plain,Jetson\\ Nano\\ /\\ Jetson\\ TX1\\ \\(Tegra\\ X1\\)"
        in protocol("bash", "fatbin-inspect\ngpus\nJetson\\ Nan").splitlines()
    )


def test_bash_reply_inside_an_opened_quote_is_as_given():
    assert protocol("bash", 'fatbin-inspect\ncheck\n--gpu\n"NVIDIA GB1').splitlines() == ["plain,NVIDIA GB10"]
    assert protocol("bash", "fatbin-inspect\ncheck\n--gpu\n'GB1").splitlines() == ["plain,NVIDIA GB10"]


def test_choices_and_paths_keep_their_kind():
    assert "plain,json" in protocol("bash", "fatbin-inspect\ncheck\n--format\njs").splitlines()
    assert protocol("bash", "fatbin-inspect\ncheck\nfix").splitlines() == ["file,fix"]


def test_scripts_are_ours():
    env = dict(os.environ, PYTHONPATH=ROOT)
    for shell, needle in (("bash", "read -r type value"), ("fish", 'string split -m 1 ","')):
        env["_FATBIN_INSPECT_COMPLETE"] = f"{shell}_source"
        src = subprocess.run(
            [sys.executable, "-m", "fatbin_inspect"], env=env, capture_output=True, text=True, check=True
        ).stdout
        assert needle in src


# ----------------------------------------------------------------------------- real shells
def wrapper(tmp_path):
    """``fatbin-inspect`` on PATH: the tool when a shell asks for completions, else it prints
    the arguments it got, one ``ARG<...>`` each."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "fatbin-inspect"
    exe.write_text(
        "#!/bin/sh\n"
        f'if [ -n "$_FATBIN_INSPECT_COMPLETE" ]; then PYTHONPATH={ROOT} exec {sys.executable} -m fatbin_inspect "$@"; fi\n'
        'for a in "$@"; do printf \'ARG<%s>\' "$a"; done; echo\n'
    )
    exe.chmod(0o755)
    return str(bin_dir)


SHELLS = {
    "bash": (
        ["bash", "--norc", "--noprofile", "-i"],
        ['eval "$(_FATBIN_INSPECT_COMPLETE=bash_source fatbin-inspect)"'],
    ),
    "zsh": (
        ["zsh", "-f", "-i"],
        [
            "autoload -Uz compinit && compinit -u",
            'eval "$(_FATBIN_INSPECT_COMPLETE=zsh_source fatbin-inspect)"',
        ],
    ),
    "fish": (["fish", "--no-config", "-i"], ["_FATBIN_INSPECT_COMPLETE=fish_source fatbin-inspect | source"]),
}


def complete_in(shell, tmp_path, typed):
    """The arguments the command got after ``typed`` (with a TAB in it) was entered in an
    interactive ``shell`` on a terminal."""
    argv, setup = SHELLS[shell]
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = dict(
        os.environ, PATH=wrapper(tmp_path) + os.pathsep + os.environ["PATH"], TERM="dumb", HOME=str(home)
    )
    env.pop("_FATBIN_INSPECT_COMPLETE", None)
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover (the child)
        os.chdir(ROOT)
        os.execvpe(argv[0], argv, env)
    out = b""
    try:
        for line in setup:
            os.write(fd, line.encode() + b"\r")
        time.sleep(0.5)  # (a shell may drop what was typed before its first prompt)
        os.write(fd, typed.encode() + b"\r")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not re.search(rb"\nARG<[^\r\n]*\r?\n", out):
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    break
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)
    lines = [line for line in out.decode(errors="replace").splitlines() if line.startswith("ARG<")]
    assert lines, out.decode(errors="replace")[-2000:]
    return lines[-1]


CASES = [
    ("fatbin-inspect check --gpu GB1\t", "ARG<check>ARG<--gpu>ARG<NVIDIA GB10>"),
    ('fatbin-inspect check --gpu "NVIDIA GB1\t', "ARG<check>ARG<--gpu>ARG<NVIDIA GB10>"),
    ("fatbin-inspect check --gpu NVIDIA\\ GB1\t", "ARG<check>ARG<--gpu>ARG<NVIDIA GB10>"),
    ("fatbin-inspect gpus Jetson\\ Nano\t", "ARG<gpus>ARG<Jetson Nano / Jetson TX1 (Tegra X1)>"),
    ("fatbin-inspect check --format js\t", "ARG<check>ARG<--format>ARG<json>"),
]


@pytest.mark.slow
@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_real_shell_inserts_one_argument(shell, tmp_path):
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed (.ci/run installs it)")
    for typed, expected in CASES:
        assert complete_in(shell, tmp_path, typed) == expected, (shell, typed)
