#!/usr/bin/env python3
"""Benchmarks with the peers named in the issues, each pair measured in one run, on this machine.

    python scripts/bench.py inventory [FILE...]   # issue 2: listing vs cuobjdump, --kernels vs cubloaty
    python scripts/bench.py scan ...              # issue 4: see scripts/bench_scan.py
    python scripts/bench.py table ...             # issue 26: every row of its table (scripts/bench_table.py)
    python scripts/bench.py micro-cubin [FILE...] # the cubin reader vs pyelftools on the same cubins

Default files: libtorch_cuda.so (torch==2.14.1) and libcublasLt.so.13 (nvidia-cublas==13.1.1.3),
unpacked from the wheels in .cache/corpus by scripts/fetch_corpus.sh. Every command runs as a child
process; wall time is measured around it and peak memory is the child's own ru_maxrss (os.wait4).
The page cache is warmed before every command so no tool pays for the disk (cuobjdump's
5.6 GB peak evicts the file otherwise). Prints ratios; asserts
nothing (targets: listing >= 20x faster than cuobjdump at < 1/10 of its peak memory; --kernels
>= 5x faster than cubloaty with the same unique kernel names per (section, arch)).
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
DEFAULT_FILES = [
    os.path.join(ROOT, ".cache/corpus/x/torch/lib/libtorch_cuda.so"),
    os.path.join(ROOT, ".cache/corpus/x/nvidia/cu13/lib/libcublasLt.so.13"),
]


GNU_TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None


def run(cmd, stdout_path=None, warm_path=None):
    """(seconds, peak RSS in MB, exit code) of one child process.

    Peak memory comes from GNU time's wait4 on a child it forks itself: a child forked straight
    from this (large) Python process would report this process's high-water mark as its own."""
    if warm_path:  # cuobjdump's 5.6 GB can evict the file from the page cache: re-warm every time
        warm(warm_path)
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    fd, rss_file = tempfile.mkstemp(prefix="fatbin-bench-rss-")
    os.close(fd)
    wrapped = [GNU_TIME, "-f", "%M", "-o", rss_file, *cmd] if GNU_TIME else cmd
    t0 = time.perf_counter()
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed by pip: byte code compiled once, reused
    proc = subprocess.Popen(wrapped, stdout=out, stderr=subprocess.DEVNULL, env=env)
    _pid, status, ru = os.wait4(proc.pid, 0)
    dt = time.perf_counter() - t0
    if stdout_path:
        out.close()
    peak_kb = ru.ru_maxrss
    if GNU_TIME:
        with open(rss_file) as fh:
            lines = [w for w in fh.read().split() if w.isdigit()]
        peak_kb = int(lines[-1]) if lines else peak_kb
    os.unlink(rss_file)
    return dt, peak_kb / 1024, os.waitstatus_to_exitcode(status)


def warm(path):
    with open(path, "rb") as fh:
        while fh.read(64 << 20):
            pass


def ours_cmd(*args):
    return [sys.executable, "-m", "fatbin_inspect", *args]


def unique_kernels_ours(doc):
    by = defaultdict(set)
    for f in doc["files"]:
        for fb in f["fatbins"]:
            for e in fb["entries"]:
                if e["kernels"] is not None and e["kind"] in ("sass", "ptx"):
                    by[(fb["section"], e["arch"])].update(k["name"] for k in e["kernels"])
    return {k: len(v) for k, v in by.items()}


def unique_kernels_cubloaty(doc):
    return {(c["section"], c["arch"]): c["kernels"] for c in doc.get("components", []) if not c.get("opaque")}


def bench_inventory(files):
    from conftest import find_cuobjdump

    cuobjdump = find_cuobjdump()
    cubloaty = subprocess.run([sys.executable, "-c", "import cubloaty"], capture_output=True).returncode == 0
    tmp = tempfile.mkdtemp(prefix="fatbin-bench-")
    for path in files:
        if not os.path.exists(path):
            print(f"skip {path}: not found (scripts/fetch_corpus.sh)")
            continue
        print(f"\n== {os.path.relpath(path, ROOT)} ({os.path.getsize(path) / 2**20:.0f} MB)")
        warm(path)
        t_ours, m_ours, rc = run(ours_cmd(path, "--format", "json"), os.path.join(tmp, "list.json"), path)
        nent = sum(
            len(fb["entries"])
            for f in json.load(open(os.path.join(tmp, "list.json")))["files"]
            for fb in f["fatbins"]
        )
        print(f"list       fatbin-inspect   {t_ours:7.2f} s  {m_ours:7.0f} MB  rc={rc}  {nent} entries")
        if cuobjdump:
            t_c, m_c, rc_c = run([cuobjdump, "-lelf", "-lptx", path], None, path)
            print(f"list       cuobjdump        {t_c:7.2f} s  {m_c:7.0f} MB  rc={rc_c}")
            print(
                f"RATIO list: {t_c / t_ours:.1f}x faster than cuobjdump (target >= 20x), "
                f"peak memory {m_ours / m_c:.3f} of cuobjdump's (target < 0.1)"
            )
        else:
            print("cuobjdump not found: pip install nvidia-cuda-cuobjdump==13.5.37")
        t_k, m_k, rc = run(ours_cmd(path, "--kernels", "--format", "json"), os.path.join(tmp, "k.json"), path)
        ours_k = unique_kernels_ours(json.load(open(os.path.join(tmp, "k.json"))))
        print(f"--kernels  fatbin-inspect   {t_k:7.2f} s  {m_k:7.0f} MB  rc={rc}")
        if cubloaty:
            t_b, m_b, rc_b = run(
                [
                    sys.executable,
                    "-m",
                    "cubloaty",
                    path,
                    "--format",
                    "json",
                    "--top",
                    "100000000",
                    "--mangled",
                ],
                os.path.join(tmp, "cb.json"),
                path,
            )
            theirs = unique_kernels_cubloaty(json.load(open(os.path.join(tmp, "cb.json"))))
            same = {k: v for k, v in theirs.items() if ours_k.get(k) == v}
            diff = {k: (ours_k.get(k), v) for k, v in theirs.items() if ours_k.get(k) != v}
            print(f"--kernels  cubloaty         {t_b:7.2f} s  {m_b:7.0f} MB  rc={rc_b}")
            print(
                f"RATIO --kernels: {t_b / t_k:.1f}x faster than cubloaty (target >= 5x); unique kernel names per "
                f"(section, arch): {len(same)}/{len(theirs)} equal" + (f"; differ: {diff}" if diff else "")
            )
        else:
            print("cubloaty not installed: pip install cubloaty")


def cubin_images(files):
    """The decoded cubins of ``files`` (default: the committed fixtures), as bytes."""
    from fatbin_inspect.formats.binio import open_blob
    from fatbin_inspect.inventory.options import Options
    from fatbin_inspect.inventory.payloads import payload
    from fatbin_inspect.inventory.reader import inspect_pairs

    out = []
    for path in files:
        blob = open_blob(path)
        for rec, b in inspect_pairs(path, blob, Options(), 0):
            out += [
                payload(b, e) for fb in rec.fatbins for e in fb.entries if e.kind == "sass" and b is not None
            ]
    return out


def _pyelftools_kernels(data: bytes):
    """What parse_cubin(kernels=True) reads, through pyelftools: e_flags, notes, kernel symbols."""
    import io

    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(data))
    flags = elf.header["e_flags"]
    names = [s.name for s in elf.iter_sections()]
    symtab = elf.get_section_by_name(".symtab")
    kernels = []
    if symtab is not None:  # pyelftools drops st_other's STO_CUDA_ENTRY bit (0x10): read it raw
        raw, size = symtab.data(), symtab["sh_entsize"]
        kernels = [
            sym.name
            for i, sym in enumerate(symtab.iter_symbols())
            if sym["st_info"]["type"] == "STT_FUNC" and raw[i * size + 5] & 0x10
        ]
    return flags, names, kernels


def bench_micro_cubin(files, rounds=7):
    """Decode every cubin once per round with each reader, alternating; median seconds per reader."""
    from fatbin_inspect.formats.cubin import parse_cubin

    cubins = cubin_images(files)
    if not cubins:
        sys.exit("micro-cubin: no cubin in the files given")
    try:
        import elftools  # noqa: F401
    except ImportError:
        sys.exit("micro-cubin: pyelftools is the peer: pip install pyelftools")
    ours, theirs = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for c in cubins:
            parse_cubin(c, kernels=True)
        t1 = time.perf_counter()
        for c in cubins:
            _pyelftools_kernels(c)
        theirs.append(time.perf_counter() - t1)
        ours.append(t1 - t0)
    ours.sort()
    theirs.sort()
    mo, mt = ours[rounds // 2], theirs[rounds // 2]
    same = sum(
        sorted(k.name for k in parse_cubin(c, kernels=True)[1] or ()) == sorted(_pyelftools_kernels(c)[2])
        for c in cubins
    )
    print(
        f"{len(cubins)} cubins, {sum(map(len, cubins)) / 1e6:.1f} MB, median of {rounds} alternating rounds"
    )
    print(
        f"  cubin.parse_cubin(kernels=True): {mo * 1e3:.1f} ms   pyelftools (sections + symbols): {mt * 1e3:.1f} ms"
    )
    print(
        f"RATIO micro-cubin: {mt / mo:.1f}x faster than pyelftools; same kernel names in {same}/{len(cubins)} cubins"
    )


def main(argv):
    what = argv[1] if len(argv) > 1 else "inventory"
    if what == "inventory":
        bench_inventory(argv[2:] or DEFAULT_FILES)
    elif what == "table":  # issue 26: every row of its table
        os.execv(sys.executable, [sys.executable, os.path.join(ROOT, "scripts", "bench_table.py"), *argv[2:]])
    elif what == "micro-cubin":
        bench_micro_cubin(argv[2:] or sorted(glob.glob(os.path.join(ROOT, "fixtures", "bin", "*"))))
    elif what == "scan":
        os.execv(sys.executable, [sys.executable, os.path.join(ROOT, "scripts", "bench_scan.py"), *argv[2:]])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
