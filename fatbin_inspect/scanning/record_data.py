"""Records as plain data for the scan cache: nested JSON lists in, validated frozen records out.

The cache never stores code (no pickles): a record is written as lists of numbers, strings, booleans
and nulls in the field order of ``formats.model``, and read back only if every value has the type
its field declares; anything else (a row written by another version, or by someone else) raises
``ValueError`` and the cache treats the row as a miss. Paths are stored relative to the file the
row belongs to (a member record keeps ``!member``), so a row follows the path a scan was given.
"""

from __future__ import annotations

from typing import Any

from fatbin_inspect.formats.model import CubinInfo, Entry, Fatbin, FileError, FileReport, Kernel, Package

# one letter per field: i int, s str, b bool, n int or None, t str or None
_KERNEL = "stnnnn"  # name demangled registers shared constant0 local (then max_threads)
_CUBIN = "isibnbtt"
_ENTRY = (
    "isiissiiiiitbttb"  # up to relocatable_ptx; then code_version, cubin, kernels, ptx_target, decode_error
)
_CHECK = {
    "i": lambda v: type(v) is int,
    "s": lambda v: type(v) is str,
    "b": lambda v: type(v) is bool,
    "n": lambda v: v is None or type(v) is int,
    "t": lambda v: v is None or type(v) is str,
}


def _check(row: Any, spec: str) -> list:
    if type(row) is not list or len(row) != len(spec):
        raise ValueError("cache row: wrong shape")
    for v, t in zip(row, spec):
        if not _CHECK[t](v):
            raise ValueError("cache row: wrong type")
    return row


# ------------------------------------------------------------------------------------ encode
def _kernel_data(k: Kernel) -> list:
    mt = None if k.max_threads is None else list(k.max_threads)
    return [k.name, k.demangled, k.registers, k.shared, k.constant0, k.local, mt]


def _cubin_data(c: CubinInfo | None) -> list | None:
    if c is None:
        return None
    return [
        c.elf_abi,
        c.elf_type,
        c.sm,
        c.arch_specific,
        c.virtual_sm,
        c.device_link,
        c.toolkit,
        c.command_line,
    ]


def _entry_data(e: Entry) -> list:
    return [
        e.offset,
        e.kind,
        e.kind_code,
        e.sm,
        e.variant,
        e.compression,
        e.stored_size,
        e.size,
        e.flags,
        e.header_size,
        e.payload_offset,
        e.host,
        e.debug,
        e.identifier,
        e.options,
        e.relocatable_ptx,
        list(e.code_version),
        _cubin_data(e.cubin),
        None if e.kernels is None else [_kernel_data(k) for k in e.kernels],
        e.ptx_target,
        e.decode_error,
    ]


def report_data(r: FileReport, base: str) -> list:
    """``r`` as data; ``base``: the path prefix stored as empty (the file the row belongs to)."""
    if not r.path.startswith(base):
        raise ValueError(f"{r.path!r} is not under {base!r}")
    return [
        r.path[len(base) :],
        r.format,
        r.size,
        [
            [fb.offset, fb.size, fb.section, fb.found_by, [_entry_data(e) for e in fb.entries]]
            for fb in r.fatbins
        ],
        None if r.error is None else [r.error.message, r.error.offset],
        list(r.needs),
        list(r.notes),
        r.static_cudart,
        r.relocatable,
        _package_data(r.package),
        r.sha256,
        r.machine,
    ]


def _package_data(p: Package | None) -> list | None:
    if p is None:
        return None
    return [p.kind, p.name, p.version, p.build, p.subdir, p.cuda, p.cuda_source]


# ------------------------------------------------------------------------------------ decode
def _strings(v: Any) -> tuple[str, ...]:
    if type(v) is not list or any(type(s) is not str for s in v):
        raise ValueError("cache row: expected a list of strings")
    return tuple(v)


def _ints(v: Any, n: int) -> tuple[int, ...]:
    if type(v) is not list or len(v) != n or any(type(x) is not int for x in v):
        raise ValueError("cache row: expected integers")
    return tuple(v)


def _kernel(v: Any) -> Kernel:
    if type(v) is not list or len(v) != 7:
        raise ValueError("cache row: wrong kernel")
    _check(v[:6], _KERNEL)
    mt = None if v[6] is None else _ints(v[6], 3)
    return Kernel(v[0], v[1], v[2], v[3], v[4], mt, v[5])


def _entry(v: Any) -> Entry:
    if type(v) is not list or len(v) != 21:
        raise ValueError("cache row: wrong entry")
    _check(v[:16], _ENTRY)
    cubin = None if v[17] is None else CubinInfo(*_check(v[17], _CUBIN))
    kernels = None if v[18] is None else tuple(_kernel(k) for k in _list(v[18]))
    _check(v[19:], "tt")
    return Entry(
        offset=v[0],
        kind=v[1],
        kind_code=v[2],
        sm=v[3],
        variant=v[4],
        compression=v[5],
        stored_size=v[6],
        size=v[7],
        flags=v[8],
        code_version=_ints(v[16], 2),
        header_size=v[9],
        payload_offset=v[10],
        host=v[11],
        debug=v[12],
        identifier=v[13],
        options=v[14],
        relocatable_ptx=v[15],
        cubin=cubin,
        kernels=kernels,
        ptx_target=v[19],
        decode_error=v[20],
    )


def _list(v: Any) -> list:
    if type(v) is not list:
        raise ValueError("cache row: expected a list")
    return v


def _fatbin(v: Any) -> Fatbin:
    _check(v[:4] if type(v) is list and len(v) == 5 else None, "iits")
    return Fatbin(v[0], v[1], v[2], tuple(_entry(e) for e in _list(v[4])), v[3])


def report_from_data(v: Any, base: str) -> FileReport:
    """The record ``report_data`` wrote, its path rebased on ``base``; ``ValueError`` if it is not one."""
    if type(v) is not list or len(v) != 12:
        raise ValueError("cache row: wrong record")
    _check(v[:3], "ssi")
    _check(v[10:], "tt")
    err = None
    if v[4] is not None:
        _check(v[4], "sn")
        err = FileError(v[4][0], v[4][1])
    return FileReport(
        path=base + v[0],
        format=v[1],
        size=v[2],
        fatbins=tuple(_fatbin(fb) for fb in _list(v[3])),
        error=err,
        needs=_strings(v[5]),
        notes=_strings(v[6]),
        static_cudart=_check(v[7:9], "bb")[0],
        relocatable=v[8],
        package=None if v[9] is None else Package(*_check(v[9], "ssssstt")),
        sha256=v[10],
        machine=v[11],
    )
