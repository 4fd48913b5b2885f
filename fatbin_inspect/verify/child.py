"""The child process: ``python -m fatbin_inspect.verify.child``. Loads each image it is sent with
``cuModuleLoadData`` in the device's primary context, unloads it and replies (see ``protocol``).

Environment switches (``CUDA_DISABLE_PTX_JIT``, ``CUDA_CACHE_DISABLE``) act at ``cuInit``, so the
parent starts one child per environment. After an error that may leave the context unusable (any
code outside the load errors below) the child replies and exits; the parent starts a fresh one.
"""

from __future__ import annotations

import ctypes
import sys
import time
from typing import Any

from fatbin_inspect.verify.protocol import image_jit, read_request, write_reply

# CUresults a failed load returns without harming the context: invalid value, invalid image,
# no binary for GPU, invalid PTX, JIT compiler not found, unsupported PTX version, JIT disabled,
# unsupported device-side sync, insufficient loader version, not found, shared object init failed
LOAD_ERRORS = {1, 200, 209, 218, 221, 222, 223, 225, 227, 500, 303}


def main() -> int:
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    try:
        from fatbin_inspect.system import cudadrv

        drv = cudadrv.bindings()
    except Exception as exc:
        write_reply(out, {"fatal": "cuda-python", "message": str(exc)})
        return 3
    ctx = None
    while True:
        req = read_request(inp)
        if req is None:
            return 0
        head, image = req
        if ctx is None:
            try:
                ctx, fatal = _context(drv, cudadrv, int(head.get("device", 0)))
            except Exception as exc:  # cuda-bindings 13 raises when it cannot find libcuda at all
                ctx, fatal = None, {"fatal": "init", "message": f"no CUDA driver: {exc}"}
            if fatal:
                write_reply(out, fatal)
                return 3
        buf = ctypes.create_string_buffer(image, len(image))
        t0 = time.perf_counter()
        ret = drv.cuModuleLoadData(ctypes.addressof(buf))
        ms = (time.perf_counter() - t0) * 1000.0
        rc = cudadrv.code(ret[0])
        if rc == 0:
            drv.cuModuleUnload(ret[1])
        exiting = rc != 0 and rc not in LOAD_ERRORS
        write_reply(
            out,
            {
                "code": rc,
                "name": getattr(ret[0], "name", None),
                "jit": image_jit(image),
                "ms": round(ms, 3),
                "exiting": exiting,
            },
        )
        if exiting:
            return 0


def _context(drv: Any, cudadrv: Any, device: int) -> tuple[Any, dict[str, Any] | None]:
    """The device's primary context made current, or the fatal reply saying why not."""

    def fatal(what: str, ret: Any) -> dict[str, Any] | None:
        rc = cudadrv.code(ret[0])
        return {"fatal": "init", "code": rc, "message": f"{what} returned CUresult {rc}"} if rc else None

    # cuInit: 100 no device, 34 stub libcuda, 999 unknown (kernel/user driver mismatch), 803, 804
    ret = drv.cuInit(0)
    err = fatal("cuInit", ret)
    if not err:
        ret = drv.cuDeviceGet(device)
        err = fatal(f"cuDeviceGet({device})", ret)
    if not err:
        ret = drv.cuDevicePrimaryCtxRetain(ret[1])
        err = fatal("cuDevicePrimaryCtxRetain", ret)
    if err:
        return None, err
    drv.cuCtxSetCurrent(ret[1])
    return ret[1], None


if __name__ == "__main__":
    sys.exit(main())
