"""Which CUDA a statically linked cudart belongs to, from its code (R-RT 3, issue 56 item 3).

A static cudart carries no version string. It does carry its table of driver entry points:
at start it asks the driver for each one with ``cuGetProcAddress(name, &fn, cudaVersion, 0,
NULL)``, ``cudaVersion`` being the CUDA release (``13000``) whose ABI of that entry point it
wants, so the newest version it asks for is its own release or one shortly before it (CUDA
13.0's cudart asks up to 13000 in 11 of its 157 requests, 12.4's up to 12030). On x86-64, gcc
compiles each request's last three arguments to ``xor r8d,r8d; xor ecx,ecx; mov $V,%edx``
(either xor first): those ten bytes are matched in the file's code, read as data, never run.
Other CPUs' code is not read (no evidence: the runtime stays unknown there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fatbin_inspect.containers import Layout
    from fatbin_inspect.formats.binio import Blob

# xor r8d,r8d; xor ecx,ecx (in either order); mov $imm32,%edx with the high half zero
_REQUEST = re.compile(rb"(?:\x45\x31\xc0\x31\xc9|\x31\xc9\x45\x31\xc0)\xba(..)\x00\x00", re.S)
MIN_REQUESTS = 8  # fewer matches with a CUDA version are no entry-point table
PIECE = 16 << 20  # code read this much at a time


@dataclass(frozen=True)
class StaticRuntime:
    version: str  # the newest CUDA release asked for: "13.0"
    requests: int  # entry-point requests that name a CUDA release


def _release(v: int) -> bool:
    """A ``cudaVersion`` value: 1000 * major + 10 * minor, CUDA 9.0 to 19.9."""
    return 9000 <= v <= 19990 and v % 10 == 0 and v % 1000 < 100


def static_cudart_version(blob: Blob, layout: Layout, machine: str | None) -> StaticRuntime | None:
    """The newest CUDA release the driver entry-point requests in ``layout``'s code name
    (x86-64 only); None when they are fewer than ``MIN_REQUESTS``."""
    if machine != "x86_64":
        return None
    seen: list[int] = []
    for r in layout.regions:
        if r.scan or r.fatbin_section or r.compressed is not None or not r.name.startswith(".text"):
            continue
        for lo in range(r.start, r.end, PIECE):
            hi = min(r.end, lo + PIECE + 9)
            with blob.window(lo, hi - lo, "code") as code:
                seen += [v for m in _REQUEST.finditer(code) if _release(v := int.from_bytes(m[1], "little"))]
    if len(seen) < MIN_REQUESTS:
        return None
    newest = max(seen)
    return StaticRuntime(f"{newest // 1000}.{newest % 1000 // 10}", len(seen))
