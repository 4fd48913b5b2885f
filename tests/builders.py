"""Synthesize fatbin, cubin, host ELF, ar and zip bytes for edge cases, no toolchain needed.

The layouts follow docs/format.md (§2 fatbin/entry headers, §3 cubin). Every builder returns bytes;
tests write them to ``tmp_path`` when a file is needed.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Iterable, Sequence

FAT_MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF, KIND_LTO, KIND_RELOC_PTX = 1, 2, 8, 0x40
F_64, F_DEBUG, F_LINUX, F_MAC, F_WINDOWS = 0x1, 0x2, 0x10, 0x20, 0x40
F_LZ4, F_ZSTD, F_LTO, F_A, F_F = 0x2000, 0x8000, 0x10000, 0x100000, 0x200000


def align(n: int, a: int = 8) -> int:
    return (n + a - 1) // a * a


def entry(
    kind: int,
    arch: int,
    payload: bytes,
    *,
    flags: int = F_64 | F_LINUX,
    code=(1, 8),
    identifier: str | None = None,
    options: str | None = None,
    compress: str | None = None,
    header_size: int | None = None,
) -> bytes:
    """One fatbin entry: 0x40-byte header (+ extension for identifier/options) + padded payload."""
    uncompressed = 0
    compressed = 0
    data = payload
    if compress == "zstd":
        import zstandard

        data = zstandard.ZstdCompressor().compress(payload)
        flags |= F_ZSTD
        compressed, uncompressed = len(data), len(payload)
    elif compress == "lz4":
        import lz4.block

        data = lz4.block.compress(payload, store_size=False)
        flags |= F_LZ4
        compressed, uncompressed = len(data), len(payload)
    ext = b""
    ident_off = ident_len = opt_desc = 0
    if identifier is not None:
        ident = identifier.encode()
        ident_off, ident_len = 0x40, len(ident)
        ext += ident.ljust(align(len(ident) + 1), b"\0")
    if options is not None:
        opt = options.encode()
        opt_desc = 0x40 + len(ext)
        opt_str_off = opt_desc + 8
        ext += struct.pack("<II", opt_str_off, len(opt))
        ext += opt.ljust(align(len(opt) + 1), b"\0")
    hs = header_size or (0x40 + len(ext))
    ext = ext.ljust(hs - 0x40, b"\0")
    padded = data.ljust(align(len(data)), b"\0")
    hdr = struct.pack(
        "<HHIQIIHHIIIQQQ",
        kind,
        0x0101,
        hs,
        len(padded),
        compressed,
        opt_desc,
        code[1],
        code[0],
        arch,
        ident_off,
        ident_len,
        flags,
        0,
        uncompressed,
    )
    return hdr + ext + padded


def fatbin(entries: Sequence[bytes]) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", FAT_MAGIC, 1, 16, len(body)) + body


def ptx_text(version=(9, 0), target="sm_80", kernels=("k",)) -> bytes:
    lines = [f".version {version[0]}.{version[1]}", f".target {target}", ".address_size 64", ""]
    for k in kernels:
        lines.append(f".visible .entry {k}(\n.param .u64 p\n)\n{{\nret;\n}}")
    return ("\n".join(lines) + "\n").encode() + b"\0"


# ----------------------------------------------------------------------------------- ELF64
def elf64(
    sections: Iterable[tuple[str, int, bytes]],
    *,
    machine: int = 62,
    e_type: int = 3,
    e_flags: int = 0,
    osabi: int = 0,
    abiversion: int = 0,
    extra_shdr=None,
    shstrtab_first: bool = False,
) -> bytes:
    """An ELF64 LE file with the given (name, sh_type, data) sections (+ .shstrtab, after them,
    or ``shstrtab_first`` as in NVIDIA's cubins), no segments.

    ``extra_shdr(name) -> dict`` may override sh_link/sh_info/sh_entsize for a section.
    """
    sections = list(sections)
    names = b"\0" + b"".join(n.encode() + b"\0" for n, _t, _d in sections) + b".shstrtab\0"
    body = bytearray(b"\0" * 64)
    if shstrtab_first:
        body += names
    offsets = []
    for _n, t, d in sections:
        while len(body) % 8:
            body.append(0)
        offsets.append(len(body))
        if t != 8:
            body += d
    shstr_off = 64 if shstrtab_first else len(body)
    if not shstrtab_first:
        body += names
    while len(body) % 8:
        body.append(0)
    shoff = len(body)
    shdrs = [b"\0" * 64]
    name_off = 1
    for (n, t, d), off in zip(sections, offsets):
        over = (extra_shdr or (lambda _n: {}))(n)
        shdrs.append(
            struct.pack(
                "<IIQQQQIIQQ",
                name_off,
                t,
                0x2,
                0,
                off,
                len(d),
                over.get("link", 0),
                over.get("info", 0),
                8,
                over.get("entsize", 0),
            )
        )
        name_off += len(n) + 1
    shdrs.append(struct.pack("<IIQQQQIIQQ", name_off, 3, 0, 0, shstr_off, len(names), 0, 0, 1, 0))
    body += b"".join(shdrs)
    ident = b"\x7fELF" + bytes([2, 1, 1, osabi, abiversion]) + b"\0" * 7
    hdr = struct.pack(
        "<16sHHIQQQIHHHHHH",
        ident,
        e_type,
        machine,
        1,
        0,
        0,
        shoff,
        e_flags,
        64,
        56,
        0,
        64,
        len(shdrs),
        len(shdrs) - 1,
    )
    body[:64] = hdr
    return bytes(body)


def cubin(
    sm: int = 80,
    kernels: Sequence[str] = ("_Z1kv",),
    abi: int = 8,
    e_type: int = 2,
    arch_specific: bool = False,
) -> bytes:
    """A minimal device ELF: .symtab with STO_CUDA_ENTRY functions, e_flags by ABI version."""
    if abi >= 8:
        flags = 0x06000000 | (sm << 8) | (0x02 if sm >= 100 else 0x04)
        osabi = 0x41
    else:
        flags = 0x500 | sm | (sm << 16) | (0x800 if arch_specific else 0)
        osabi = 0x33
    strtab = b"\0" + b"".join(k.encode() + b"\0" for k in kernels)
    syms = [b"\0" * 24]
    off = 1
    for k in kernels:
        syms.append(struct.pack("<IBBHQQ", off, 0x12, 0x10, 0, 0, 0))
        off += len(k) + 1
    secs = [(".strtab", 3, strtab), (".symtab", 2, b"".join(syms))]
    if arch_specific and abi >= 8:
        secs.append((".nv.compat", 0x70000086, struct.pack("<BBH", 2, 0x09, 1)))
    return elf64(
        secs,
        machine=190,
        e_type=e_type,
        e_flags=flags,
        osabi=osabi,
        abiversion=abi,
        extra_shdr=lambda n: {"link": 1, "entsize": 24} if n == ".symtab" else {},
    )


def host_elf(fatbin_sections: Sequence[tuple[str, bytes]]) -> bytes:
    """An x86-64 shared object whose sections hold the given bytes (e.g. ('.nv_fatbin', fb))."""
    return elf64([(n, 1, d) for n, d in fatbin_sections])


# --------------------------------------------------------------------------------- archives
def ar_archive(members: Sequence[tuple[str, bytes]]) -> bytes:
    out = bytearray(b"!<arch>\n")
    longnames = b""
    names = []
    for n, _d in members:
        if len(n) > 15:
            names.append(f"/{len(longnames)}")
            longnames += n.encode() + b"/\n"
        else:
            names.append(n + "/")
    if longnames:
        out += _ar_header("//", len(longnames)) + longnames + (b"\n" if len(longnames) % 2 else b"")
    for name, (_n, d) in zip(names, members):
        out += _ar_header(name, len(d)) + d + (b"\n" if len(d) % 2 else b"")
    return bytes(out)


def _ar_header(name: str, size: int) -> bytes:
    return f"{name:<16}{0:<12}{0:<6}{0:<6}{644:<8}{size:<10}`\n".encode()


def zip_archive(members: Sequence[tuple[str, bytes]], stored: bool = False) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED) as zf:
        for n, d in members:
            zf.writestr(n, d)
    return buf.getvalue()


def sample_fatbin() -> bytes:
    """sm_80 cubin + zstd compute_80 PTX, like ``nvcc -arch=sm_80``."""
    return fatbin(
        [
            entry(KIND_ELF, 80, cubin(80, ["_Z3addPfS_i", "_Z5scalePf"]), code=(1, 8)),
            entry(
                KIND_PTX,
                80,
                ptx_text((9, 0), "sm_80", ["_Z3addPfS_i", "_Z5scalePf"]),
                code=(9, 0),
                compress="zstd",
            ),
        ]
    )


# ------------------------------------------------------------------ hostile inputs (issue 7)
def tar_archive(members: Sequence[tuple[str, bytes]], gz: bool = False) -> bytes:
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as tf:
        for n, d in members:
            info = tarfile.TarInfo(n)
            info.size = len(d)
            tf.addfile(info, io.BytesIO(d))
    return buf.getvalue()


def raw_entry(
    kind: int,
    arch: int,
    stored: bytes,
    *,
    flags: int,
    compressed_size: int,
    uncompressed_size: int,
    code=(1, 8),
) -> bytes:
    """An entry header with caller-chosen (possibly lying) sizes over ``stored`` payload bytes."""
    padded = stored.ljust(align(len(stored)), b"\0")
    hdr = struct.pack(
        "<HHIQIIHHIIIQQQ",
        kind,
        0x0101,
        0x40,
        len(padded),
        compressed_size,
        0,
        code[1],
        code[0],
        arch,
        0,
        0,
        flags,
        0,
        uncompressed_size,
    )
    return hdr + padded


def bomb_entry(method: str, size: int, declared: int | None = None) -> bytes:
    """A cubin entry whose payload inflates to ``size`` zero bytes (declared as ``declared``)."""
    zeros = b"\0" * size
    if method == "zstd":
        import zstandard

        data, flag = zstandard.ZstdCompressor(level=3).compress(zeros), F_ZSTD
    else:
        import lz4.block

        data, flag = lz4.block.compress(zeros, store_size=False), F_LZ4
    return raw_entry(
        KIND_ELF,
        80,
        data,
        flags=F_64 | F_LINUX | flag,
        compressed_size=len(data),
        uncompressed_size=size if declared is None else declared,
    )


def zip_bomb_member(name: str, size: int) -> bytes:
    """A zip whose one deflated member is ``size`` zero bytes (ratio ~1000:1)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED  # a bare ZipInfo would store the member
        with zf.open(info, "w", force_zip64=True) as fh:
            chunk = b"\0" * (1 << 20)
            for _ in range(size >> 20):
                fh.write(chunk)
    return buf.getvalue()


def nested_zip(depth: int, leaf: bytes, leaf_name: str = "k.fatbin") -> bytes:
    """``leaf`` wrapped in ``depth`` zips (``inner.zip`` inside ``inner.zip`` ...)."""
    data = zip_archive([(leaf_name, leaf)])
    for _ in range(depth - 1):
        data = zip_archive([("inner.zip", data)])
    return data


def arch_fatbin(
    sass: Sequence[str] = (), ptx: Sequence[str] = (), kernels: Sequence[str] = ("_Z1kv",), ptx_version=(9, 0)
) -> bytes:
    """A fatbin with a cubin per ``sass`` arch and a PTX per ``ptx`` arch ("90", "90a", "100f")."""

    def split(a: str):
        variant = a[-1] if a[-1] in "af" else ""
        return int(a.rstrip("af")), {"a": F_A, "f": F_F, "": 0}[variant]

    out = []
    for a in sass:
        sm, vflag = split(a)
        out.append(
            entry(KIND_ELF, sm, cubin(sm, kernels, arch_specific=vflag == F_A), flags=F_64 | F_LINUX | vflag)
        )
    for a in ptx:
        sm, vflag = split(a)
        out.append(
            entry(
                KIND_PTX,
                sm,
                ptx_text(ptx_version, f"sm_{a}", kernels),
                code=ptx_version,
                flags=F_64 | F_LINUX | vflag,
            )
        )
    return fatbin(out)


def arch_library(*fatbins: bytes) -> bytes:
    """A host shared object whose ``.nv_fatbin`` holds the given fatbins back to back."""
    return host_elf([(".nv_fatbin", b"".join(fb.ljust(align(len(fb)), b"\0") for fb in fatbins))])


# ---------------------------------------------------------------------- packages and images
def _tar_bytes(members: Sequence[tuple[str, bytes]], mode: str = "w") -> bytes:
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for n, d in members:
            info = tarfile.TarInfo(n)
            info.size, info.mode, info.mtime = len(d), 0o755, 1700000000
            tf.addfile(info, io.BytesIO(d))
    return buf.getvalue()


def conda_index(
    name: str, version: str, build: str, depends: Sequence[str], subdir: str = "linux-64"
) -> dict:
    """``info/index.json`` with the fields conda-build writes (conda's package specification)."""
    return {
        "arch": "x86_64" if subdir == "linux-64" else None,
        "build": build,
        "build_number": int(build.rsplit("_", 1)[-1]) if build.rsplit("_", 1)[-1].isdigit() else 0,
        "depends": list(depends),
        "license": "MIT",
        "name": name,
        "platform": "linux",
        "subdir": subdir,
        "timestamp": 1700000000000,
        "version": version,
    }


def conda_package(index: dict, files: Sequence[tuple[str, bytes]], fmt: str = "conda") -> bytes:
    """A conda package: ``fmt`` "conda" (zip: metadata.json, info-*.tar.zst, pkg-*.tar.zst, all
    stored, as conda-package-handling writes it) or "tar.bz2" (one bzip2 tar, info/ first)."""
    import hashlib
    import json

    import zstandard

    paths = {
        "paths": [
            {
                "_path": n,
                "path_type": "hardlink",
                "sha256": hashlib.sha256(d).hexdigest(),
                "size_in_bytes": len(d),
            }
            for n, d in files
        ],
        "paths_version": 1,
    }
    info = [
        ("info/index.json", json.dumps(index, indent=2, sort_keys=True).encode()),
        ("info/paths.json", json.dumps(paths, indent=2).encode()),
        ("info/files", "".join(n + "\n" for n, _ in files).encode()),
        ("info/about.json", b'{"summary": "test package"}'),
    ]
    if fmt == "tar.bz2":
        return _tar_bytes(info + list(files), "w:bz2")
    dist = f"{index['name']}-{index['version']}-{index['build']}"
    z = zstandard.ZstdCompressor(level=3)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("metadata.json", json.dumps({"conda_pkg_format_version": 2}))
        zf.writestr(f"pkg-{dist}.tar.zst", z.compress(_tar_bytes(files)))
        zf.writestr(f"info-{dist}.tar.zst", z.compress(_tar_bytes(info)))
    return buf.getvalue()


def layer_tar(entries, compress: str | None = "gzip") -> bytes:
    """One image layer: ``entries`` of (path, bytes) files, (path, None) folders, (path, ("symlink"
    | "hardlink", target)) links; ``.wh.NAME`` / ``.wh..wh..opq`` names are whiteouts."""
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for n, d in entries:
            info = tarfile.TarInfo(n)
            info.mtime = 1700000000
            if d is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tf.addfile(info)
            elif isinstance(d, tuple):
                info.type = tarfile.SYMTYPE if d[0] == "symlink" else tarfile.LNKTYPE
                info.linkname = d[1]
                tf.addfile(info)
            else:
                info.size, info.mode = len(d), 0o755
                tf.addfile(info, io.BytesIO(d))
    raw = buf.getvalue()
    if compress == "gzip":
        import gzip

        return gzip.compress(raw, mtime=0)
    if compress == "zstd":
        import zstandard

        return zstandard.ZstdCompressor().compress(raw)
    return raw


def oci_layout(
    root, layers: Sequence[bytes], platforms: Sequence[str] = ("linux/amd64",), docker_manifest: bool = False
) -> dict:
    """Write an OCI image layout (image-spec: oci-layout, index.json, blobs/sha256) holding one
    manifest per platform over the same ``layers`` (bottom first); returns the index."""
    import hashlib
    import json
    import os

    blobs = os.path.join(root, "blobs", "sha256")
    os.makedirs(blobs, exist_ok=True)

    def put(data: bytes) -> dict:
        h = hashlib.sha256(data).hexdigest()
        with open(os.path.join(blobs, h), "wb") as fh:
            fh.write(data)
        return {"digest": f"sha256:{h}", "size": len(data)}

    lay = [
        dict(
            put(d),
            mediaType="application/vnd.oci.image.layer.v1.tar" + ("+gzip" if d[:2] == b"\x1f\x8b" else ""),
        )
        for d in layers
    ]
    manifests = []
    for plat in platforms:
        os_, arch = plat.split("/")[:2]
        config = put(json.dumps({"architecture": arch, "os": os_, "rootfs": {"type": "layers"}}).encode())
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": dict(config, mediaType="application/vnd.oci.image.config.v1+json"),
            "layers": lay,
        }
        m = put(json.dumps(manifest).encode())
        manifests.append(
            dict(
                m,
                mediaType="application/vnd.oci.image.manifest.v1+json",
                platform={"os": os_, "architecture": arch},
            )
        )
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": manifests,
    }
    with open(os.path.join(root, "index.json"), "w") as fh:
        json.dump(index, fh)
    with open(os.path.join(root, "oci-layout"), "w") as fh:
        json.dump({"imageLayoutVersion": "1.0.0"}, fh)
    if docker_manifest:  # Docker 25+ docker save: manifest.json beside the layout
        with open(os.path.join(root, "manifest.json"), "w") as fh:
            json.dump(
                [
                    {
                        "Config": "blobs/sha256/x",
                        "RepoTags": ["app:1"],
                        "Layers": [x["digest"].replace("sha256:", "blobs/sha256/") for x in lay],
                    }
                ],
                fh,
            )
    return index


def tar_of_dir(root) -> bytes:
    """A folder as an uncompressed tar (``oci-archive``, ``docker save``), paths relative to it."""
    import os
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for d, _dirs, files in sorted(os.walk(root)):
            for f in sorted(files):
                p = os.path.join(d, f)
                tf.add(p, arcname=os.path.relpath(p, root))
    return buf.getvalue()


def zip_precompressed(members: Sequence[tuple[str, bytes, int, int]]) -> bytes:
    """A zip of already-deflated members ``(name, deflated, crc32, size)``: the same 64 MiB of
    zeros deflated once can be stored 16 times without deflating it 16 times (zipfile cannot)."""
    import zlib  # noqa: F401  (the caller deflates; documented here for the reader)

    local, central, pos = [], [], 0
    for name, data, crc, size in members:
        n = name.encode()
        hdr = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(data), size, len(n), 0)
        local.append(hdr + n + data)
        central.append(
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0,
                8,
                0,
                0,
                crc,
                len(data),
                size,
                len(n),
                0,
                0,
                0,
                0,
                0,
                pos,
            )
            + n
        )
        pos += len(hdr) + len(n) + len(data)
    cd = b"".join(central)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(cd), pos, 0)
    return b"".join(local) + cd + end


def nested_zip_bomb(levels: int = 4, copies: int = 16, leaf_size: int = 64 << 20) -> bytes:
    """The issue-11 bomb: ``levels`` zips of ``copies`` members each, the innermost holding
    ``copies`` x ``leaf_size`` zero bytes (4 x 16 x 64 MiB: ~35 KB that inflate to 4 TiB)."""
    import zlib

    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    deflated = co.compress(b"\0" * leaf_size) + co.flush()
    crc = zlib.crc32(b"\0" * leaf_size)
    data = zip_precompressed([(f"z{i}.so", deflated, crc, leaf_size) for i in range(copies)])
    for _ in range(levels - 1):
        data = zip_archive([(f"n{i}.zip", data) for i in range(copies)])
    return data


def wheel_file(
    folder,
    name: str,
    version: str,
    members: dict[str, bytes],
    tag: str = "py3-none-manylinux_2_28_x86_64",
    requires: Sequence[str] = (),
    wheel_tag: str = "py3-none-any",
) -> str:
    """A wheel file as pip installs one, in ``folder``: ``members``, then
    ``NAME-VERSION.dist-info`` with METADATA (``requires``: its Requires-Dist lines), WHEEL and
    RECORD; named with ``tag``. Returns its path."""
    import os

    dist = f"{name.replace('-', '_')}-{version}"
    path = os.path.join(folder, f"{dist}-{tag}.whl")
    info = f"{dist}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    files = {
        **members,
        f"{info}/METADATA": (metadata + "".join(f"Requires-Dist: {r}\n" for r in requires)).encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {wheel_tag}\n".encode(),
    }
    record = "".join(f"{n},,\n" for n in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, data in files.items():
            zf.writestr(n, data)
        zf.writestr(f"{info}/RECORD", record)
    return path
