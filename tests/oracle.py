"""NVIDIA cuobjdump as a differential oracle, with its documented quirks (CORPUS.md, docs/format.md §4).

Quirks allowed for: PTX is named ``sm_XY``; ``f`` is dropped from ELF names (kept for PTX);
LTO-IR is never listed; only ``.nv_fatbin``/``__nv_relfatbin`` are read (``-all``), never hidden
sections; it refuses any file holding sm_35/sm_37 (13.x); it cannot read PE DLLs on Linux.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter

_NAME = re.compile(r"^(ELF|PTX) file\s+\d+: .*\.(sm_\d+[af]?)\.(?:cubin|ptx)$")
CUOBJDUMP_SECTIONS = {".nv_fatbin", "__nv_relfatbin", None}


def cuobjdump_entries(exe: str, path: str, timeout: int = 600) -> tuple[Counter | None, str]:
    """(Counter of (kind, name)) or (None, reason) when cuobjdump refuses the file."""
    proc = subprocess.run(
        [exe, "-all", "-lelf", "-lptx", path], capture_output=True, text=True, timeout=timeout
    )
    out = Counter()
    for line in proc.stdout.splitlines():
        m = _NAME.match(line.strip())
        if m:
            name = m.group(2)
            if m.group(1) == "ELF" and name.endswith("a") and int(name[3:-1]) < 90:
                # stray EF_CUDA_ACCELERATORS (0x800) in some CUDA 12.4 sm_5x/6x cubins: there are no
                # `a` targets below sm_90 and the fatbin header says plain sm_XY (CORPUS.md)
                name = name[:-1]
            out[("sass" if m.group(1) == "ELF" else "ptx", name)] += 1
    if proc.returncode != 0:  # a fatal error can come after a partial listing: not an answer
        return None, (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return out, ""


def our_entries(report) -> Counter:
    """Our entries, named and filtered the way cuobjdump names and sees them."""
    out = Counter()
    for fb in report.fatbins:
        if fb.section not in CUOBJDUMP_SECTIONS:
            continue
        for e in fb.entries:
            if e.kind == "sass":
                # `a` from the header, or (decoded) from the cubin's .nv.compat, which cuobjdump reads:
                # nvcc 13.5 -enable-tile stores tileiras' sm_100a cubin under a plain sm_100 header
                a = e.variant == "a" or (e.cubin is not None and e.cubin.arch_specific and e.sm >= 90)
                out[("sass", f"sm_{e.sm}{'a' if a else ''}")] += 1
            elif e.kind == "ptx":
                out[("ptx", f"sm_{e.sm}{e.variant}")] += 1
    return out


_FUNC = re.compile(r"^\s*Function (\S+):\s*$")
_RES = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+) CONSTANT\[0\]:(\d+)")


def cuobjdump_resources(exe: str, path: str) -> Counter | None:
    """Counter of (kernel, REG, SHARED, LOCAL, CONSTANT[0]) from ``cuobjdump -res-usage``
    (SASS of ``.nv_fatbin`` only; device functions with no kernel symbol are listed too)."""
    proc = subprocess.run([exe, "-res-usage", path], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return None
    out, name = Counter(), None
    for line in proc.stdout.splitlines():
        m = _FUNC.match(line)
        if m:
            name = m.group(1)
            continue
        r = _RES.search(line)
        if r and name:
            reg, _stack, shared, local, const0 = map(int, r.groups())
            out[(name, reg, shared, local, const0)] += 1
            name = None
    return out
