"""Children that load images: a hang (timeout) or a crash costs one result, never the run.

One ``ChildSession`` per environment keeps a child alive across loads (``cuInit`` costs seconds
on a large GPU); after a timeout, a crash or a context-breaking error the next load starts a new one.
The child's stderr goes to a temporary file so that a chatty driver can never fill a pipe.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from fatbin_inspect.errors import DeviceError
from fatbin_inspect.verify.protocol import write_request

CHILD_CMD = (sys.executable, "-m", "fatbin_inspect.verify.child")
LOADED, FAILED, TIMEOUT, CRASH = "loaded", "failed", "timeout", "crash"


@dataclass(frozen=True)
class LoadResult:
    status: str  # loaded | failed | timeout | crash
    code: int | None = None  # CUresult (0 when loaded)
    ms: float | None = None  # time in cuModuleLoadData
    jit: bool | None = None  # the image needed the JIT (PTX); None: the child cannot tell
    detail: str | None = None  # why a timeout/crash ended, the child's last stderr line


class NoDevice(DeviceError):
    """The child cannot load anything: no cuda-python, no driver, no GPU (``verify`` exits 4)."""


class ChildSession:
    def __init__(
        self,
        env: Mapping[str, str],
        timeout: float = 120.0,
        device: int = 0,
        child_cmd: Sequence[str] = CHILD_CMD,
    ):
        self.env, self.timeout, self.device, self.cmd = dict(env), timeout, device, list(child_cmd)
        self.proc: subprocess.Popen[bytes] | None = None
        self.errfile: IO[bytes] | None = None
        self.started = 0  # children started, for the report

    def __enter__(self) -> ChildSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> subprocess.Popen[bytes]:
        self.errfile = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errfile, env=self.env
        )
        self.started += 1
        return self.proc

    def close(self) -> None:
        proc = self.proc
        if proc is not None:
            try:
                _pipe(proc.stdin).close()
            except OSError:
                pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            _pipe(proc.stdout).close()
        if self.errfile is not None:
            self.errfile.close()
        self.proc = self.errfile = None

    def load(self, image: bytes) -> LoadResult:
        proc = self.proc if self.proc is not None else self._start()
        try:
            write_request(_pipe(proc.stdin), image, self.device)
        except (BrokenPipeError, OSError):
            return self._ended(CRASH, "child closed its input before the request was sent")
        line, why = self._read_line(proc, time.monotonic() + self.timeout)
        if line is None:
            return self._ended(
                why or CRASH, f"no reply within {self.timeout:g} s" if why == TIMEOUT else None
            )
        reply = json.loads(line)
        if "fatal" in reply:
            self.close()
            raise NoDevice(reply.get("message") or reply["fatal"])
        code = int(reply["code"])
        if reply.get("exiting"):  # the error may have broken the context: the next load gets a new child
            self.close()
        return LoadResult(LOADED if code == 0 else FAILED, code, reply.get("ms"), reply.get("jit"))

    @staticmethod
    def _read_line(proc: subprocess.Popen[bytes], deadline: float) -> tuple[bytes | None, str | None]:
        fd = _pipe(proc.stdout).fileno()
        buf = b""
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in buf:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return None, TIMEOUT
                part = os.read(fd, 65536)
                if not part:
                    return None, CRASH
                buf += part
        return buf.split(b"\n", 1)[0], None

    def _ended(self, status: str, detail: str | None) -> LoadResult:
        """Kill what is left of the child; a crash reports its exit status and last stderr line."""
        proc, errfile = self.proc, self.errfile
        assert proc is not None and errfile is not None, "a load's child was started"
        if proc.poll() is None:
            proc.kill()
        rc = proc.wait()
        if detail is None:
            detail = f"child died by signal {-rc}" if rc < 0 else f"child exited with status {rc}"
        errfile.seek(0)
        tail = [ln for ln in errfile.read().decode(errors="replace").splitlines() if ln.strip()]
        if tail and status == CRASH:
            detail += f": {tail[-1][:200]}"
        self.close()
        return LoadResult(status, detail=detail)


def _pipe(f: IO[bytes] | None) -> IO[bytes]:
    """A pipe ``_start`` asked for (``Popen`` types them optional)."""
    assert f is not None, "the child's pipes are opened by _start"
    return f


def child_env(base: Mapping[str, str], disable_jit: bool) -> dict[str, str]:
    """The child's environment: the caller's, with the JIT cache off so every JIT is real and timed,
    and with ``CUDA_DISABLE_PTX_JIT=1`` for the run that tells native loading from JIT."""
    env = dict(base)
    env["CUDA_CACHE_DISABLE"] = "1"
    if disable_jit:
        env["CUDA_DISABLE_PTX_JIT"] = "1"
    else:
        env.pop("CUDA_DISABLE_PTX_JIT", None)
    return env
