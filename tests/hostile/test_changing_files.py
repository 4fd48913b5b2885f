"""Hostile inputs, round three (issue 23), class 5: inputs that change while they are read.

A file truncated after it was mapped (the reads past its new end would raise SIGBUS and kill the
process) costs that file one error record saying it shrank, every other result is kept, and the
exit code says a file was unreadable (``--strict``: 3). The truncation is made deterministic: the
child's ``binio.open_blob`` truncates the victim right after mapping it (``formats.mapguard``
absorbs the faults). Every command that reads binaries x every format, each in a child under an
address-space limit and a timeout.
"""

from __future__ import annotations

import shutil

import builders as B
import pytest
from hostile_runner import every_command_format, run_many

# Run in the child before the CLI: the victim shrinks to 100 bytes just after it is mapped.
SHRINK = """
import os
from fatbin_inspect.formats import binio
_open = binio.open_blob
def _shrinking(path):
    blob = _open(path)
    if os.path.basename(path) == "victim.so":
        os.truncate(path, 100)
    return blob
binio.open_blob = _shrinking
import fatbin_inspect.inventory.reader as _r
_r.open_blob = _shrinking
import fatbin_inspect.inventory.decoding as _d
_d.open_blob = _shrinking
import fatbin_inspect.inventory.hidden as _h
_h.open_blob = _shrinking
import fatbin_inspect.scanning.worker as _w
_w.open_blob = _shrinking
"""


def _inputs(tmp_path):
    """A victim large enough to be mapped (over binio.SMALL_FILE) and a good file beside it."""
    d = tmp_path / "in"
    d.mkdir()
    fb = B.fatbin([B.entry(B.KIND_ELF, 80, B.cubin(80, ["_Z1kv"]) + b"\0" * (256 << 10))])
    victim = d / "victim.so"
    victim.write_bytes(B.host_elf([(".nv_fatbin", fb)]))
    good = d / "good.so"
    good.write_bytes(B.host_elf([(".nv_fatbin", B.sample_fatbin())]))
    return d, victim, good


@pytest.mark.slow
def test_a_file_that_shrinks_while_read_costs_that_file_only(tmp_path):
    d, victim, good = _inputs(tmp_path)
    pristine = victim.read_bytes()
    runs, keys = [], []
    for cmd, fmt, argv in every_command_format(
        [victim, good], extra={"scan": ["--strict"], "list": ["--strict"]}, skip=("diff", "verify", "extract")
    ):
        runs.append(argv)
        keys.append((cmd, fmt))
    results = []
    for argv in runs:  # the victim is restored before each run: each truncates it again
        victim.write_bytes(pristine)
        results += run_many(tmp_path, [argv], setup=SHRINK, mem=1 << 30, timeout=120)
    for (cmd, fmt), r in zip(keys, results):
        text = r.out.decode("utf-8", "replace") + r.stderr
        # an error record for the victim: it shrank under the mapping, or (a second open) its
        # section table now lies past its end
        assert "shrank" in text or ("victim.so" in text and "file ends first" in text), (cmd, fmt, r)
        if cmd != "scan" or fmt in ("json", "jsonl"):  # scan's tables count files per folder
            assert "good.so" in text, (cmd, fmt, r)  # the other file's results are kept
        # the answer is incomplete, and says so: --strict 3, check 2, gate 1 (an unread file fails it)
        assert r.code in ((1, 2, 3) if cmd == "gate" else (2, 3)), (cmd, fmt, r)
    shutil.rmtree(d)
