"""Replay every committed crash input in ``tests/regressions/`` (issue 7).

A file ``TARGET__what_broke.bin`` goes through that fuzz target and through the whole inventory;
both must end in a result or an ``InputError``, in a subprocess under a memory limit and a timeout
(several of these inputs once hung the parser for minutes).
"""

import os
import resource
import subprocess
import sys

import fuzz_targets as T
import pytest
from conftest import TESTS

REGRESSIONS = os.path.join(TESTS, "regressions")
FILES = sorted(f for f in os.listdir(REGRESSIONS) if "__" in f)

_REPLAY = """
import sys
sys.path.insert(0, {here!r})
import fuzz_targets as T
from fatbin_inspect.errors import InputError
data = open({path!r}, "rb").read()
for name in ({target!r}, "inventory"):
    try:
        T.TARGETS[name](data)
    except InputError:
        pass
print("ok")
"""


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_every_regression_names_a_target():
    assert FILES
    assert {f.split("__", 1)[0] for f in FILES} <= set(T.TARGETS)


@pytest.mark.parametrize("fname", FILES)
def test_regression_input(fname):
    code = _REPLAY.format(here=TESTS, path=os.path.join(REGRESSIONS, fname), target=fname.split("__", 1)[0])
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, preexec_fn=_limits
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
