"""What ``extract`` writes: every selected image of the inputs, decompressed, with its file name.

Names: ``<file>.<fatbin#>.<entry#>.<arch>.cubin|.ptx`` (``<file>``: the record's base name, made
safe, plus a hash of its whole path when another record of the run has the same base name).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Iterator

from fatbin_inspect.errors import InputError
from fatbin_inspect.formats.binio import Blob, open_blob
from fatbin_inspect.formats.decompress import Budget
from fatbin_inspect.formats.model import Entry, FileReport
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.payloads import payload
from fatbin_inspect.inventory.reader import inspect_pairs
from fatbin_inspect.inventory.walk import iter_files

SUFFIX = {"sass": ".cubin", "ptx": ".ptx", "ltoir": ".ltoir", "tile": ".tileir", "unknown": ".bin"}
MAX_STEM = 160  # bytes of a base name kept in output names (NAME_MAX is 255 with the suffixes)


@dataclasses.dataclass(frozen=True)
class Image:
    """One image to write: its output ``name``, bytes, and where it came from."""

    name: str
    data: bytes
    path: str
    fatbin: int
    entry: int
    arch: str
    kind: str


@dataclasses.dataclass
class Tally:
    """Inputs read, and those of which nothing could be read (the exit code's facts)."""

    inputs: int = 0
    failed: int = 0


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", name).strip("._") or "file"


def wanted(arches: Iterable[str]) -> tuple[set[str], set[tuple[int, str]]]:
    """``--arch`` values: named targets (``SM_90A`` -> ``sm_90a``, ``compute_120f``) match that
    image only; a bare number (``90``, ``9.0``, ``100a``) matches the cubin and the PTX of that SM."""
    from fatbin_inspect.release.policy import normalize_arch, split_arch

    names, numbers = set(), set()
    for a in arches:
        arch = normalize_arch(a, "--arch")
        if a.strip().lower().startswith(("sm_", "compute_")):
            names.add(arch)
        else:
            _kind, sm, variant = split_arch(arch)
            numbers.add((sm, variant))
    return names, numbers


def images(
    paths: Iterable[str],
    arches: Iterable[str],
    kinds: Iterable[str],
    tally: Tally,
    seen: list[str],
    warn: Callable[[str], None],
    note_error: Callable[[FileReport], None],
) -> Iterator[Image]:
    """Every selected image under ``paths``, decompressed within the record's budget (PTX without
    its trailing NULs); ``seen`` gets every path read, ``tally`` the inputs and failures. A bad
    ``--arch`` is a usage error here, before anything is read or written."""
    names, numbers = wanted(arches)
    return _images(paths, names, numbers, set(kinds), tally, seen, warn, note_error)


def _images(
    paths: Iterable[str],
    names: set[str],
    numbers: set[tuple[int, str]],
    kinds: set[str],
    tally: Tally,
    seen: list[str],
    warn: Callable[[str], None],
    note_error: Callable[[FileReport], None],
) -> Iterator[Image]:
    stems: dict[str, str] = {}  # output stem -> the record path that owns it in this run
    opts, wanted = Options(image_bytes=True), _Wanted(names, numbers, kinds)
    for root in paths:
        for path, skip in iter_files(root):
            if skip:
                continue
            tally.inputs += 1
            seen.append(path)
            try:
                blob = open_blob(path)
            except InputError as exc:
                warn(f"{path}: {exc}")
                tally.failed += 1
                continue
            bad = False
            for rec, b in inspect_pairs(path, blob, opts, 0):
                note_error(rec)
                bad |= rec.error is not None and not rec.fatbins
                yield from _record_images(rec, b, _stem(rec.path, stems), wanted, warn)
            tally.failed += bad


@dataclasses.dataclass(frozen=True)
class _Wanted:
    """Which entries are extracted: by arch name or (number, variant), and by kind (empty: all)."""

    names: Iterable[str]
    numbers: Iterable[tuple[int, str]]
    kinds: Iterable[str]

    def __call__(self, e: Entry) -> bool:
        if self.kinds and e.kind not in self.kinds:
            return False
        return not (self.names or self.numbers) or e.arch in self.names or (e.sm, e.variant) in self.numbers


def _record_images(
    rec: FileReport, b: Blob | None, stem: str, wanted: _Wanted, warn: Callable[[str], None]
) -> Iterator[Image]:
    """The wanted images of one record, its payloads read from ``b`` (one decompression budget
    per record: it bounds decompression bombs)."""
    if b is None:  # an archive's or an image's own record: its files come as records of their own
        if rec.fatbins:
            warn(f"{rec.path}: its bytes were not kept: no image of it extracted")
        return
    budget = Budget(b.size)
    for fi, fb in enumerate(rec.fatbins):
        for ei, e in enumerate(fb.entries):
            if not wanted(e):
                continue
            try:
                data = payload(b, e, budget)
            except InputError as exc:
                warn(f"{rec.path} at offset {e.offset:#x}: {exc.message}")
                continue
            if e.kind == "ptx":
                data = data.split(b"\0", 1)[0]
            name = f"{stem}.{fi}.{ei}.{safe_name(e.arch)}{SUFFIX[e.kind]}"
            yield Image(name, data, rec.path, fi, ei, e.arch, e.kind)


def _stem(record_path: str, stems: dict[str, str]) -> str:
    """The base name of a record (file or member), made safe; unique among this run's records."""
    stem = safe_name(os.path.basename(record_path.replace("!", "/")))[:MAX_STEM]
    owner = stems.setdefault(stem, record_path)
    if owner != record_path:
        digest = hashlib.sha256(record_path.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        stem = f"{stem}-{digest}"
        stems.setdefault(stem, record_path)
    return stem
