"""Synthesized parsed records (``formats.model``) for tests of the rules over records, no bytes."""

from __future__ import annotations

from collections.abc import Sequence

from fatbin_inspect.formats.model import CubinInfo, Entry, Fatbin, FileReport, Kernel


def E(
    arch: str,
    isa: str | None = None,
    kernels: Sequence[str] = ("k",),
    device_link: bool = False,
    offset: int = 0,
) -> Entry:
    """An entry record: 'sm_90a' is a cubin, 'compute_80' PTX (ISA ``isa``)."""
    kind = "sass" if arch.startswith("sm_") else "ptx"
    num = arch.split("_")[1]
    variant = num[-1] if num[-1] in "af" else ""
    sm = int(num.rstrip("af"))
    cubin = (
        CubinInfo(8, "exec", sm, variant == "a", None, device_link, None, None) if kind == "sass" else None
    )
    code = tuple(int(x) for x in isa.split(".")) if isa else (1, 8)
    return Entry(
        offset=offset,
        kind=kind,
        kind_code=2 if kind == "sass" else 1,
        sm=sm,
        variant=variant,
        compression="none",
        stored_size=1,
        size=1,
        flags=0,
        code_version=code,
        header_size=64,
        payload_offset=offset + 64,
        host="linux",
        debug=False,
        identifier=None,
        options=None,
        cubin=cubin,
        kernels=tuple(Kernel(k) for k in kernels),
    )


def report(*entries: Entry, needs: Sequence[str] = ("libcudart.so.13",)) -> FileReport:
    """A file record "x.so" of one fatbin holding ``entries``, its DT_NEEDED ``needs``."""
    fb = Fatbin(offset=0, size=1, section=".nv_fatbin", entries=tuple(entries))
    return FileReport(path="x.so", format="elf", size=1, fatbins=(fb,), needs=tuple(needs))
