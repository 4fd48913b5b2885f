"""How a compressed cubin is held while it is parsed (issue 26, row 5's memory): a zstd cubin is
decoded into one reused buffer, one larger than that into a sparse image holding its start and
its section table. Whatever the path, the record must be the one the whole image gives."""

from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
import threading

import builders as B
import pytest
import zstandard
from conftest import TESTS

from fatbin_inspect.formats import cubin as C
from fatbin_inspect.formats import decompress, fatbin
from fatbin_inspect.formats.binio import Blob
from fatbin_inspect.inventory import payloads
from fatbin_inspect.inventory.payloads import decode_entry

KIND_SASS = 2


def _code(n: int, seed: int = 1) -> bytes:
    """``n`` bytes that compress as SASS does (~10x), not as zeros do."""
    rnd = random.Random(seed)
    words = [rnd.getrandbits(64).to_bytes(8, "little") for _ in range(512)]
    return b"".join(rnd.choice(words) for _ in range(n // 8)).ljust(n, b"\0")


def big_cubin(code_size: int, info_last: bool = False, kernels=("_Z4bigkv", "_Z5otherv")) -> bytes:
    """A cubin with ``code_size`` bytes of code between its symbols and its section table (as
    NVIDIA lays them out); ``info_last``: the kernels' ``.nv.info.<name>`` after the code."""
    strtab = b"\0" + b"".join(k.encode() + b"\0" for k in kernels)
    syms = [b"\0" * 24] + [
        struct.pack("<IBBHQQ", 1 + sum(len(x) + 1 for x in kernels[:i]), 0x12, 0x10, 0, 0, 0)
        for i in range(len(kernels))
    ]
    regs = b"".join(struct.pack("<BBHII", 4, C.NVI_REGCOUNT, 8, i + 1, 40 + i) for i in range(len(kernels)))
    infos = [
        (f".nv.info.{k}", C.SHT_NV_INFO, struct.pack("<BBHIII", 4, C.NVI_MAX_THREADS, 12, 256, 1, 1))
        for k in kernels
    ]
    head = [(".strtab", 3, strtab), (".symtab", 2, b"".join(syms)), (".nv.info", C.SHT_NV_INFO, regs)]
    code = [(".text._Z4bigkv", 1, _code(code_size))]
    secs = head + code + infos if info_last else head + infos + code
    return B.elf64(
        secs,
        machine=190,
        e_type=2,
        e_flags=0x06000000 | (90 << 8) | 0x04,
        osabi=0x41,
        abiversion=8,
        extra_shdr=lambda n: {"link": 1, "entsize": 24} if n == ".symtab" else {},
        shstrtab_first=True,
    )


def _entry_of(image: bytes, compress: str = "zstd"):
    data = B.fatbin([B.entry(KIND_SASS, 90, image, compress=compress)])
    blob = Blob(data)
    found, errors = fatbin.walk(blob, 0, len(data), None, strict=True)
    assert not errors
    return blob, found[0].entries[0]


def _whole(image: bytes):
    """The record parsing the whole image gives (no reused buffer, no sparse image)."""
    info, ks = C.parse_cubin(image, kernels=True, resources=True, demangle=payloads.demangle)
    return info, ks


def _decoded(blob, e):
    d = decode_entry(blob, e, kernels=True, resources=True)
    assert d.decode_error is None, d.decode_error
    return d.cubin, d.kernels


@pytest.fixture
def whole_decodes(monkeypatch):
    """How many entries were decoded whole (``decompress.decode``) rather than in place."""
    calls = []
    real = payloads.decode

    def counting(method, data, size, offset=None, *a, **k):
        calls.append(size)
        return real(method, data, size, offset, *a, **k)

    monkeypatch.setattr(payloads, "decode", counting)
    return calls


def test_a_large_cubin_is_read_sparsely_and_gives_the_whole_images_record(whole_decodes):
    image = big_cubin(12 << 20)
    blob, e = _entry_of(image)
    assert e.size > decompress.REUSED_MAX
    assert _decoded(blob, e) == _whole(image)
    assert whole_decodes == []  # read sparsely, not decoded whole
    info, ks = _decoded(blob, e)
    assert [(k.name, k.registers, k.max_threads) for k in ks] == [
        ("_Z4bigkv", 40, (256, 1, 1)),
        ("_Z5otherv", 41, (256, 1, 1)),
    ]


def test_a_section_table_across_the_sparse_heads_end_is_read_sparsely(whole_decodes):
    """The table starts before the head's end and ends after it (2 of libtorch_cuda.so's 148
    cubins over 8 MiB): its bytes are the head's last ones and the tail's first, not a reason to
    decode the cubin whole (an 8 MB ``bytes`` that raised glibc's mmap threshold for the rest of
    the worker's life)."""
    probe = big_cubin(1 << 20)
    overhead = C.table_span(probe, len(probe))[0] - (1 << 20)  # table offset beyond the code
    image = big_cubin(C.SPARSE_PREFIX - overhead - 200)
    start, end = C.table_span(image, len(image))
    assert start < C.SPARSE_PREFIX < end and len(image) > decompress.REUSED_MAX
    blob, e = _entry_of(image)
    assert _decoded(blob, e) == _whole(image)
    assert whole_decodes == []


def test_a_cubin_laid_out_otherwise_is_decoded_whole_with_the_same_record(whole_decodes):
    image = big_cubin(12 << 20, info_last=True)  # .nv.info.<kernel> past the sparse image's head
    blob, e = _entry_of(image)
    assert _decoded(blob, e) == _whole(image)
    assert whole_decodes == [e.size]  # the sparse image lacked it: decoded whole


def test_a_small_cubin_goes_through_the_reused_buffer(whole_decodes):
    small, other = big_cubin(1 << 20), big_cubin(3 << 20, kernels=("_Z1av", "_Z1bv", "_Z1cv"))
    for image in (other, small, other):  # a smaller image after a larger one: no stale bytes
        blob, e = _entry_of(image)
        assert _decoded(blob, e) == _whole(image)
    assert whole_decodes == []


@pytest.mark.parametrize("size", [1 << 20, 12 << 20])
def test_a_frame_that_does_not_decode_reports_what_decoding_it_whole_reports(size):
    blob, e = _entry_of(big_cubin(size))
    data = bytearray(blob.buf)
    mid = e.payload_offset + e.stored_size // 2
    data[mid : mid + 64] = bytes(64)  # a corrupt block; the frame header still declares the size
    bad = Blob(bytes(data))
    got = decode_entry(bad, e, kernels=True).decode_error
    with pytest.raises(Exception) as whole:
        decompress.decode("zstd", bad.read(e.payload_offset, e.stored_size, "x"), e.size, e.offset)
    assert got is not None and got == str(whole.value)


def test_a_frame_shorter_than_its_entry_says_is_the_usual_error():
    image = big_cubin(12 << 20)
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(image[:-64])
    raw = decompress.zstd_parts(frame, len(image), C.SPARSE_PREFIX, lambda h: C.table_span(h, len(image)))
    assert raw is None  # no content size in the frame: not read sparsely
    assert decompress.zstd_reused(frame, len(image)) is None


def test_threads_decode_into_buffers_of_their_own():
    images = [big_cubin((1 + i % 3) << 20, kernels=(f"_Z{i}kv", "_Z1xv")) for i in range(6)]
    entries = [_entry_of(im) for im in images]
    errors: list[str] = []

    def work(i: int) -> None:
        for _ in range(5):
            blob, e = entries[i]
            if _decoded(blob, e) != _whole(images[i]):
                errors.append(f"image {i}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(images))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_parsing_a_40_mb_cubin_holds_a_fraction_of_it(tmp_path):
    """The process's peak memory while a 40 MB zstd cubin is decoded and parsed grows by much
    less than the cubin (before: by all of it)."""
    script = tmp_path / "peak.py"
    script.write_text(
        "import sys; sys.path[:0] = sys.argv[1:]\n"
        "import gc, test_cubin_images as T\n"
        "blob, e = T._entry_of(T.big_cubin(40 << 20))\n"
        "gc.collect()\n"
        "def hwm():\n"
        "    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
        "open('/proc/self/clear_refs', 'w').write('5')\n"
        "before = hwm()\n"
        "d = T.decode_entry(blob, e, kernels=True)\n"
        "assert d.decode_error is None and len(d.kernels) == 2, d\n"
        "print((hwm() - before) // 1024)\n"
    )
    out = subprocess.run(
        [sys.executable, str(script), os.path.dirname(__file__), TESTS],
        capture_output=True,
        text=True,
        check=True,
    )
    grew_mb = int(out.stdout.strip())
    assert grew_mb < 24, f"peak grew by {grew_mb} MB decoding a 40 MB cubin"
