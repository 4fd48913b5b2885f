"""What a file is, from its first bytes (``detect``), and which CPU a host binary is built for
(``machine_of``): by content, never by name."""

from __future__ import annotations

import functools
from collections.abc import Callable

# ELF e_machine and PE/COFF Machine values -> the host CPU architecture a file is built for
_ELF_MACHINES = {3: "x86", 40: "arm", 62: "x86_64", 183: "aarch64", 21: "ppc64", 243: "riscv64"}
_PE_MACHINES = {0x14C: "x86", 0x8664: "x86_64", 0xAA64: "aarch64", 0x1C4: "arm"}


def machine_of(head: bytes) -> str | None:
    """The CPU architecture a host binary is built for, from its header (``head``: its first
    bytes, at least 64, or up to the PE header for PE): ``x86_64``, ``aarch64``, ``ppc64le``, ...;
    None for device-only files (cubins are EM_CUDA), unknown machines and short headers."""
    if head[:4] == b"\x7fELF" and len(head) >= 20:
        return _elf_machine(head)
    if head[:2] == b"MZ" and len(head) >= 64:
        return _pe_machine(head)
    if head[:2] in (b"\x64\x86", b"\x64\xaa"):  # COFF object
        return _PE_MACHINES.get(int.from_bytes(head[:2], "little"))
    return None


def _elf_machine(head: bytes) -> str | None:
    little = head[5:6] != b"\x02"
    name = _ELF_MACHINES.get(int.from_bytes(head[18:20], "little" if little else "big"))
    return name + "le" if name == "ppc64" and little else name


def _pe_machine(head: bytes) -> str | None:
    at = int.from_bytes(head[60:64], "little")
    if head[at : at + 4] == b"PE\0\0" and len(head) >= at + 6:
        return _PE_MACHINES.get(int.from_bytes(head[at + 4 : at + 6], "little"))
    return None


def _is_bzip2(head: bytes) -> bool:
    return head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] == b"1AY&SY"  # block magic (pi)


def _is_coff(head: bytes) -> bool:
    return head[:2] in (b"\x64\x86", b"\x64\xaa") and len(head) >= 20  # COFF .obj: AMD64 / ARM64


_Test = Callable[[bytes], bool]


@functools.cache
def _signatures() -> tuple[
    tuple[tuple[str, bytes | None, _Test], ...], tuple[tuple[tuple[str, _Test], ...], ...]
]:
    """(the signatures, the tests worth trying for each first byte). Made at the
    first ``detect``, not at import: a warm scan, which asks nothing of a file, then imports no
    parser.

    The signatures are (format, the first bytes it can start with or None for any, test of the
    first bytes), in the order they are tried; ELF is told apart first. A scan asks this of every
    file: a text file is tried as tar and PTX only."""
    from fatbin_inspect.formats import ptx
    from fatbin_inspect.formats.fatbin import MAGIC_BYTES

    signatures: tuple[tuple[str, bytes | None, _Test], ...] = (
        ("pe", b"M", lambda h: h[:2] == b"MZ"),
        ("ar", b"!", lambda h: h[:8] in (b"!<arch>\n", b"!<thin>\n")),
        ("zip", b"P", lambda h: h[:4] in (b"PK\x03\x04", b"PK\x05\x06")),
        ("fatbin", MAGIC_BYTES[:1], lambda h: h[:4] == MAGIC_BYTES),
        ("gzip", b"\x1f", lambda h: h[:2] == b"\x1f\x8b"),
        ("bzip2", b"B", _is_bzip2),
        ("tar", None, lambda h: len(h) >= 262 and h[257:262] == b"ustar"),
        ("coff", b"\x64", _is_coff),
        ("ptx", None, ptx.looks_like_ptx),
    )
    by_first = tuple(
        tuple((fmt, test) for fmt, first, test in signatures if first is None or bytes([b]) == first)
        for b in range(256)
    )
    return signatures, by_first


def detect(head: bytes) -> str:
    """Format from the first bytes: elf | cubin | pe | coff | ar | zip | tar | gzip | bzip2 | fatbin |
    ptx | unknown."""
    if head[:4] == b"\x7fELF":
        from fatbin_inspect.formats.cubin import is_cubin

        return "cubin" if is_cubin(head) else "elf"
    if not head:
        return "unknown"
    for fmt, test in _signatures()[1][head[0]]:
        if test(head):
            return fmt
    return "unknown"
