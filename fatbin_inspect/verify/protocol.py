"""Parent <-> child wire format, one request and one reply at a time.

Request on the child's stdin: a JSON line ``{"op": "load", "size": N, "device": D}`` then exactly N
bytes of image (cubin, NUL-terminated PTX or a whole fatbin). Reply on its stdout: one JSON line
``{"code": CUresult, "name": "CUDA_ERROR_...", "jit": true|false|null, "ms": float, "exiting": bool}``;
``exiting``: the child quits after this reply (the error may have broken its context). ``ms`` times
``cuModuleLoadData`` alone (context creation is excluded). A reply with ``"fatal"`` (no cuda-python,
``cuInit`` failed) means the child cannot load anything and exits. The child reads the whole request
before it touches the driver, so a hang never blocks the parent's write.
"""

from __future__ import annotations

import json
from typing import IO, Any

PROTOCOL = 1


def write_request(out: IO[bytes], image: bytes, device: int = 0) -> None:
    head = {"op": "load", "protocol": PROTOCOL, "size": len(image), "device": device}
    out.write(json.dumps(head).encode() + b"\n")
    out.write(image)
    out.flush()


def read_request(inp: IO[bytes]) -> tuple[dict[str, Any], bytes] | None:
    """The next request, or None at end of input."""
    line = inp.readline()
    if not line:
        return None
    head = json.loads(line)
    size = int(head["size"])
    chunks, got = [], 0
    while got < size:
        part = inp.read(size - got)
        if not part:
            raise EOFError(f"request announced {size} bytes, got {got}")
        chunks.append(part)
        got += len(part)
    return head, b"".join(chunks)


def write_reply(out: IO[bytes], reply: dict[str, Any]) -> None:
    out.write(json.dumps(reply).encode() + b"\n")
    out.flush()


def image_jit(image: bytes) -> bool | None:
    """PTX always needs the JIT, an ELF cubin never; for a fatbin only the parent can tell."""
    if image[:4] == b"\x7fELF":
        return False
    if image[:4] == b"\x50\xed\x55\xba":
        return None
    return True
