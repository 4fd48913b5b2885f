"""Inputs into records: every ``FileReport`` under the paths given, in walk order."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from fatbin_inspect.errors import UsageError
from fatbin_inspect.formats.model import ARCHIVE_FORMATS, FileError, FileReport
from fatbin_inspect.inventory import member_path
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path
from fatbin_inspect.inventory.walk import StatItem, iter_files, iter_stat

if TYPE_CHECKING:
    from fatbin_inspect.scanning.cache import Key

Progress = Callable[[int, int, int], None]


def iter_reports(
    paths: Iterable[str],
    opts: Options,
    progress: Progress | None = None,
    cache: RecordCache | None = None,
) -> Iterator[FileReport]:
    """Every record under ``paths``. With a ``progress`` callback ``(files done, files, bytes
    done)``, the trees are walked first, so the bar knows how many files there are. A path in
    the form the tool prints for archive members (``dist/x.whl!pkg/lib.so``) reads that member
    (and what it holds) in place. With a ``cache``, the records of an unchanged file come from
    the scan cache (``RecordCache``)."""
    paths = list(paths)
    if progress is None:
        for root in paths:
            yield from _root_reports(root, opts, cache)
        return
    from fatbin_inspect.containers.index import is_index_input

    members = [p for p in paths if is_member_root(p) or is_index_input(p)]  # (not walked: first)
    for root in members:
        yield from _root_reports(root, opts, None)
    walked = [item for root in paths if root not in members for item in iter_stat(root)]
    yield from _with_progress(walked, opts, progress, cache)


def _root_reports(root: str, opts: Options, cache: RecordCache | None) -> Iterator[FileReport]:
    from fatbin_inspect.containers.index import is_index_input

    if is_index_input(root):  # pkg:pypi/NAME@VERSION, -r FILE: read from the index
        from fatbin_inspect.judging import index_inputs

        yield from index_inputs.reports(root, opts)
        return
    if is_member_root(root):
        yield from member_reports(root, opts)
        return
    for item in iter_stat(root):
        yield from _reports(item, opts, cache)


def _with_progress(
    walked: list[StatItem], opts: Options, progress: Progress, cache: RecordCache | None
) -> Iterator[FileReport]:
    """The records of the walked files, telling ``progress`` after each."""
    done = 0
    for i, item in enumerate(walked):
        yield from _reports(item, opts, cache)
        with contextlib.suppress(OSError):
            done += 0 if item[3] else os.path.getsize(item[0])
        progress(i + 1, len(walked), done)


def _reports(item: StatItem, opts: Options, cache: RecordCache | None) -> Iterator[FileReport]:
    path, apath, st, skip = item
    if skip:
        yield FileReport(path=path, format="unknown", size=0, error=FileError(skip))
    elif cache is None:
        yield from inspect_path(path, opts)
    else:
        yield from cache.reports(path, apath, st, opts)


class RecordCache:
    """Every record ``inventory.reader.inspect_path`` gives for a regular file, kept in the scan
    cache (``scanning.cache``: same file, same key by device, inode, size, mtime and ctime) under
    the inventory options and ``KIND``, rows of their own: a scan's rows keep only the records
    with device code, the gate's keep the archive and host records too (its inputs). A file whose
    records hold an error (unreadable, changed while read, malformed) is read again next time,
    never cached, nor one whose stat changed while it was read. ``hits``: files read from it."""

    KIND = "every-record"

    def __init__(self, directory: str | None, opts: Options):
        from fatbin_inspect.scanning import options_fingerprint
        from fatbin_inspect.scanning.cache import ScanCache

        self.cache = ScanCache(directory, f"{options_fingerprint(opts)}|{self.KIND}")
        self.hits = 0
        self.files = 0

    def reports(
        self, path: str, apath: str, st: os.stat_result | None, opts: Options
    ) -> Iterator[FileReport]:
        """The records of the file ``path`` (``apath``: its absolute path, the cache key; ``st``
        its lstat from the walk, None for a root)."""
        from fatbin_inspect.scanning.cache import stat_key

        st = _regular(path, st) if self.cache.enabled else None
        if st is None:
            yield from inspect_path(path, opts)
            return
        self.files += 1
        key = stat_key(st)
        found = self._hit(path, apath, key)
        if found is not None:
            self.hits += 1
            yield from found
            return
        records = tuple(inspect_path(path, opts))
        if all(r.error is None for r in records) and _same_stat(path, key):
            self.cache.put(apath, key, records, base=path)
        yield from records

    def _hit(self, path: str, apath: str, key: Key) -> tuple[FileReport, ...] | None:
        """The cached records of ``apath`` shown on ``path``; None on a miss."""
        from fatbin_inspect.scanning.cache import MISS

        hit = self.cache.get(apath, key)
        found = MISS if hit is MISS or hit is None else hit.reports(path)
        return found if isinstance(found, tuple) else None

    def close(self) -> None:
        self.cache.close()


def _regular(path: str, st: os.stat_result | None) -> os.stat_result | None:
    """``st`` (else a fresh stat) when ``path`` is a regular file, else None."""
    import stat

    try:
        st = os.stat(path) if st is None else st
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _same_stat(path: str, key: Key) -> bool:
    """The file's stat key is still ``key`` (it did not change while read)."""
    from fatbin_inspect.scanning.cache import stat_key

    try:
        return stat_key(os.stat(path)) == key
    except OSError:
        return False


def verdict_options(kernels: bool) -> Options:
    """Verdicts need only the entry headers and the small device-link cubins (``probe_small``);
    ``--kernels`` decodes every payload for kernel names."""
    return Options(kernels=kernels, details=kernels, resources=False, probe_small=True)


def parse_env(pairs: Iterable[str], inherit: bool) -> dict[str, str]:
    """``--env NAME=VALUE`` pairs, over this process's ``CUDA_*`` variables when ``inherit``."""
    from fatbin_inspect.errors import UsageError

    env = {k: v for k, v in os.environ.items() if k.startswith("CUDA_")} if inherit else {}
    for p in pairs:
        if "=" not in p:
            raise UsageError(f"--env {p!r}: expected NAME=VALUE, e.g. CUDA_FORCE_PTX_JIT=1")
        k, v = p.split("=", 1)
        env[k.strip()] = v
    return env


def is_member_root(path: str) -> bool:
    """``CONTAINER!MEMBER`` naming a member of a file on disk (no file of that name exists)."""
    if os.path.lexists(path) or not member_path.is_member(path):
        return False
    return os.path.isfile(member_path.container(path))


def member_reports(path: str, opts: Options) -> Iterator[FileReport]:
    """The records of one archive member named ``CONTAINER!MEMBER[!...]``: the member's and those
    of members inside it. The container is read with every member reported (the one asked for
    may hold no device code), and only the records at or under ``path`` are kept; a member the
    container does not hold is an error record naming it."""
    import dataclasses

    found = False
    for r in inspect_path(member_path.container(path), dataclasses.replace(opts, members="all")):
        if r.path == path or r.path.startswith(path + "!"):
            found = True
            if r.fatbins or r.error or opts.members == "all" or r.path == path:
                yield r
    if not found:
        yield FileReport(
            path=path, format="unknown", size=0, error=FileError("no such member in its container")
        )


def check_roots(paths: Iterable[str]) -> None:
    """Each path exists, names a member of a file that does (``CONTAINER!MEMBER``), an image
    (``DIR:TAG``, ``oci-archive:FILE:TAG``, ``docker://HOST/REPO:TAG``, ``-``) or a package on the
    index (``pkg:pypi/...``, a ``-r`` file): a usage error otherwise, before anything is read."""
    from fatbin_inspect.containers.index import REQUIREMENT_PREFIX, is_purl
    from fatbin_inspect.inventory.roots import resolve_roots
    from fatbin_inspect.inventory.walk import image_ref

    for p in paths:
        if is_purl(p):
            from fatbin_inspect.containers.index.purl import parse

            parse(p)
        elif p.startswith(REQUIREMENT_PREFIX):
            if not os.path.isfile(req := p.removeprefix(REQUIREMENT_PREFIX)):
                raise UsageError(f"{req}: no such file")
        elif image_ref(p) is not None:
            resolve_roots([p])  # an image as skopeo names it: checked as list and scan check it
        elif not os.path.lexists(p) and not is_member_root(p):
            raise UsageError(f"{p}: no such file or directory")


def iter_pieces(
    paths: Iterable[str],
    opts: Options,
    file_pieces: Callable[..., Iterator[bytes]],
    fatbins_fragment: Callable[..., Any],
    on_record: Callable[[FileReport], None],
) -> Iterator[Iterator[bytes]]:
    """``--kernels`` of large inputs: the encoded ``files[]`` elements under ``paths``, one
    iterator of pieces per file. A large host binary's fatbins are decoded *and encoded* by
    worker processes (``inventory.decoding.iter_decoded`` with ``fatbins_fragment``), so 150k
    kernel records never cross a process boundary and each piece can be written as it arrives;
    other files are encoded whole (``file_pieces(record)``). ``on_record`` sees every record
    (or the header-only record of a file decoded in pieces) first."""
    from fatbin_inspect.containers.index import is_index_input

    for root in paths:
        if is_index_input(root):
            from fatbin_inspect.judging import index_inputs

            for r in index_inputs.reports(root, opts):
                on_record(r)
                yield file_pieces(r)
            continue
        for path, skip in iter_files(root):
            if skip:
                r = FileReport(path=path, format="unknown", size=0, error=FileError(skip))
                on_record(r)
                yield file_pieces(r)
                continue
            yield from _file_pieces(path, opts, file_pieces, fatbins_fragment, on_record)


def _file_pieces(
    path: str,
    opts: Options,
    file_pieces: Callable[..., Iterator[bytes]],
    fatbins_fragment: Callable[..., Any],
    on_record: Callable[[FileReport], None],
) -> Iterator[Iterator[bytes]]:
    import dataclasses

    from fatbin_inspect.errors import InputError
    from fatbin_inspect.formats.binio import open_blob
    from fatbin_inspect.inventory import decoding

    if os.path.getsize(path) >= decoding.PARALLEL_MIN_BYTES and _is_binary(path):
        reports = list(inspect_path(path, dataclasses.replace(opts, kernels=False, details=False)))
        r = reports[0]
        if len(reports) == 1 and r.fatbins and r.format not in ARCHIVE_FORMATS:
            try:
                blob = open_blob(path)
            except InputError:
                blob = None
            if blob is not None and decoding.parallel_worthwhile(blob, r.fatbins, opts, path):
                on_record(r)
                yield file_pieces(r, decoding.iter_decoded(blob, r.fatbins, opts, path, fatbins_fragment))
                return
    for r in inspect_path(path, opts):
        on_record(r)
        yield file_pieces(r)


def _is_binary(path: str) -> bool:
    """A host binary or raw fatbin (not an archive, whose members would be inflated twice)."""
    from fatbin_inspect.containers import detect

    try:
        with open(path, "rb") as fh:
            return detect(fh.read(512)) in ("elf", "pe", "coff", "fatbin")
    except OSError:
        return False
