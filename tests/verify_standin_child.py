"""A stand-in for fatbin_inspect.verify.child that speaks the same protocol without a GPU.

The image says what to do: ``OK`` loads, ``FAIL:<n>`` fails with CUresult n, ``FATAL`` answers as a
child without a driver, ``HANG`` never answers, ``CRASH`` dies by SIGSEGV after a line on stderr,
``BREAK`` fails with 700 and quits (a context-breaking error). With CUDA_DISABLE_PTX_JIT=1 an
image starting with ``PTX`` fails with 223.
"""

import os
import signal
import sys
import time

from fatbin_inspect.verify.protocol import read_request, write_reply


def main():
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        req = read_request(inp)
        if req is None:
            return 0
        _head, image = req
        cmd = image.split(b"\0", 1)[0]
        if cmd == b"FATAL":
            write_reply(out, {"fatal": "init", "code": 100, "message": "cuInit returned CUresult 100"})
            return 3
        if cmd == b"HANG":
            time.sleep(3600)
        if cmd == b"CRASH":
            sys.stderr.write("driver exploded\n")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGSEGV)
        if cmd == b"BREAK":
            write_reply(out, {"code": 700, "ms": 0.1, "exiting": True})
            return 0
        code = int(cmd[5:]) if cmd.startswith(b"FAIL:") else 0
        if cmd.startswith(b"PTX") and os.environ.get("CUDA_DISABLE_PTX_JIT") == "1":
            code = 223
        write_reply(
            out, {"code": code, "name": None, "jit": cmd.startswith(b"PTX"), "ms": 0.5, "pid": os.getpid()}
        )


if __name__ == "__main__":
    sys.exit(main())
