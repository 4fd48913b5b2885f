"""The child runner of the hostile-input tests (issues 11 and 23): every command runs in a child
process under an address-space limit (``RLIMIT_AS``) and a wall-clock bound (the subprocess
timeout: a bound, not a speed assertion), and the class tests iterate over the command table
(``cli.main.COMMANDS``) and each command's ``--format`` choices, so a new command or format is
covered by construction.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from conftest import ROOT

MEMORY = 1 << 30
TIMEOUT = 60

# ``run_main(argv, out, err)``: the exit code of cli.main.main on ``argv`` with fd 1/2 written to
# the files ``out`` and ``err`` (put back after); for the children below and other tests' own
CHILD_MAIN = r"""
import os, sys
from fatbin_inspect.cli.main import main

def run_main(argv, out, err):
    sys.stdout.flush(); sys.stderr.flush()
    fo = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    fe = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    keep = os.dup(1), os.dup(2)
    os.dup2(fo, 1); os.dup2(fe, 2)
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    sys.stdout.flush(); sys.stderr.flush()
    os.dup2(keep[0], 1); os.dup2(keep[1], 2)
    for fd in (fo, fe, *keep):
        os.close(fd)
    return code
"""

# Runs each argv of a JSON list through cli.main.main with fd 1/2 redirected to files; prints
# nothing itself. argv strings may hold lone surrogates (non-UTF-8 file names): JSON keeps them.
_CHILD = (
    r"""
import json, os, resource, sys
mem = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
exec(sys.argv[2])
"""
    + CHILD_MAIN
    + r"""
runs, out = json.loads(sys.argv[3]), sys.argv[4]
codes = [run_main(argv, f"{out}.{i}.out", f"{out}.{i}.err") for i, argv in enumerate(runs)]
with open(out + ".codes", "w") as fh:
    json.dump(codes, fh)
"""
)


class Run:
    def __init__(self, code: int, out: bytes, err: bytes):
        self.code, self.out, self.err = code, out, err

    @property
    def stderr(self) -> str:
        return self.err.decode("utf-8", "replace")

    def __repr__(self) -> str:
        return f"Run(code={self.code}, err={self.err[-800:]!r}, out={self.out[:400]!r})"


def run_many(tmp_path, runs, setup: str = "", mem: int = MEMORY, timeout: float = TIMEOUT, env=None):
    """Each argv in ``runs`` through the CLI, in one child under the limits."""
    base = str(tmp_path / f"run{time.monotonic_ns()}")
    e = {**os.environ, "PYTHONPATH": ROOT, "COLUMNS": "200", **(env or {})}
    e.pop("GITHUB_STEP_SUMMARY", None) if "GITHUB_STEP_SUMMARY" not in (env or {}) else None
    argv = [[os.fsdecode(a) for a in r] for r in runs]
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(mem), setup, json.dumps(argv), base],
        capture_output=True,
        timeout=timeout,
        env=e,
        cwd=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]
    with open(base + ".codes") as fh:
        codes = json.load(fh)
    out = []
    for i, code in enumerate(codes):
        with open(f"{base}.{i}.out", "rb") as fo, open(f"{base}.{i}.err", "rb") as fe:
            out.append(Run(code, fo.read(), fe.read()))
    for r in out:
        assert b"Traceback" not in r.err and b"internal error" not in r.err, r
    return out


def run1(tmp_path, *args, **kw) -> Run:
    return run_many(tmp_path, [list(args)], **kw)[0]


def commands():
    """(name, click command) of every command in the table."""
    import click

    from fatbin_inspect.cli.main import COMMANDS, cli

    ctx = click.Context(cli)
    return [(n, cli.get_command(ctx, n)) for n in COMMANDS]


def formats(cmd) -> list[str]:
    for p in cmd.params:
        if p.name == "fmt":
            return list(p.type.choices)
    return []


# what a command needs besides its inputs to do its work (a new command with inputs and -o
# that needs more fails the class tests below until it is added here)
EXTRA = {
    "check": ["--gpu", "H100"],
    "gate": ["--require", "sm_80,sm_90", "--isolated"],
    "scan": ["--no-cache", "-j1"],
    "extract": ["-d", "extracted", "--force"],  # relative: the runs' folder
}


def argv_for(name, cmd, inputs) -> list[str] | None:
    """The argv of ``name`` on ``inputs`` (None: the command reads no input files)."""
    args = [name, *EXTRA.get(name, [])]
    import click

    names = [p.name for p in cmd.params if isinstance(p, click.Argument) and isinstance(p.type, click.Path)]
    if not names:
        return None
    if names == ["old", "new"]:
        return [*args, inputs[0], inputs[-1]]
    return [*args, *inputs]


def every_command_format(inputs, *, extra=None, skip=()):
    """(command, format, argv) for every command that reads input files, with each of its
    ``--format`` choices (``None``: a command without one, run once), on ``inputs``; ``extra``:
    more arguments per command (after ``EXTRA``); ``skip``: commands left out."""
    out = []
    for name, cmd in commands():
        if name in skip:
            continue
        argv = argv_for(name, cmd, [os.fspath(i) for i in inputs])
        if argv is None:
            continue
        argv += (extra or {}).get(name, [])
        for fmt in formats(cmd) or [None]:
            out.append((name, fmt, argv + (["--format", fmt] if fmt else [])))
    return out
