"""Hostile and broken inputs (issue 7): each corpus runs through ``fatbin-inspect list --kernels``
in a subprocess under a memory limit (RLIMIT_AS) and a timeout, and must yield error records,
never a crash, a hang or an "internal error" (an unexpected exception the inventory swallowed).
"""

import io
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile

import builders as B
import pytest
from conftest import fixture_path

MEMORY_LIMIT = 2 << 30  # address space: Python + lief + one 256 MiB entry decoded twice over
TIMEOUT = 120


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_cli(*args, timeout=TIMEOUT):
    """Run the CLI under the limits; a hang is a TimeoutExpired, a crash a Python traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "fatbin_inspect", *args],
        capture_output=True,
        timeout=timeout,
        preexec_fn=_limits,
        text=True,
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "internal error" not in proc.stderr, proc.stderr[-3000:]
    return proc


def list_records(directory):
    proc = run_cli("list", "--kernels", "--all-members", "--format", "jsonl", directory)
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = [json.loads(line) for line in proc.stdout.splitlines()]
    for r in recs:
        messages = (
            [r["error"]["message"] if r["error"] else ""]
            + r["notes"]
            + [e["decode_error"] or "" for fb in r["fatbins"] for e in fb["entries"]]
        )
        assert not any("internal error" in m for m in messages), (r["path"], messages)
    return recs


def errors_by_file(recs, directory):
    """Top-level file name -> list of error messages of it, its members and its entries."""
    out = {}
    for r in recs:
        top = os.path.relpath(r["path"].split("!", 1)[0], directory)
        msgs = out.setdefault(top, [])
        if r["error"]:
            msgs.append(r["error"]["message"])
        msgs += [e["decode_error"] for fb in r["fatbins"] for e in fb["entries"] if e["decode_error"]]
        # metadata that cannot be read costs its attribution with a note (issue 23 class 6)
        msgs += [n for n in r["notes"] if "not attributed" in n]
    return out


def read(name):
    with open(fixture_path("bin", name), "rb") as fh:
        return fh.read()


def needs(name):
    if not os.path.exists(fixture_path("bin", name)):
        pytest.skip(f"fixture {name} not built")
    return read(name)


# ------------------------------------------------------------------------ header boundaries
def fatbin_boundaries(data, base=0):
    magic, _v, _h, fat_size = struct.unpack_from("<IHHQ", data, base)
    cuts = {base + 4, base + 8, base + 15, base + 16}
    pos, end = base + 16, base + 16 + fat_size
    while pos + 0x40 <= end:
        hs, ps = struct.unpack_from("<IQ", data, pos + 4)
        cuts |= {pos + 2, pos + 8, pos + 0x3F, pos + 0x40, pos + hs, pos + hs + ps // 2, pos + hs + ps - 1}
        pos += hs + ps
    return cuts


def elf_boundaries(data):
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    (shnum,) = struct.unpack_from("<H", data, 0x3C)
    cuts = {4, 16, 0x3F, 0x40, shoff, shoff + 0x3F}
    for i in range(shnum):
        sh = shoff + 64 * i
        off, size = struct.unpack_from("<QQ", data, sh + 0x18)
        cuts |= {sh + 64, off, off + size - 1}
    return cuts


def pe_boundaries(data):
    (pe,) = struct.unpack_from("<I", data, 0x3C)
    (nsec,) = struct.unpack_from("<H", data, pe + 6)
    (opt,) = struct.unpack_from("<H", data, pe + 20)
    table = pe + 24 + opt
    cuts = {0x3C, 0x40, pe, pe + 4, pe + 24, table}
    for i in range(nsec):
        sh = table + 40 * i
        raw_size, raw_ptr = struct.unpack_from("<II", data, sh + 16)
        cuts |= {sh + 40, raw_ptr, raw_ptr + raw_size - 1}
    return cuts


def ar_boundaries(data):
    cuts, pos = {4, 8}, 8
    while pos + 60 <= len(data):
        size = int(data[pos + 48 : pos + 58])
        cuts |= {pos + 30, pos + 59, pos + 60, pos + 60 + size // 2, pos + 60 + size - 1}
        pos += 60 + size + (size & 1)
    return cuts


def zip_boundaries(data):
    import io
    import zipfile

    zf = zipfile.ZipFile(io.BytesIO(data))
    cuts = {info.header_offset + k for info in zf.infolist() for k in (4, 29, 30, 40)}
    cd = data.rfind(b"PK\x01\x02", 0, data.rfind(b"PK\x05\x06"))
    eocd = data.rfind(b"PK\x05\x06")
    first_cd = data.find(b"PK\x01\x02")
    return cuts | {first_cd, first_cd + 20, cd, eocd, eocd + 10, len(data) - 1}


def sample_wheel():
    fb = B.sample_fatbin()
    return B.zip_archive(
        [("pkg/libk.so", B.host_elf([(".nv_fatbin", fb)])), ("pkg/k.fatbin", fb), ("pkg/__init__.py", b"")]
    )


CASES = {
    "fatbin": (lambda: needs("t13_raw_sm75_c75_sm120.fatbin"), fatbin_boundaries),
    "fatbin_synth": (B.sample_fatbin, fatbin_boundaries),
    "cubin": (lambda: needs("t14_sm90a.cubin"), elf_boundaries),
    "elf": (lambda: needs("t01_exe_sm80"), elf_boundaries),
    "pe": (lambda: needs("pe_nv_fatb_2fatbins.dll"), pe_boundaries),
    "ar": (lambda: needs("t10_rdc_lib_sm80.a"), ar_boundaries),
    "zip": (sample_wheel, zip_boundaries),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(CASES))
def test_truncation_at_every_header_boundary(kind, tmp_path):
    make, boundaries = CASES[kind]
    data = make()
    cuts = sorted(c for c in boundaries(data) if 0 < c < len(data))
    assert len(cuts) >= 8
    for c in cuts:
        (tmp_path / f"cut_{c:08d}").write_bytes(data[:c])
    recs = list_records(str(tmp_path))
    errs = errors_by_file(recs, str(tmp_path))
    assert set(errs) == {f"cut_{c:08d}" for c in cuts}
    if kind == "pe":  # lief-free cuts past the last section (overlay, certificate) are legal files
        return
    silent = [name for name, msgs in errs.items() if not msgs and int(name[4:]) > 8]  # "!<arch>\n" is empty
    assert not silent, f"truncated {kind} files listed without any error: {silent}"


def _put(data, off, fmt, value):
    out = bytearray(data)
    struct.pack_into(fmt, out, off, value % (1 << (8 * struct.calcsize(fmt))))
    return bytes(out)


HUGE = (0, 1, 7, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 40, (1 << 63) + 8, (1 << 64) - 1)


def size_field_mutants(data):
    """(name, bytes) with every size/offset/count field of the first fatbin entry, the fatbin
    header and the ELF/PE/ar headers replaced by zero, odd and huge values."""
    fb = B.sample_fatbin()
    for v in HUGE:
        yield f"fat_size_{v:x}", _put(fb, 8, "<Q", v)
        yield f"entry_hsize_{v:x}", _put(fb, 16 + 4, "<I", v)
        yield f"entry_psize_{v:x}", _put(fb, 16 + 8, "<Q", v)
        yield f"entry_ident_{v:x}", _put(_put(fb, 16 + 0x20, "<I", v), 16 + 0x24, "<I", 8)
        yield f"entry_opts_{v:x}", _put(fb, 16 + 0x14, "<I", v)
    second = 16 + struct.unpack_from("<I", fb, 20)[0] + struct.unpack_from("<Q", fb, 24)[0]
    for v in HUGE:  # the zstd PTX entry: compressed and uncompressed sizes
        yield f"ptx_csize_{v:x}", _put(fb, second + 0x10, "<I", v)
        yield f"ptx_usize_{v:x}", _put(fb, second + 0x38, "<Q", v)
    cub = B.cubin(80, ["_Z1kv"])
    shoff = struct.unpack_from("<Q", cub, 0x28)[0]
    for v in HUGE:
        yield f"cubin_shoff_{v:x}", _put(cub, 0x28, "<Q", v)
        yield f"cubin_shnum_{v:x}", _put(cub, 0x3C, "<H", v)
        yield f"cubin_shstrndx_{v:x}", _put(cub, 0x3E, "<H", v)
        for i in (1, 2):
            yield f"cubin_sh{i}_off_{v:x}", _put(cub, shoff + 64 * i + 0x18, "<Q", v)
            yield f"cubin_sh{i}_size_{v:x}", _put(cub, shoff + 64 * i + 0x20, "<Q", v)
            yield f"cubin_sh{i}_link_{v:x}", _put(cub, shoff + 64 * i + 0x28, "<I", v)
    host = B.host_elf([(".nv_fatbin", fb)])
    hshoff = struct.unpack_from("<Q", host, 0x28)[0]
    for v in HUGE:
        yield f"elf_shentsize_{v:x}", _put(host, 0x3A, "<H", v)
        yield f"elf_shnum0_sh0size_{v:x}", _put(_put(host, 0x3C, "<H", 0), hshoff + 0x20, "<Q", v)
        yield f"elf_fatbin_size_{v:x}", _put(host, hshoff + 64 + 0x20, "<Q", v)
        yield f"elf_name_{v:x}", _put(host, hshoff + 64, "<I", v)
    if os.path.exists(fixture_path("bin", "pe_nv_fatb_2fatbins.dll")):
        dll = read("pe_nv_fatb_2fatbins.dll")
        pe = struct.unpack_from("<I", dll, 0x3C)[0]
        opt = struct.unpack_from("<H", dll, pe + 20)[0]
        for v in HUGE:
            yield f"pe_lfanew_{v:x}", _put(dll, 0x3C, "<I", v)
            yield f"pe_nsec_{v:x}", _put(dll, pe + 6, "<H", v)
            yield f"pe_optsize_{v:x}", _put(dll, pe + 20, "<H", v)
            yield f"pe_import_rva_{v:x}", _put(dll, pe + 24 + 120, "<I", v)
            for i in range(3):
                yield f"pe_sec{i}_rawsize_{v:x}", _put(dll, pe + 24 + opt + 40 * i + 16, "<I", v)
                yield f"pe_sec{i}_rawptr_{v:x}", _put(dll, pe + 24 + opt + 40 * i + 20, "<I", v)
    ar = B.ar_archive([("a_long_member_name.o", host), ("b.o", host)])
    for bad in (b"-60", b"99999999999", b"0x10", b"\xb2", b"", b"1e3"):
        yield f"ar_size_{bad.hex()}", ar[: 8 + 48] + bad.ljust(10) + ar[8 + 58 :]
        yield f"ar_longname_{bad.hex()}", ar.replace(b"/0 ", b"/" + bad[:1].ljust(2), 1)
    whl = B.zip_archive([("pkg/k.fatbin", fb)])
    cd = whl.find(b"PK\x01\x02")
    for v in HUGE:
        yield f"zip_csize_{v:x}", _put(whl, cd + 20, "<I", v)
        yield f"zip_usize_{v:x}", _put(whl, cd + 24, "<I", v)
        yield f"zip_lho_{v:x}", _put(whl, cd + 42, "<I", v)


@pytest.mark.slow
def test_flipped_and_huge_size_fields(tmp_path):
    names = []
    for name, data in size_field_mutants(None):
        (tmp_path / name).write_bytes(data)
        names.append(name)
    assert len(names) > 150
    recs = list_records(str(tmp_path))
    assert set(errors_by_file(recs, str(tmp_path))) == set(names)


# ------------------------------------------------------------------------ bombs and limits
@pytest.mark.slow
def test_zstd_and_lz4_bombs_inside_a_fatbin(tmp_path):
    many = B.bomb_entry("zstd", 16 << 20)
    cases = {
        "zstd_200MiB_zeros": B.fatbin([B.bomb_entry("zstd", 200 << 20)]),
        "zstd_claims_1GiB": B.fatbin([B.bomb_entry("zstd", 1 << 20, declared=1 << 30)]),
        "zstd_lies_small": B.fatbin([B.bomb_entry("zstd", 64 << 20, declared=4096)]),
        "lz4_64MiB_zeros": B.fatbin([B.bomb_entry("lz4", 64 << 20)]),
        "lz4_claims_200MiB": B.fatbin([B.bomb_entry("lz4", 4096, declared=200 << 20)]),
        "zstd_2000_entries_16MiB_each": B.fatbin([many] * 2000),
    }
    for name, data in cases.items():
        (tmp_path / f"{name}.fatbin").write_bytes(data)
    recs = list_records(str(tmp_path))
    errs = errors_by_file(recs, str(tmp_path))
    for name in cases:
        assert errs[f"{name}.fatbin"], name  # every bomb entry ends as a decode error
    budget = [m for m in errs["zstd_2000_entries_16MiB_each.fatbin"] if "budget" in m]
    assert budget, "the per-file decoding budget must stop 2000 x 16 MiB"
    assert any("limit" in m or "budget" in m for m in errs["zstd_claims_1GiB.fatbin"])
    assert any("cannot inflate" in m for m in errs["lz4_claims_200MiB.fatbin"])


def test_zip_bomb_member_and_depth_limit(tmp_path):
    (tmp_path / "bomb.whl").write_bytes(B.zip_bomb_member("pkg/libbomb.so", 128 << 20))
    (tmp_path / "deep.zip").write_bytes(B.nested_zip(7, B.sample_fatbin()))
    (tmp_path / "ok.zip").write_bytes(B.nested_zip(2, B.sample_fatbin()))
    recs = list_records(str(tmp_path))
    errs = errors_by_file(recs, str(tmp_path))
    assert any("zip bomb" in m for m in errs["bomb.whl"]), errs["bomb.whl"]
    assert any("nested deeper" in m for m in errs["deep.zip"]), errs["deep.zip"]
    assert not errs["ok.zip"] and any(
        r["fatbins"] for r in recs if r["path"].startswith(str(tmp_path / "ok.zip"))
    )


@pytest.mark.slow
def test_gzip_bomb_is_bounded(tmp_path):
    import gzip

    with gzip.open(tmp_path / "bomb.gz", "wb", compresslevel=9) as gz:
        for _ in range(128):  # not zeros: a zero block reads as an empty tar, not a bomb
            gz.write(b"x" * (1 << 20))
    recs = list_records(str(tmp_path))
    errs = errors_by_file(recs, str(tmp_path))
    assert any("inflates" in m for m in errs["bomb.gz"]), errs  # past the bound or the ratio


# ------------------------------------------------------------------------ the file system
def test_symlink_loop_fifo_dangling_link_are_skipped_with_a_note(tmp_path):
    (tmp_path / "k.fatbin").write_bytes(B.sample_fatbin())
    os.symlink("loop_b", tmp_path / "loop_a")
    os.symlink("loop_a", tmp_path / "loop_b")
    os.symlink("missing", tmp_path / "dangling")
    os.symlink(".", tmp_path / "self")  # a directory link back to its parent
    os.mkfifo(tmp_path / "fifo")
    proc = run_cli("list", "--format", "jsonl", str(tmp_path), timeout=60)
    assert proc.returncode == 0
    recs = {os.path.basename(r["path"]): r for r in map(json.loads, proc.stdout.splitlines())}
    assert recs["k.fatbin"]["fatbins"] and recs["k.fatbin"]["error"] is None
    for name in ("loop_a", "loop_b", "dangling", "fifo"):
        assert recs[name]["error"], name
        assert f"{tmp_path / name}: " in proc.stderr  # one stderr line each
    strict = run_cli("list", "--strict", "--format", "jsonl", str(tmp_path), timeout=60)
    assert strict.returncode == 3


def test_fifo_named_directly_does_not_block(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    proc = run_cli("list", "--strict", str(tmp_path / "fifo"), timeout=60)
    assert proc.returncode == 3 and "not a regular file" in proc.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file anyway")
def test_unreadable_file_chmod_000(tmp_path):
    p = tmp_path / "secret.fatbin"
    p.write_bytes(B.sample_fatbin())
    p.chmod(0)
    proc = run_cli("list", "--strict", str(tmp_path), timeout=60)
    assert proc.returncode == 3 and "cannot open" in proc.stderr


def test_file_that_vanishes_between_listing_and_opening(tmp_path, monkeypatch):
    """Works as root too: the directory entry is gone when the inventory opens it."""
    from fatbin_inspect.inventory.options import Options
    from fatbin_inspect.judging import inputs as cli_inventory

    p = tmp_path / "gone.fatbin"
    p.write_bytes(B.sample_fatbin())

    def vanishing(root):
        p.unlink()
        yield str(p), str(p), None, None

    monkeypatch.setattr(cli_inventory, "iter_stat", vanishing)
    (rec,) = cli_inventory.iter_reports([str(tmp_path)], Options())
    assert rec.error is not None and "cannot open" in rec.error.message


def _many_files_dir():
    """A tmpfs directory when there is one (100,000 creates on ext4 take ~30 s on 2 cores)."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix="fatbin-inspect-many-", dir=base)


@pytest.mark.slow
def test_directory_of_100000_tiny_files():
    d = _many_files_dir()
    try:
        for i in range(100_000):
            fd = os.open(os.path.join(d, f"f{i:06d}"), os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, b"tiny %d" % i)
            os.close(fd)
        proc = run_cli("list", "--format", "jsonl", "--strict", d, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.count("\n") == 100_000
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ------------------------------------------------------------------ conda packages (issue 12)
def _conda_pkg(fmt="conda", files=None):
    index = B.conda_index("evil", "1.0", "cuda126_0", ["cuda-version >=12.6"])
    return B.conda_package(index, files or [("lib/libk.so", read("t01_exe_sm80"))], fmt)


def _zstd_tar_bomb(name: str, size: int) -> bytes:
    """A tar whose one member is ``size`` bytes of zeros, zstd-compressed (~1:30000)."""
    import tarfile

    import zstandard

    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=19).stream_writer(out, closefd=False) as zw:
        info = tarfile.TarInfo(name)
        info.size = size
        zw.write(info.tobuf())
        chunk = b"\0" * (4 << 20)
        for _ in range(size // len(chunk)):
            zw.write(chunk)
        zw.write(b"\0" * 1024)
    return out.getvalue()


def test_conda_packages_truncated_corrupt_and_bombs(tmp_path):
    import zipfile

    good = _conda_pkg()
    for cut in (30, len(good) // 3, len(good) // 2, len(good) - 30):
        (tmp_path / f"cut_{cut}.conda").write_bytes(good[:cut])
    bz = _conda_pkg("tar.bz2")
    (tmp_path / "cut.tar.bz2").write_bytes(bz[: len(bz) // 2])
    buf = io.BytesIO()  # index.json that is no JSON, and a .conda without its pkg tar
    with zipfile.ZipFile(io.BytesIO(good)) as src, zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            if not info.filename.startswith("pkg-"):
                dst.writestr(info, src.read(info))
    (tmp_path / "no_pkg.conda").write_bytes(buf.getvalue())
    (tmp_path / "bad_index.tar.bz2").write_bytes(
        B._tar_bytes([("info/index.json", b"{not json"), ("lib/libk.so", read("t01_exe_sm80"))], "w:bz2")
    )
    buf = io.BytesIO()  # a pkg tar inflating 256 MiB of zeros from a few KB
    with zipfile.ZipFile(io.BytesIO(good)) as src, zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            bomb = info.filename.startswith("pkg-")
            dst.writestr(info, _zstd_tar_bomb("lib/libbomb.so", 256 << 20) if bomb else src.read(info))
    (tmp_path / "bomb.conda").write_bytes(buf.getvalue())
    before = sorted(os.listdir(tmp_path))
    recs = list_records(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == before
    errs = errors_by_file(recs, str(tmp_path))
    for name in before:
        assert errs[name], (name, errs[name])  # every broken package says so, in one line
        assert all("\n" not in m for m in errs[name])
    assert any("inflates" in m for m in errs["bomb.conda"]), errs["bomb.conda"]  # past the bound or the ratio
    assert any("invalid JSON" in m for m in errs["bad_index.tar.bz2"]), errs["bad_index.tar.bz2"]
    assert any("pkg-*.tar.zst" in m for m in errs["no_pkg.conda"]), errs["no_pkg.conda"]


# ---------------------------------------------------------------------- OCI images (issue 12)
def _oci(root, layers, **kw):
    B.oci_layout(str(root), layers, **kw)
    return root


def test_oci_links_out_of_the_image_are_never_followed(tmp_path):
    secret = tmp_path / "outside.so"
    secret.write_bytes(read("t01_exe_sm80"))  # device code outside the image: must not be read
    layer = B.layer_tar(
        [
            ("usr/lib/libabs.so", ("symlink", str(secret))),
            ("usr/lib/librel.so", ("symlink", "../../../../../" + str(secret))),
            ("usr/lib/libhard.so", ("hardlink", str(secret).lstrip("/"))),
            ("../../escape.so", read("t01_exe_sm80")),
            ("usr/lib/libok.so", read("t12_lib_sm86_c89.so")),
        ]
    )
    img = tmp_path / "images"
    _oci(img / "links", [layer])
    (img / "links.tar").write_bytes(B.tar_of_dir(str(img / "links")))
    before = sorted(os.listdir(tmp_path))
    recs = list_records(str(img / "links"))
    recs += list_records(str(img / "links.tar"))
    assert sorted(os.listdir(tmp_path)) == before
    members = sorted(r["path"].rsplit("!", 1)[1] for r in recs if r["path"].count("!") == 2)
    assert members == ["usr/lib/libok.so", "usr/lib/libok.so"], members
    own = [r for r in recs if r["format"] == "oci"]
    assert len(own) == 2 and all(r["error"] is None for r in own)
    assert all("3 links not followed" in n and "1 entries outside" in n for r in own for n in r["notes"][-1:])


def test_oci_bombs_layer_counts_nesting_and_broken_layouts(tmp_path):
    import json as _json

    fb = read("t01_exe_sm80")
    good = B.layer_tar([("usr/lib/libk.so", fb)])
    _oci(tmp_path / "bomb", [_zstd_tar_bomb("usr/lib/libbomb.so", 256 << 20)])  # 256 MiB from a few KB
    _oci(tmp_path / "layers", [good] * 600)  # past MAX_LAYERS, one blob named 600 times
    inner = tmp_path / "n0"
    _oci(inner, [good])
    data = B.tar_of_dir(str(inner))
    for level in range(1, 6):  # an image whose layer holds an image tar, five deep
        d = tmp_path / f"n{level}"
        _oci(d, [B.layer_tar([("img.tar", data)], compress=None)])
        data = B.tar_of_dir(str(d))
    (tmp_path / "deep.tar").write_bytes(data)
    whole = B.tar_of_dir(str(inner))
    for cut in (len(whole) // 3, 2 * len(whole) // 3):
        (tmp_path / f"cut_{cut}.tar").write_bytes(whole[:cut])
    bad = tmp_path / "badindex"
    _oci(bad, [good])
    (bad / "index.json").write_text("{not json")
    missing = tmp_path / "missing"
    _oci(missing, [good])
    for f in (missing / "blobs" / "sha256").iterdir():
        if f.read_bytes()[:2] == b"\x1f\x8b":
            f.unlink()  # the layer blob
    loop = tmp_path / "loop"
    _oci(loop, [good])
    doc = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.index.v1+json",
                "digest": "sha256:" + "0" * 64,
                "size": 1,
            }
        ],
    }
    (loop / "blobs" / "sha256" / ("0" * 64)).write_text(_json.dumps(doc))
    (loop / "index.json").write_text(_json.dumps(doc))
    errs = {}
    for r in list_records(str(tmp_path)):  # one run: every layout folder is one input
        top = os.path.relpath(r["path"].split("!", 1)[0], tmp_path)
        errs.setdefault(top, []).extend([r["error"]["message"]] if r["error"] else [])
    for level in range(6):  # the images along the way: fine while shallow enough
        assert bool(errs.pop(f"n{level}")) == (level >= 4), level
    assert any("inflates" in m for m in errs["bomb"]), errs["bomb"]  # past the bound or the ratio
    assert any("600 layers" in m for m in errs["layers"]), errs["layers"]
    assert any("nested deeper" in m for m in errs["deep.tar"]), errs["deep.tar"]
    assert any("not JSON" in m for m in errs["badindex"]), errs["badindex"]
    assert any("missing" in m for m in errs["missing"]), errs["missing"]
    assert any("nested deeper" in m or "hash to" in m for m in errs["loop"]), errs["loop"]
    for name, msgs in errs.items():
        assert msgs and all("\n" not in m for m in msgs), (name, msgs)
