"""Inventory: from a path to ``FileReport`` records (containers -> fatbin/cubin/ptx parsers).

One input yields one record, plus, for archives and wheels, one record per member that holds
device code (named ``CONTAINER!MEMBER``, see ``member_path``). Errors become the record's
``error``: one bad file or member never stops the rest. Each top-level input gets one ``Budget``
(inflated bytes and time) shared by all its nesting levels.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import mmap
import os
import signal
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from fatbin_inspect.containers import (
    ARCHIVES,
    STATIC_CUDART_MARKER,
    Layout,
    Region,
    archive_format,
    detect,
    has_static_cudart,
    machine_of,
    open_archive,
)
from fatbin_inspect.containers import layout as layout_of
from fatbin_inspect.errors import (
    BudgetExceeded,
    CorruptError,
    InputError,
    LimitExceeded,
    NotLoaded,
    TruncatedError,
    UnreadableError,
)
from fatbin_inspect.formats import cubin as cubin_mod
from fatbin_inspect.formats import fatbin as fatbin_mod
from fatbin_inspect.formats import mapguard
from fatbin_inspect.formats import ptx as ptx_mod
from fatbin_inspect.formats.binio import Blob, gaps, open_blob
from fatbin_inspect.formats.decompress import MAX_DECODED, Budget, decode, zstd_parts, zstd_reused
from fatbin_inspect.formats.demangle import demangle
from fatbin_inspect.formats.model import (
    KIND_PTX,
    KIND_SASS,
    KIND_TILE,
    Entry,
    Fatbin,
    FileError,
    FileReport,
    Kernel,
    bare_entry,
)
from fatbin_inspect.inventory import member_path, spill, walk, workers

if TYPE_CHECKING:
    from fatbin_inspect.containers import archives, oci

MAX_DEPTH = 4  # wheel inside a tar layer inside a tar is depth 2; deeper is not a real layout


@dataclass(frozen=True)
class Options:
    kernels: bool = False  # decode payloads: kernel names and per-kernel resources
    details: bool = False  # decode cubins for ABI/type/toolkit/device-link (implied by kernels)
    scan_hidden: bool = True  # magic scan outside the fatbin sections (docs/format.md §1.4)
    members: str = "device"  # "device": archive members with device code; "all": every candidate
    jobs: int = 0  # processes for decoding one large file's payloads; 0 = one per CPU, 1 = none
    resources: bool = True  # with kernels: registers, shared, constant0, max threads per kernel
    probe_small: bool = False  # decode only small cubins (<= PROBE_MAX): tells device-link output
    # the platform of the images read: what a multi-platform index gives and each image's config
    # must say; "": linux/amd64 from an index, any single-platform image as it is
    platform: str = ""
    digests: bool = False  # FileReport.sha256 of each file and archive read whole (the SBOM; off: no hashing)


def as_options(o: Options | Mapping[str, Any] | None) -> Options:
    """``o`` as ``Options``: a dict of its fields (what a scan hands its workers), None the defaults."""
    return o if isinstance(o, Options) else Options(**(o or {}))


def _layout_dir(path: str) -> bool:
    """An OCI image layout folder. ``containers.oci`` and ``archives`` (and tarfile) are imported
    where an image or an archive is read: ``list`` of one ELF file starts ~5 ms sooner."""
    if not os.path.isdir(path):
        return False
    from fatbin_inspect.containers import oci

    return oci.is_layout_dir(path)


def inspect_path(path: str, opts: Options = Options()) -> Iterator[FileReport]:
    """Records for one file on disk, an OCI image layout folder or an image reference
    (``walk.image_ref``: ``DIR:TAG``, ``oci-archive:FILE:TAG``, ``docker://HOST/REPO:TAG``...);
    other folders are walked by ``scan``."""
    ref = walk.image_ref(path)
    if ref is not None and ref.transport == "stdin":
        yield from _stdin_records(path, opts)
        return
    if ref is not None or _layout_dir(path):
        yield from _image_input_records(path, ref, opts)
        return
    try:
        blob = open_blob(path)
    except InputError as exc:
        size = _size_or_zero(path)
        yield FileReport(path=path, format="unknown", size=size, error=_err(exc))
        return
    jobs = workers.processes(opts.jobs)
    spans = _worth_splitting(path, blob, opts, jobs)
    if spans:
        yield from unchanged(path, blob.size, _inspect_zip_parallel(path, spans, opts, jobs))
        return
    yield from unchanged(path, blob.size, inspect_blob(path, blob, opts, 0))


def _worth_splitting(path: str, blob: Blob, opts: Options, jobs: int) -> list[tuple[int, int, int]] | None:
    """The spans a large zip on disk is inspected in by ``jobs`` processes, or None."""
    if jobs > 1 and blob.size >= SPLIT_BYTES and detect(blob.head(512)) == "zip":
        return zip_spans(path, opts.members == "all", jobs * 2, SPAN_BYTES)
    return None


def _stdin_records(path: str, opts: Options) -> Iterator[FileReport]:
    """Records of ``-``: standard input, copied once (``walk.stdin_blob``)."""
    try:
        blob = walk.stdin_blob()
    except InputError as exc:
        yield FileReport(path=path, format="unknown", size=0, error=_err(exc))
        return
    yield from inspect_blob(path, blob, opts, 0)


def _image_input_records(path: str, ref: walk.ImageRef | None, opts: Options) -> Iterator[FileReport]:
    """Records of an image input (a layout folder or a reference), the input's record first."""
    try:
        store, select = open_image(path, ref)
    except InputError as exc:
        yield FileReport(path=path, format="oci", size=0, error=_err(exc))
        return
    yield from _container_first(path, _inspect_image(path, store, opts, 0, 0, select=select))


def unchanged(path: str, size: int, records: Iterable[FileReport]) -> Iterator[FileReport]:
    """``records`` of one mapped file as long as it did not shrink under them: once a read
    past its new end was absorbed (``formats.mapguard``), the rest is one error record for the
    file (what came before was read from the bytes as they were)."""
    before = mapguard.faults()
    for rec in records:
        if mapguard.faults() != before:
            yield changed_record(path, size)
            return
        yield rec
    if mapguard.faults() != before:
        yield changed_record(path, size)


def changed_record(path: str, size: int) -> FileReport:
    now = _size_or_zero(path)
    return FileReport(
        path=member_path.escape(path),
        format="unknown",
        size=now,
        error=FileError(f"the file shrank while it was read ({size:,} -> {now:,} bytes): not inspected"),
    )


# a zip this large (a 500 MB wheel) is inspected by worker processes, each inflating about
# 1/(2 jobs) of its candidate members (at least SPAN_BYTES) straight into the parsers
SPLIT_BYTES = 64 << 20
SPAN_BYTES = 32 << 20


def zip_spans(path: str, all_members: bool, parts: int, min_bytes: int) -> list[tuple[int, int, int]] | None:
    """Split a zip on disk (a large wheel) into about ``parts`` work units for ``inspect_zip_span``:
    contiguous ``(start, stop, inflated bytes)`` ranges of central-directory indices covering it all, cut between
    wanted members so that each holds about ``1/parts`` of their inflated bytes and at least
    ``min_bytes``; a member larger than that is a unit of its own. None: not worth splitting, or
    the directory is unreadable (the whole-file path then reports that as it always has)."""
    from fatbin_inspect.containers import archives

    try:
        with archives.open_zip(path) as zf:
            infos = zf.infolist()
    except (InputError, OSError):
        return None
    wanted = [(i, info.file_size) for i, info in enumerate(infos) if archives.zip_wanted(info, all_members)]
    total = sum(size for _, size in wanted)
    target = max(min_bytes, total // max(1, parts))
    spans, start, acc = [], 0, 0
    for i, size in wanted:
        if acc >= min_bytes and acc + size > target:
            spans.append((start, i, acc))
            start, acc = i, 0
        acc += size
    spans.append((start, len(infos), acc))
    return spans if len(spans) > 1 else None


def _inspect_zip_parallel(path: str, spans, opts: Options, jobs: int) -> Iterator[FileReport]:
    """``inspect_blob`` of a large zip on disk with its spans inspected by ``jobs`` processes: the
    same records in the same order (the zip's own record first, its notes those of every span up
    to the first whose walk ended in an error, which is the record's error and ends the members
    there, as in one walk)."""
    import concurrent.futures as cf

    from fatbin_inspect.inventory import workers

    serial = dataclasses.replace(opts, jobs=1)
    try:
        pool = workers.pool(jobs)
    except OSError:
        yield from inspect_blob(path, open_blob(path), opts, 0)
        return
    with pool:
        futures = [workers.submit(pool, _span_records, path, span[:2], serial) for span in spans]
        notes: list[str] = []
        members: list[FileReport] = []
        own: FileReport | None = None
        try:
            for fut in futures:
                records = fut.result()
                own = records[0]
                members += records[1:]
                notes += own.notes
                if own.error is not None:
                    break
        except cf.process.BrokenProcessPool:
            yield from inspect_blob(path, open_blob(path), opts, 0)
            return
        finally:
            for fut in futures:
                fut.cancel()
    if own is None:  # no span at all (zip_spans gives at least two)
        return
    sha256 = sha256_of(open_blob(path)) if opts.digests else None
    yield dataclasses.replace(own, notes=tuple(notes), sha256=sha256)
    yield from members


def _span_records(path: str, span: tuple[int, int], opts: Options) -> list[FileReport]:
    """Pool entry point: ``inspect_zip_span`` of one span, the zip's own record first."""
    from fatbin_inspect.containers import archives

    blob = open_blob(path)
    try:
        zf = archives.open_zip(blob.stream())
    except InputError:
        zf = None
    return list(unchanged(path, blob.size, inspect_zip_span(path, blob, opts, span, zf)))


def zip_member_blob(path: str, name: str) -> Blob | None:
    """The bytes of the member ``name`` of the zip (a wheel) on disk at ``path``, that member
    alone inflated (within the usual member bounds); None when the file is no zip, the member is
    not there or does not inflate. What the judging reads to name a member's kernels when only
    some of its fatbins need decoding (``judging.verdicts.name_gap_kernels``)."""
    from fatbin_inspect.containers import archives

    try:
        blob = open_blob(path)
        if detect(blob.head(512)) != "zip":
            return None
        zf = archives.open_zip(blob.stream())
        infos = zf.infolist()
        index = next((i for i, info in enumerate(infos) if info.filename == name), None)
        if index is None:
            return None
        for m in archives.zip_members(blob, all_members=True, span=(index, index + 1), zf=zf):
            return m.blob if m.error is None else None
    except InputError:
        return None
    return None


def _size_or_zero(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _err(exc: Exception) -> FileError:
    if isinstance(exc, InputError):
        return FileError(exc.message, exc.offset)
    return FileError(f"internal error: {type(exc).__name__}: {exc}", None)


def inspect_blob(path: str, blob: Blob, opts: Options, depth: int) -> Iterator[FileReport]:
    """Records for one blob; an archive's own record comes first, then its members'."""
    shown = member_path.escape(path) if depth == 0 else path
    yield from _container_first(shown, inspect_pairs(path, blob, opts, depth))


def inspect_zip_span(
    path: str, blob: Blob, opts: Options, span: tuple[int, int], zf=None
) -> Iterator[FileReport]:
    """``inspect_blob`` of a zip, for the members whose central-directory index is in
    ``[start, stop)`` only (``zf``: its directory from ``archives.open_zip``, or None): a large
    wheel's members can be inspected as several work units. The zip's own record comes first as
    in ``inspect_blob``; concatenated in span order up to the first span whose own record holds an
    error (the iteration stopped there), the spans' member records are exactly ``inspect_blob``'s."""
    from fatbin_inspect.containers import archives

    budget = Budget(blob.size)
    members = archives.zip_members(blob, all_members=opts.members == "all", span=span, zf=zf, budget=budget)
    path = member_path.escape(path)
    reader = archives.MemberReader(members, "zip")
    yield from _container_first(path, _inspect_archive(path, "zip", blob, opts, 0, reader, budget, span=True))


def _container_first(path: str, pairs) -> Iterator[FileReport]:
    container = None
    members: list[FileReport] = []
    for rec, _blob in pairs:
        if rec.path == path:
            container = rec
        else:
            members.append(rec)
    if container is not None:
        yield container
    yield from members


def inspect_pairs(
    path: str, blob: Blob, opts: Options, depth: int, budget: Budget | None = None
) -> Iterator[tuple[FileReport, Blob]]:
    """(record, blob) pairs, streaming: each member's bytes can be dropped once the consumer moves
    on (a wheel's members are never all held at once). An archive's own record comes last.
    At ``depth`` 0, ``path`` is a real path (put in path form here) and ``budget`` starts."""
    disk = path if depth == 0 else None  # the file a second process may map too (``_hand_off``)
    if depth == 0:
        path = member_path.escape(path)
    if budget is None:
        budget = Budget(blob.size)
    fmt = detect(blob.head(512))
    store = _image_tar(blob) if fmt == "tar" and depth < MAX_DEPTH else None
    if store is not None:
        yield from _inspect_image(path, store, opts, depth, blob.size, budget)
        return
    if fmt in ARCHIVES:
        yield from _inspect_archive(path, fmt, blob, opts, depth, budget=budget)
        return
    read = blob  # the bytes the record's offsets point into (its compressed sections inflated)
    try:
        rec, read = _inspect_binary(path, fmt, blob, opts, budget, disk=disk)
    except InputError as exc:
        rec = FileReport(path=path, format=fmt, size=blob.size, error=_err(exc))
    except Exception as exc:  # a parser bug must cost one record, not the scan
        rec = FileReport(path=path, format=fmt, size=blob.size, error=_err(exc))
    yield (dataclasses.replace(rec, sha256=sha256_of(blob)) if opts.digests else rec), read


def _image_tar(blob: Blob):
    """The store of a tar that holds an image (OCI archive, ``docker save``; headers only: the
    image is read layer by layer), or None for any other tar (the plain walk reports its errors)."""
    from fatbin_inspect.containers import oci

    try:
        store = oci.TarStore.index(blob)
    except InputError:
        return None
    return store if oci.is_image_names(store.entries) else None


def _inspect_archive(
    path: str,
    fmt: str,
    blob: Blob,
    opts: Options,
    depth: int,
    reader=None,
    budget: Budget | None = None,
    span: bool = False,
):
    """(record, blob) pairs of an archive's members with device code (every candidate with
    ``members="all"``), then the archive's own record. ``reader``: one already open (a zip span's),
    else ``containers.open_archive`` opens it by ``fmt``; ``span``: a span of a zip, hashed
    whole by its caller."""
    budget = budget if budget is not None else Budget(blob.size)
    if depth >= MAX_DEPTH:
        deep = _err(LimitExceeded(f"archive nested deeper than {MAX_DEPTH} levels"))
        yield FileReport(path=path, format=fmt, size=blob.size, error=deep), blob
        return
    notes: list[str] = []
    error: FileError | None = None
    try:
        reader = reader if reader is not None else open_archive(fmt, blob, opts.members == "all", budget)
        for m in reader.members():
            if m.note:
                notes.append(m.note)
            yield from _member_pairs(
                member_path.join(path, m.name), m, reader.owner(m.name), opts, depth, budget
            )
    except BudgetExceeded as exc:
        if depth > 0:
            raise  # reported once, by the top-level input whose budget it was
        error = _err(exc)
    except Exception as exc:  # InputError, or a reader's bug: this archive's error
        error = _err(exc)
    digest = sha256_of(blob) if opts.digests and not span else None
    yield _archive_record(path, fmt, blob, reader, error, notes, digest), blob


def _archive_record(path: str, fmt: str, blob: Blob, reader, error, notes: list[str], digest) -> FileReport:
    """An archive's own record: its reader's notes first, then its members'; ``reader`` None
    when the archive could not be opened."""
    if reader is None:
        return FileReport(
            path, archive_format(fmt), blob.size, error=error, notes=tuple(notes), sha256=digest
        )
    return FileReport(
        path=path,
        format=reader.format,
        size=blob.size,
        error=error,
        notes=tuple(reader.notes + notes),
        package=reader.package,
        sha256=digest,
    )


def _member_pairs(child: str, m: archives.Member, owner, opts: Options, depth: int, budget: Budget):
    """The (record, blob) pairs worth reporting of one archive member, attributed to ``owner``
    (its package) unless a deeper level named one."""
    if m.error is not None:
        yield FileReport(path=child, format="unknown", size=0, error=_err(m.error), package=owner), None
        return
    if m.blob is None:
        return
    for rec, b in inspect_pairs(child, m.blob, opts, depth + 1, budget):
        if _worth_reporting(rec, opts):
            yield (rec if owner is None or rec.package else dataclasses.replace(rec, package=owner)), b


def open_image(path: str, ref: walk.ImageRef | None = None):
    """(store, tag or None) of an image input: a layout folder, an uncompressed image tar, either
    with a tag asked for, or a registry reference. ``InputError`` when it is no image."""
    from fatbin_inspect.containers import oci

    if ref is None:
        ref = walk.image_ref(path) or walk.ImageRef("path", path)
    if ref.transport == "docker":
        from fatbin_inspect.containers import registry

        return registry.open_store(ref.path), None
    if ref.transport == "stdin":
        raise UnreadableError("-: standard input is read by the command (scan -, list -)")
    if os.path.isdir(ref.path):
        if ref.transport not in ("oci", "path"):
            raise UnreadableError(f"{ref.path}: a folder, not an {ref.transport} file")
        return oci.open_store(ref.path), ref.select
    blob = open_blob(ref.path)
    if detect(blob.head(512)) != "tar":
        raise UnreadableError(f"{ref.path}: not an uncompressed image tar (OCI archive or docker save)")
    store = oci.TarStore.index(blob)
    if not oci.is_image_names(store.entries):
        raise UnreadableError(f"{ref.path}: a tar without index.json or manifest.json: no image")
    return store, ref.select


def image_facts(path: str, platform: str = "") -> list[oci.Image] | None:
    """The images an image input holds (metadata only, checked; no layer is read), None for an
    input that is no image; an image that cannot be described carries its error."""
    from fatbin_inspect.containers import oci

    ref = walk.image_ref(path)
    if ref is None and not _layout_dir(path):
        try:
            blob = open_blob(path)
        except InputError:
            return None
        if detect(blob.head(512)) != "tar":
            return None
    try:
        store, select = open_image(path, ref)
        return oci.images(store, platform, select)[0]
    except InputError as exc:
        if ref is None and not os.path.isdir(path):
            return None  # a plain tar
        return [oci.Image(path, None, "?", error=str(exc))]
    except Exception as exc:  # a parser bug costs the facts, not the scan
        return [oci.Image(path, None, "?", error=f"{type(exc).__name__}: {exc}")]


def _inspect_image(
    path: str,
    store,
    opts: Options,
    depth: int,
    size: int,
    budget: Budget | None = None,
    select: str | None = None,
):
    """An OCI layout, image tar or registry image: each image's final filesystem's files
    (``PATH!LAYER!FILE``, ``PATH!IMAGE!LAYER!FILE`` when it holds several), attributed by the
    image's own Python and conda metadata, then a record per image when there are several (its
    notes, its error) and the input's record. An image's records are held until its last layer
    was read and checked (metadata may sit in any layer); one image's error costs that image."""
    out: list[FileReport] = []
    found, notes, error = _images_of(store, opts, select)
    several = len(found) > 1
    if budget is None:
        budget = Budget(sum(i.size for i in found) or size)
    tally: list[int] = []  # the images' final filesystems: files, bytes
    for n, image in enumerate(found):
        prefix = member_path.escape(image.name or f"@{n}") + "!" if several else ""
        recs, inotes, ierr = _image_records(path, store, image, prefix, opts, depth, budget, tally)
        out += recs
        if several:
            out.append(
                FileReport(
                    path=f"{path}!{prefix[:-1]}",
                    format="oci",
                    size=image.size,
                    error=ierr,
                    notes=tuple(inotes),
                )
            )
        else:
            notes += inotes
            error = error or ierr
    for rec in out:
        yield rec, None
    total = size or sum(i.size for i in found)
    contents = (tally[0], tally[1]) if tally else None
    yield (
        FileReport(path=path, format="oci", size=total, error=error, notes=tuple(notes), contents=contents),
        None,
    )


def _images_of(
    store, opts: Options, select: str | None
) -> tuple[list[oci.Image], list[str], FileError | None]:
    """(images, notes, error) of an image store: the images chosen by ``select`` and
    ``opts.platform``, or none and the error that says why."""
    from fatbin_inspect.containers import oci

    try:
        found, notes = oci.images(store, opts.platform, select)
    except Exception as exc:  # InputError, or a reader's bug: the input's error
        return [], [], _err(exc)
    return found, notes, None


def _image_records(
    path: str, store, image: oci.Image, prefix: str, opts: Options, depth: int, budget, tally: list[int]
):
    """(records, notes, error) of one image; its records are dropped when a layer fails its check.
    ``tally`` adds its final filesystem's files and bytes (``ImageReader.contents``) once read."""
    from fatbin_inspect.containers import oci

    if image.error is not None:
        return [], [], FileError(image.error)
    reader = oci.ImageReader(store, image, prefix)
    pairs: list[tuple[str, FileReport]] = []
    try:
        for m in reader.members():
            pairs += _image_member(path, m, prefix, pairs, opts, depth, budget)
    except Exception as exc:  # InputError, or a reader's bug: this image's error
        return [], reader.notes, _err(exc)
    tally[:] = [a + b for a, b in zip(tally or [0, 0], reader.contents, strict=True)]
    owners = reader.owners()
    recs = []
    for inside, rec in pairs:
        owner = owners.get(inside)
        recs.append(rec if owner is None or rec.package else dataclasses.replace(rec, package=owner))
    return recs, reader.notes, None


def _worth_reporting(rec: FileReport, opts: Options) -> bool:
    """A member's record is kept when it has device code or an error (every candidate that is a
    binary or an archive with ``members="all"``)."""
    return bool(rec.fatbins or rec.error or (opts.members == "all" and rec.format != "unknown"))


def _image_member(
    path: str,
    m: archives.Member,
    prefix: str,
    pairs: list[tuple[str, FileReport]],
    opts: Options,
    depth: int,
    budget,
) -> list[tuple[str, FileReport]]:
    """The (path inside the image, record) pairs one image member adds to ``pairs``, the pairs
    of the members before it (a hard link's records are those of the file it names, renamed)."""
    child = f"{path}!{m.name}"  # the image reader names members [IMAGE!]LAYER!PATH itself
    inside = m.name[len(prefix) :].split("!", 1)[-1]
    if m.error is not None:
        return [(inside, FileReport(path=child, format="unknown", size=0, error=_err(m.error)))]
    if m.alias is not None:
        target = f"{path}!{m.alias}"
        return [
            (inside, dataclasses.replace(r, path=child + r.path[len(target) :]))
            for _i, r in pairs
            if r.path == target or r.path.startswith(target + "!")
        ]
    if m.blob is None:
        return []
    return [
        (inside, rec)
        for rec, _b in inspect_pairs(child, m.blob, opts, depth + 1, budget)
        if _worth_reporting(rec, opts)
    ]


DIGEST_CHUNK = 16 << 20


def sha256_of(blob: Blob) -> str:
    """The SHA-256 (hex) of a blob's bytes, a chunk at a time; the mapped pages of each chunk are
    dropped after it (``Blob.release``), so hashing a 500 MB library keeps no more of it resident
    than the inventory does."""
    import hashlib

    h = hashlib.sha256()
    with memoryview(blob.buf) as view:
        for pos in range(0, blob.size, DIGEST_CHUNK):
            end = min(blob.size, pos + DIGEST_CHUNK)
            h.update(view[blob.base + pos : blob.base + end])
            blob.release(pos, end)
    return h.hexdigest()


def _inspect_binary(
    path: str,
    fmt: str,
    blob: Blob,
    opts: Options,
    budget: Budget | None = None,
    delegated: frozenset[tuple[int, int]] = frozenset(),
    disk: str | None = None,
) -> tuple[FileReport, Blob]:
    """The record of a host binary, raw fatbin, cubin or PTX file: fatbins walked in their
    sections, then found by magic outside them (``opts.scan_hidden``, or when no section was
    walked), then decoded as ``opts`` asks; and the bytes its offsets point into (``blob``, or
    a copy with its compressed sections inflated after its end, see ``_inflated``).
    ``delegated``: the hidden pieces of a ``HiddenSplit`` whose fatbins its slices find (not
    scanned here; ``static_cudart`` False, as the split's plan checked). ``disk``: the path of the
    file on disk ``blob`` came from, which a second process may then read too (``_hand_off``)."""
    if fmt in ("cubin", "ptx"):
        standalone = (_standalone_cubin(blob) if fmt == "cubin" else _standalone_ptx(blob),)
        decoded = _decode_fatbins(blob, standalone, opts, budget=budget)
        return FileReport(path=path, format=fmt, size=blob.size, fatbins=tuple(decoded)), blob
    errors: list[InputError] = []
    try:
        layout = layout_of(fmt, blob)
    except InputError as exc:  # a cut download or broken section table: the bytes that exist
        errors.append(exc)  # are still magic-scanned, and the record keeps the error
        layout = Layout(fmt, (), notes=("section table unusable: fatbins found by magic scan only",))
    read, layout = _inflated(blob, layout, budget if budget is not None else Budget(blob.size))
    fatbins = _found_fatbins(fmt, read, layout, opts, errors, delegated, disk)
    errors += layout.errors
    static = (
        bool(fatbins)
        and not delegated
        and has_static_cudart(read, layout.needs, [(fb.offset, fb.end) for fb in fatbins] + _code(layout))
    )
    rec = FileReport(
        path=path,
        format=layout.format,
        size=blob.size,
        fatbins=tuple(_decode_fatbins(read, fatbins, opts, path, toolkit_probe=static, budget=budget)),
        error=_err(errors[0]) if errors else None,
        needs=layout.needs,
        notes=tuple(layout.notes) + _more_errors(errors),
        static_cudart=static,
        relocatable=fmt == "coff" or (fmt == "elf" and blob.head(18)[16:18] == b"\x01\x00"),
        machine=_machine(blob, fmt),
    )
    return rec, read


def _inflated(blob: Blob, layout: Layout, budget: Budget) -> tuple[Blob, Layout]:
    """``blob`` and ``layout`` as the fatbin walk and magic scan read them when sections are
    ``SHF_COMPRESSED`` (``containers.elf``): each compressed section that fatbins are read from is
    inflated (zlib or zstd, within ``formats.decompress``'s bounds and the input's ``budget``) into
    a copy of the file, after its end (16-aligned), and read there as the section, so every other
    offset stays the file's; its stored bytes are neither walked nor scanned. A note says where
    its fatbins' offsets start; an unknown ``ch_type``, a bomb or a stream that does not inflate
    is a note naming the section and its offset, never a silent "no device code"."""
    if not any(r.compressed is not None for r in layout.regions):
        return blob, layout
    notes, regions, pieces = list(layout.notes), [], []
    at = -(-blob.size // 16) * 16
    for r in layout.regions:
        packed = r.compressed
        if packed is None:
            regions.append(r)
            continue
        regions.append(dataclasses.replace(r, fatbin_section=False, scan=False, compressed=None))
        try:
            data = _inflate(blob, r, budget)
        except InputError as exc:
            notes.append(f"section {r.name} at {r.start:#x}: {exc.message}: its fatbins are not read")
            continue
        regions.append(dataclasses.replace(r, start=at, end=at + len(data), compressed=None))
        notes.append(
            f"section {r.name} at {r.start:#x} is {packed.method}-compressed (SHF_COMPRESSED): "
            f"{len(data):,} bytes inflated, read as if stored after the end of the file (offsets from {at:#x})"
        )
        pad = -len(data) % 16
        pieces.append(data + b"\0" * pad)
        at += len(data) + pad
    out = dataclasses.replace(layout, regions=tuple(regions), notes=tuple(notes))
    if not pieces:
        return blob, out
    whole = blob.read(0, blob.size) + b"\0" * (-blob.size % 16) + b"".join(pieces)
    return Blob(whole), out


def _inflate(blob: Blob, region: Region, budget: Budget) -> bytes:
    """The bytes of a compressed section, bounded: at most ``decompress.MAX_DECODED`` and what is
    left of the input's budget."""
    packed = region.compressed
    assert packed is not None
    if packed.ch_type < 0:
        raise CorruptError("SHF_COMPRESSED, but shorter than its compression header", region.start)
    if not packed.method:
        raise CorruptError(f"SHF_COMPRESSED with unknown ch_type {packed.ch_type}", region.start)
    try:
        budget.spend(packed.size, region.start)
        raw = blob.read(packed.data, region.end - packed.data, "compressed section")
        return decode(packed.method, raw, packed.size, region.start)
    except InputError as exc:
        raise CorruptError(
            f"{packed.method}-compressed (SHF_COMPRESSED), not inflated: {exc.message}"
        ) from None


def _more_errors(errors: list[InputError]) -> tuple[str, ...]:
    """The notes a record's first error leaves for the rest: their count, and the limits reached."""
    if len(errors) <= 1:
        return ()
    kept = [e.message for e in errors[1:] if e.message.endswith("not kept")]  # fatbin.MAX_ERRORS
    return (f"{len(errors) - 1} more fatbin errors after the first", *kept)


def _found_fatbins(
    fmt: str,
    blob: Blob,
    layout: Layout,
    opts: Options,
    errors: list[InputError],
    delegated: frozenset[tuple[int, int]] = frozenset(),
    disk: str | None = None,
) -> list[Fatbin]:
    """The fatbins of a binary in file order, each once (several headers may point at one):
    walked strictly in the fatbin sections (a raw fatbin file: all of it), then magic-scanned in
    the other data sections and the bytes no section covers. Errors are appended to ``errors``,
    in that order. ``disk``: the file ``blob`` came from, whose largest hidden pieces a second
    process may scan meanwhile (``_hand_off``; each piece is scanned whole from its start either way)."""
    fatbin_ranges = _fatbin_ranges(layout)
    walked = [(a, b) for a, b, _ in fatbin_ranges]
    hidden: list[tuple[int, int, str | None]] = []
    if fmt != "fatbin" and (opts.scan_hidden or not fatbin_ranges):
        hidden = [p for p in _hidden_pieces(blob, layout, walked) if p[:2] not in delegated]
    with _hand_off(disk, blob, hidden, sum(b - a for a, b in walked), opts) as away:
        fatbins: list[Fatbin] = []
        for start, end, name in fatbin_ranges:  # overlapping section headers: each byte walked once
            found, errs = fatbin_mod.walk(blob, start, end, name, strict=True)
            blob.release(start, end)
            fatbins += found
            errors += errs
        if fmt == "fatbin":
            found, errs = fatbin_mod.walk(blob, 0, blob.size, None, strict=True)
            fatbins += found
            errors += errs
        scanned = {i: _scan_piece(blob, piece) for i, piece in enumerate(hidden) if i not in away}
        scanned.update(away.results(lambda i: _scan_piece(blob, hidden[i])))
    for i in range(len(hidden)):
        found, errs = scanned[i]
        fatbins += found
        errors += errs
    fatbins = list({fb.offset: fb for fb in fatbins}.values())  # headers pointing at one fatbin
    fatbins.sort(key=lambda fb: fb.offset)
    return fatbins


def _scan_piece(blob: Blob, piece: tuple[int, int, str | None]) -> tuple[list[Fatbin], list[InputError]]:
    """The fatbins the magic scan finds in one hidden piece, and its errors (limits reached)."""
    errors: list[InputError] = []
    found = [fb for chunk in _scan_chunks(blob, *piece, errors) for fb in chunk]
    return found, errors


def _fatbin_ranges(layout: Layout) -> list[tuple[int, int, str | None]]:
    """The fatbin sections, overlapping ones merged (each byte walked once)."""
    return _union([(r.start, r.end, r.name) for r in layout.regions if r.fatbin_section])


def _hidden_pieces(
    blob: Blob, layout: Layout, walked: list[tuple[int, int]]
) -> list[tuple[int, int, str | None]]:
    """The ``(start, end, section)`` pieces the magic scan reads, in file order: the data
    sections and the bytes no section covers, less the ``walked`` fatbin sections."""
    scannable: list[tuple[int, int, str | None]] = [
        (r.start, r.end, r.name) for r in layout.regions if r.scan and not r.fatbin_section
    ]
    outside: list[tuple[int, int, str | None]] = [
        (a, b, None) for a, b in gaps([(r.start, r.end) for r in layout.regions], blob.size)
    ]
    return [
        (a, b, name) for start, end, name in _union(scannable + outside) for a, b in gaps(walked, end, start)
    ]


def _machine(blob: Blob, fmt: str) -> str | None:
    """R-HOST's fact: the CPU the host binary is built for (``containers.machine_of``)."""
    if fmt not in ("elf", "pe", "coff"):
        return None
    head = blob.head(64)
    if fmt == "pe" and len(head) == 64:
        head = blob.head(min(int.from_bytes(head[60:64], "little"), 1 << 16) + 8)
    return machine_of(head)


SCAN_CHUNK = fatbin_mod.RELEASE_EVERY  # (64 MB: a scan worker held 57-64 MB of libcublasLt.so.13's pages)


def _scan_chunks(
    blob: Blob, start: int, end: int, section: str | None, errors: list[InputError], until: int | None = None
):
    """Magic-scan ``[start, end)`` a chunk at a time (the fatbins starting before ``until``, when
    given); a fatbin may run past its chunk (it is bounded by ``end``). As ``fatbin.walk`` looks
    at every magic before its end, the chunks' sizes do not change what is found. Pages already scanned are dropped from this process's resident set
    (``MADV_DONTNEED`` on a read-only file mapping only unmaps them; the page cache keeps them), so
    resident memory does not grow with the file size. A scan's only errors are limits reached."""
    pos, until = start, end if until is None else until
    while pos < until:
        stop = min(until, pos + SCAN_CHUNK)
        found, errs = fatbin_mod.walk(blob, pos, stop, section, strict=False, found_by="scan", limit=end)
        errors += errs
        yield found
        nxt = max([stop] + [fb.end for fb in found])
        blob.release(pos, nxt)
        pos = nxt


# ----------------------------------------- a second process scans a large binary's hidden pieces
# hidden bytes that pay for a second process: forking it and taking its records back cost
# ~10 ms; scanning libcublasLt.so.13's 196 MB of them (383 fatbins) ~0.2 s
HAND_OFF_MIN = 64 << 20


def hand_off(sizes: list[int], own: int) -> list[int]:
    """The indices of the hidden pieces (of ``sizes`` bytes) a second process scans while this
    one walks ``own`` bytes of fatbin sections: largest first, each to the side with less work
    (walking a fatbin section costs about what scanning as many bytes does: libcublasLt's
    139 MB 0.10 s, its 196 MB of hidden pieces 0.20 s); none unless that takes at least a quarter
    of the work off the busier side (cuFFT's one 265 MB ``.ldata`` is not handed off whole)."""
    loads, away = [own, 0], []
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        side = int(loads[1] < loads[0])
        loads[side] += sizes[i]
        if side:
            away.append(i)
    total = own + sum(sizes)
    return sorted(away) if away and max(loads) * 4 <= total * 3 else []


class _HandOff:
    """The pieces handed to a forked child (``i in away``) and, once this process is done with
    its own, their scans (``results``). A child that cannot be started, fails, or finds the file
    no longer the one mapped here leaves them to this process (``fallback``): the record is the
    same. A bare ``os.fork`` (Linux only; elsewhere nothing is handed off), not a
    ``ProcessPoolExecutor``: importing and starting one took ~30 ms, a sixth of the scan it
    takes off this process (libcublasLt.so.13); the child has this process's modules and sends
    its results, pickled, down a pipe. It starts as the pool's workers do (``workers.init``:
    SIGINT blocked across the fork, then ignored; it dies with this process)."""

    def __init__(self, disk: str | None, size: int, pieces: list, indices: list[int]):
        self.indices: frozenset[int] = frozenset()
        self.pid: int | None = None
        self.fd: int | None = None
        if not indices or disk is None or not sys.platform.startswith("linux"):
            return
        parent, todo = os.getpid(), [pieces[i] for i in indices]
        r, w = os.pipe()
        try:
            with workers.sigint_held():
                pid = os.fork()
        except OSError:  # no process to spare
            os.close(r)
            os.close(w)
            return
        if pid == 0:
            _child(parent, r, w, disk, size, todo)
        os.close(w)
        self.indices, self.pid, self.fd = frozenset(indices), pid, r

    def __contains__(self, i: int) -> bool:
        return i in self.indices

    def results(self, fallback) -> dict[int, tuple[list[Fatbin], list[InputError]]]:
        if self.pid is None or self.fd is None:
            return {}
        got, fd, self.fd = None, self.fd, None
        try:
            with open(fd, "rb", closefd=True) as f:  # (the pipe from the child)
                data = f.read()
            if self._reap() == 0 and data:
                import pickle  # (a listing that hands nothing off does not load it)

                got = pickle.loads(data)  # (made by the child from its records)
        except Exception:  # a child that died, or a bug there: a bug here too is this record's error
            got = None
        order = sorted(self.indices)
        if not isinstance(got, list) or len(got) != len(order):
            return {i: fallback(i) for i in order}
        return dict(zip(order, got))

    def close(self, cancel: bool = False) -> None:
        if cancel and self.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self._reap()

    def _reap(self) -> int | None:
        """Wait for the child; its exit status (None: none was started)."""
        if self.pid is None:
            return None
        pid, self.pid = self.pid, None
        try:
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        except ChildProcessError:
            return None


def _child(parent: int, r: int, w: int, disk: str, size: int, pieces: list) -> NoReturn:
    """The forked child of ``_HandOff``: scan ``pieces``, write them pickled to ``w``, exit
    (``os._exit``: none of the parent's cleanup, buffers or handlers run here)."""
    code = 1
    try:
        os.close(r)
        workers.init(parent)
        import pickle

        data = pickle.dumps(_scan_pieces(disk, size, pieces), pickle.HIGHEST_PROTOCOL)
        with open(w, "wb", closefd=True) as f:
            f.write(data)
        code = 0
    except BaseException:  # (nothing is printed here: the parent scans the pieces itself)
        pass
    finally:
        os._exit(code)


@contextlib.contextmanager
def _hand_off(disk: str | None, blob: Blob, pieces: list, own: int, opts: Options) -> Iterator[_HandOff]:
    """A ``_HandOff`` of the pieces ``hand_off`` picks, when the pieces hold ``HAND_OFF_MIN``
    bytes, ``opts.jobs`` allows a second process and ``blob`` maps the file ``disk`` whole (looked
    at last: a scan's worker, ``jobs`` 1, makes no ``stat`` for it)."""
    sizes = [b - a for a, b, _ in pieces]
    worth = (
        disk is not None
        and sum(sizes) >= HAND_OFF_MIN
        and workers.processes(opts.jobs) > 1
        and _is_whole_file(blob, disk)
    )
    away = _HandOff(disk, blob.size, pieces, hand_off(sizes, own) if worth else [])
    try:
        yield away
    except BaseException:  # Ctrl-C, or a parser bug: the child ends now
        away.close(cancel=True)
        raise
    away.close()


def _scan_pieces(path: str, size: int, pieces: list) -> list | None:
    """``_HandOff``'s child: ``_scan_piece`` of each of ``pieces`` of the file at ``path``; None
    when it is no longer ``size`` bytes or shrank while it was read."""
    blob = open_blob(path)
    if blob.size != size:
        return None
    before = mapguard.faults()
    out = [_scan_piece(blob, piece) for piece in pieces]
    return out if mapguard.faults() == before else None


# ------------------------------------------------------- one binary's hidden fatbins in slices
SPLIT_HIDDEN = 64 << 20  # bytes of hidden pieces that make a split worth its parts
# the smallest piece cut into slices: cuFFT's .ldata (265 MB); not libcublasLt's .rodata, which
# holds the static cudart marker (its parts would be read again whole)
PIECE_MIN = 64 << 20
SLICE_MIN = 8 << 20  # the smallest slice


@dataclass(frozen=True)
class HiddenSplit:
    """How several processes can find one binary's hidden fatbins (cuFFT: 24,000 in a 265 MB
    ``.ldata``) and give the record one process would: ``slices`` ``(lo, hi, end, section)``
    cut the ``pieces`` (the hidden pieces of at least ``PIECE_MIN`` bytes, each ending at its
    ``end``); the rest of the file is read as ever, with ``delegated=pieces``. A slice finds the
    fatbins starting in ``[lo, hi)`` as a magic scan from ``lo`` would (``scan_slice``); its first
    ones may be false hits inside a fatbin of the slice before, which the scan from the piece's
    start jumps over: ``chained`` keeps those the whole scan finds. The static cudart marker was
    looked for outside the pieces (not found); each slice looks in its own bytes
    (``slice_has_marker``)."""

    size: int
    pieces: frozenset[tuple[int, int]]
    slices: tuple[tuple[int, int, int, str | None], ...]


def hidden_split(fmt: str, blob: Blob, opts: Options, parts: int) -> HiddenSplit | None:
    """The plan to read an ELF file's hidden fatbins in about ``parts`` slices; None when it has
    fewer than ``SPLIT_HIDDEN`` bytes of them, or a compressed section, or ``opts`` decode payloads
    (kernels, details) or hash the file, or the static cudart marker is outside those pieces (its
    first cubins are then probed for the toolkit: ``_probed``)."""
    if fmt != "elf" or opts.kernels or opts.details or opts.digests or parts < 2:
        return None
    try:
        layout = layout_of(fmt, blob)
    except InputError:
        return None
    if any(r.compressed is not None for r in layout.regions):
        return None
    walked = [(a, b) for a, b, _ in _fatbin_ranges(layout)]
    if walked and not opts.scan_hidden:
        return None
    big = [p for p in _hidden_pieces(blob, layout, walked) if p[1] - p[0] >= PIECE_MIN]
    total = sum(b - a for a, b, _ in big)
    if total < SPLIT_HIDDEN:
        return None
    pieces = frozenset((a, b) for a, b, _ in big)
    if has_static_cudart(blob, layout.needs, _code(layout) + sorted(pieces)):
        return None
    each = max(SLICE_MIN, total // parts)
    slices = []
    for a, b, name in big:
        n = max(1, (b - a) // each)
        slices += [(a + j * (b - a) // n, a + (j + 1) * (b - a) // n, b, name) for j in range(n)]
    return HiddenSplit(blob.size, pieces, tuple(slices))


def scan_slice(blob: Blob, split: HiddenSplit, i: int, opts: Options, budget: Budget) -> list[Fatbin] | None:
    """The fatbins a magic scan from slice ``i``'s start finds starting before its end, decoded as
    the whole file's are (``opts``, its ``budget``); None when a limit was reached (the whole
    scan may have reached it elsewhere) or the file is no longer the one planned."""
    lo, hi, end, name = split.slices[i]
    if blob.size != split.size:
        return None
    errors: list[InputError] = []
    fatbins = [fb for found in _scan_chunks(blob, lo, end, name, errors, until=hi) for fb in found]
    if errors:
        return None
    return _probed(blob, fatbins, False, budget) if opts.probe_small else fatbins


def chained(split: HiddenSplit, found: list[list[tuple[int, int]]]) -> list[int] | None:
    """Per slice, the index of its first fatbin the whole magic scan finds (``found``: each
    slice's fatbins as ``(start, end)``), the slice's fatbins from there on being the scan's; None
    when that cannot be told (a fatbin a slice found runs across the point where the scan from
    the piece's start resumes). The scan resumes after the last fatbin before; a slice's walk
    whose fatbin starts there, or that had ended a fatbin before it and found none between, took
    the same steps from there on (a walk's next step depends on its position alone)."""
    keep: list[int] = []
    resume = -1
    for (lo, hi, end, _name), fbs in zip(split.slices, found):
        if (lo, end) in split.pieces:  # the first slice of its piece: the scan starts there
            resume = lo
        j = next((k for k, (start, _e) in enumerate(fbs) if start >= resume), len(fbs))
        if j and fbs[j - 1][1] > resume:
            return None
        keep.append(j)
        resume = max(resume, hi, fbs[-1][1] if j < len(fbs) else resume)
    return keep


def slice_has_marker(blob: Blob, split: HiddenSplit, i: int, fatbins: list[Fatbin]) -> bool:
    """The static cudart marker (``containers.has_static_cudart``) in slice ``i``'s bytes outside
    its fatbins, or across either of its ends (a superset of what the whole file's search reads
    there: found, the file is read whole)."""
    lo, hi, _end, _name = split.slices[i]
    reach = len(STATIC_CUDART_MARKER) - 1
    skip = [(0, max(0, lo - reach)), (min(blob.size, hi + reach), blob.size)]
    return has_static_cudart(blob, (), skip + [(fb.offset, fb.end) for fb in fatbins])


def inspect_split_main(
    path: str, blob: Blob, opts: Options, split: HiddenSplit
) -> tuple[FileReport, int] | None:
    """The record of a split file less its slices' fatbins, and the inflation budget it spent;
    None when the file is no longer the size planned or reading it failed (read whole, the file
    gives its error record). The plan's other facts (its pieces, no static cudart marker outside
    them) are the file's as long as its stat is (``elf_split.inspect_part`` checks)."""
    if blob.size != split.size:
        return None
    budget = Budget(blob.size)
    try:
        rec, _read = _inspect_binary(member_path.escape(path), "elf", blob, opts, budget, split.pieces)
    except Exception:  # (an InputError or a parser bug: the whole file's record tells)
        return None
    return rec, budget.limit - budget.left


def magic_ranges(fmt: str, blob: Blob) -> list[tuple[int, int]] | None:
    """The byte ranges where ``_inspect_binary`` may find a fatbin: all but the code and linker
    tables of an ELF or PE/COFF file whose section table reads (the whole blob for other
    formats), its fatbin sections first: a search for any magic mostly ends in the first bytes
    there (libcublasLt.so.13 has 44 MB of ``.rodata`` before its ``.nv_fatbin``; over the six
    extracted wheels 131 MB were searched, now 36 MB). None: a section fatbins are read from is
    compressed (no magic shows in it), or the section table does not read (a cut download: its
    record carries the error, never "no device code"), so only reading the file tells."""
    if fmt == "ar":
        return None if _ar_compressed(blob) else [(0, blob.size)]
    try:
        layout = layout_of(fmt, blob)
    except InputError:
        return None
    if any(r.compressed is not None for r in layout.regions):
        return None
    code = _code(layout)
    walked = [(a, b) for a, b, _ in _fatbin_ranges(layout)]
    first = [(a, b) for start, end in walked for a, b in gaps(code, end, start)]
    return first + [(a, b) for start, end in gaps(code, blob.size) for a, b in gaps(walked, end, start)]


def _ar_compressed(blob: Blob) -> bool:
    """An ``ar`` member is an ELF object with a compressed section fatbins are read from (its
    members are windows into the archive: nothing is copied)."""
    from fatbin_inspect.containers import archives

    try:
        for m in archives.ar_members(blob):
            if m.blob is None or detect(m.blob.head(512)) != "elf":
                continue
            try:
                if any(r.compressed is not None for r in layout_of("elf", m.blob).regions):
                    return True
            except InputError:
                continue
    except InputError:
        return False
    return False


def _code(layout: Layout) -> list[tuple[int, int]]:
    """Code and linker tables: no fatbin is found there, nor a host string."""
    return [(r.start, r.end) for r in layout.regions if not r.scan and not r.fatbin_section]


def _union(ranges: list[tuple[int, int, str | None]]) -> list[tuple[int, int, str | None]]:
    """Overlapping ``(start, end, name)`` ranges merged (named after the first): 4,096 section
    headers over the same bytes are scanned once, not 4,096 times."""
    out: list[tuple[int, int, str | None]] = []
    for start, end, name in sorted(ranges, key=lambda r: (r[0], -r[1])):
        if out and start < out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end, out[-1][2])
            continue
        out.append((start, end, name))
    return out


# ------------------------------------------------------------------------- standalone images
def _standalone_cubin(blob: Blob) -> Fatbin:
    data = blob.read(0, blob.size)
    info, _ = cubin_mod.parse_cubin(data)
    variant = "a" if info.arch_specific and info.sm >= 90 else ""
    entry = bare_entry(KIND_SASS, info.sm, variant, blob.size, (1, info.elf_abi), cubin=info)
    return Fatbin(offset=0, size=blob.size, section=None, entries=(entry,), found_by="file")


STANDALONE_HEAD = 1 << 20  # what a standalone PTX file's header is parsed from (a 1 GiB .ptx is not copied)


def _standalone_ptx(blob: Blob) -> Fatbin:
    hdr = ptx_mod.parse_header(blob.head(STANDALONE_HEAD))
    sm, variant = ptx_mod.target_arch(hdr.target) if hdr.target else (0, "")
    entry = bare_entry(KIND_PTX, sm, variant, blob.size, hdr.version, ptx_target=hdr.target)
    return Fatbin(offset=0, size=blob.size, section=None, entries=(entry,), found_by="file")


# ------------------------------------------------------------------------------- payloads
def payload(blob: Blob, entry: Entry, budget: Budget | None = None) -> bytes:
    """The entry's image, decompressed (LTO-IR is opaque and returned as stored)."""
    raw = _stored(blob, entry, budget)
    if entry.kind not in (KIND_SASS, KIND_PTX, KIND_TILE):  # Tile IR is zstd/LZ4-compressed like PTX
        return raw
    return decode(entry.compression, raw, entry.size, entry.offset)


def _stored(blob: Blob, entry: Entry, budget: Budget | None) -> bytes:
    raw = blob.read(entry.payload_offset, entry.stored_size, "entry payload")
    _charge(entry, budget)
    return raw


def _charge(entry: Entry, budget: Budget | None) -> None:
    """Count what a compressed entry that is decoded inflates to against its file's budget."""
    if budget is not None and entry.compression != "none" and entry.kind in (KIND_SASS, KIND_PTX, KIND_TILE):
        budget.spend(entry.size, entry.offset)


def _parsed_cubin(blob: Blob, entry: Entry, kernels: bool, resources: bool, budget: Budget | None):
    """``parse_cubin`` of a SASS entry. A zstd one is decoded into a reused buffer
    (``zstd_reused``), one larger than that into a ``SparseImage`` (``docs/format.md`` §2.5):
    a worker decoding libtorch_cuda.so held its largest cubin whole (41 MB), and now 8 MB of
    it. What these cannot answer as the whole image would (another layout, a frame that does
    not decode) is decoded and parsed whole, so the record is the same either way. The frame
    is decoded from the mapping itself (``Blob.window``), not from a copy of it (libtorch_cuda.so:
    332 MB of frames; the copies were ~2 % of a ``--kernels`` decode's CPU profile)."""
    if entry.compression == "zstd" and entry.size <= MAX_DECODED:
        with blob.window(entry.payload_offset, entry.stored_size, "entry payload") as frame:
            _charge(entry, budget)
            return _parsed_zstd(frame, entry, kernels, resources)
    data = decode(entry.compression, _stored(blob, entry, budget), entry.size, entry.offset)
    return cubin_mod.parse_cubin(data, kernels=kernels, resources=resources, demangle=demangle)


def _parsed_zstd(frame: memoryview, entry: Entry, kernels: bool, resources: bool):
    """``_parsed_cubin`` of a zstd ``frame`` (a view it must not keep)."""
    if (buf := zstd_reused(frame, entry.size)) is not None:
        return cubin_mod.parse_cubin(buf, kernels, resources, demangle, entry.size)
    span = functools.partial(cubin_mod.table_span, size=entry.size)
    parts = zstd_parts(frame, entry.size, cubin_mod.SPARSE_PREFIX, span)
    if parts is not None:
        img = cubin_mod.SparseImage(parts[0], cubin_mod.SPARSE_PREFIX, parts[1], parts[2], entry.size)
        with contextlib.suppress(NotLoaded):
            return cubin_mod.parse_cubin(img, kernels, resources, demangle)
    data = decode(entry.compression, bytes(frame), entry.size, entry.offset)
    return cubin_mod.parse_cubin(data, kernels=kernels, resources=resources, demangle=demangle)


def decode_entry(
    blob: Blob, entry: Entry, kernels: bool, resources: bool = True, budget: Budget | None = None
) -> Entry:
    """Fill ``cubin``/``kernels``/``ptx_target`` from the payload; a failure is ``decode_error``.
    ``budget`` (one per file) bounds the bytes all its compressed entries may inflate to."""
    if entry.kind not in (KIND_SASS, KIND_PTX):
        return entry
    try:
        if entry.kind == KIND_SASS:
            info, ks = _parsed_cubin(blob, entry, kernels, resources, budget)
            if info.sm != entry.sm and entry.header_size:
                raise InputError(
                    f"cubin e_flags say sm_{info.sm}, fatbin header says sm_{entry.sm}", entry.offset
                )
            return dataclasses.replace(entry, cubin=info, kernels=ks)
        data = _mapped_text(blob, entry) or payload(blob, entry, budget)
        hdr = ptx_mod.parse_header(data)
        ks = _demangled(ptx_mod.kernels(data)) if kernels else None
        return dataclasses.replace(entry, ptx_target=hdr.target, kernels=ks)
    except InputError as exc:
        return dataclasses.replace(entry, decode_error=str(exc))
    except Exception as exc:  # pragma: no cover - parser bug on hostile bytes
        return dataclasses.replace(entry, decode_error=f"internal error: {exc}")


def _mapped_text(blob: Blob, entry: Entry):
    """A standalone PTX file's own mapping (searched in place, not copied), or None."""
    buf = blob.buf
    whole = blob.base == 0 and entry.payload_offset == 0 and entry.stored_size == len(buf)
    if entry.kind == KIND_PTX and entry.compression == "none" and isinstance(buf, mmap.mmap) and whole:
        return buf
    return None


def _demangled(ks: tuple[Kernel, ...]) -> tuple[Kernel, ...]:
    # the constructor, not dataclasses.replace: ~100k kernels in one large library
    return tuple(
        Kernel(k.name, demangle(k.name), k.registers, k.shared, k.constant0, k.max_threads, k.local)
        for k in ks
    )


PARALLEL_MIN_BYTES = 64 << 20  # compressed payload bytes that make a second process worth its start


PROBE_MAX = 64 << 10  # nvcc's device-link cubins are ~1.5 KB and hold no kernels


TOOLKIT_PROBES = 4  # cubins decoded for their toolkit note when the cudart is static (R-RT 3)


def _decode_fatbins(
    blob: Blob,
    fatbins,
    opts: Options,
    path: str | None = None,
    toolkit_probe: bool = False,
    budget: Budget | None = None,
):
    """``probe_small`` decodes only small cubins (device-link output is told apart by them) and,
    for a file with a static cudart, the first few cubins, whose toolkit note gives its CUDA."""
    if opts.kernels or opts.details:
        return [fb for part in map_decoded(blob, fatbins, opts, path, _same, budget) for fb in part]
    if opts.probe_small:
        return _probed(blob, fatbins, toolkit_probe, budget if budget is not None else Budget(blob.size))
    return list(fatbins)


def _probed(blob: Blob, fatbins, toolkit_probe: bool, budget: Budget) -> list[Fatbin]:
    """``fatbins`` with their small cubins decoded (and the first ``TOOLKIT_PROBES`` larger ones
    when ``toolkit_probe``), the rest as they are."""
    probes = [TOOLKIT_PROBES if toolkit_probe else 0]

    def probe(e: Entry) -> bool:
        if e.kind != KIND_SASS:
            return False
        if e.size <= PROBE_MAX:
            return True
        probes[0] -= 1
        return probes[0] >= 0

    return [
        dataclasses.replace(
            fb,
            entries=tuple(
                decode_entry(blob, e, kernels=False, budget=budget) if probe(e) else e for e in fb.entries
            ),
        )
        for fb in fatbins
    ]


def _same(pairs):
    """The decoded fatbins, whole (an ``iter_decoded`` function)."""
    return [dataclasses.replace(fb, entries=tuple(entries)) for fb, entries in pairs]


def parallel_worthwhile(blob: Blob, fatbins, opts: Options, path: str | None) -> bool:
    """Large enough (compressed payload) for worker processes to pay for their start."""
    jobs = workers.processes(opts.jobs)
    work = sum(e.stored_size for fb in fatbins for e in fb.entries if e.compression != "none")
    if not (jobs > 1 and path is not None and work >= PARALLEL_MIN_BYTES and _is_whole_file(blob, path)):
        return False
    return all(fb.offset + 16 + fb.size <= blob.size for fb in fatbins)  # none read from an inflated section


def map_decoded(
    blob: Blob, fatbins, opts: Options, path: str | None, fn, budget: Budget | None = None
) -> list:
    """``list(iter_decoded(...))``."""
    return list(iter_decoded(blob, fatbins, opts, path, fn, budget))


def iter_decoded(
    blob: Blob, fatbins, opts: Options, path: str | None, fn, budget: Budget | None = None
) -> Iterator:
    """Decode ``fatbins`` (kernels/details per ``opts``) and yield ``fn(pairs)`` for consecutive
    runs of them, in file order, as they are ready: all of them at once, or, for a large file on
    disk decoded by worker processes, one fatbin at a time, each worker applying ``fn`` where it
    decoded it, so a caller can turn records into their final form (JSON text) without shipping
    150k kernel records back, and write each piece before the next arrives. ``pairs``: each
    fatbin as listed with an iterator of its entries, decoded as they are taken, so ``fn`` can
    let each entry's records go before the next is decoded (``_same``: the decoded fatbins
    whole); ``fn`` must be a module-level function and take the entries in order."""
    if path is not None and parallel_worthwhile(blob, fatbins, opts, path):
        yield from _iter_parallel(path, blob.size, fatbins, opts, workers.processes(opts.jobs), fn)
        return
    yield fn(_pairs(blob, fatbins, opts, budget))


def _pairs(blob: Blob, fatbins, opts: Options, budget: Budget | None = None, release: bool = False) -> list:
    """``(fatbin, its entries decoded one at a time)`` of each of ``fatbins``; ``release``: let
    the pages read go every ``RELEASE_STEP`` bytes (one of libtorch_cuda.so's fatbins holds 30 MB
    of compressed cubins)."""
    budget = budget if budget is not None else Budget(blob.size)
    return [(fb, _decoded(blob, fb, opts, budget, release)) for fb in fatbins]


def _decoded(blob: Blob, fb: Fatbin, opts: Options, budget: Budget, release: bool) -> Iterator[Entry]:
    lo = fb.offset
    for e in fb.entries:
        yield decode_entry(blob, e, kernels=opts.kernels, resources=opts.resources, budget=budget)
        end = e.payload_offset + e.stored_size
        if release and end - lo >= RELEASE_STEP:
            blob.release(lo, end)
            lo = end - (blob.base + end) % mmap.PAGESIZE  # the page it ends in: next time
    if release:
        blob.release(lo, fb.offset + 16 + fb.size)


RELEASE_STEP = 4 << 20


def _is_whole_file(blob: Blob, path: str) -> bool:
    try:
        return blob.base == 0 and os.path.isfile(path) and os.path.getsize(path) == blob.size
    except OSError:
        return False


# what glibc may keep free after a slice before it is trimmed: libtorch_cuda.so --kernels, a
# trim after every slice re-faulted ~50k pages (0.1 s of CPU); untrimmed, a process kept at most
# ~6 MB free (main arena up to 11 MB) and the tree's peak RSS was ~10 MB higher
TRIM_OVER = 8 << 20
SLICES_PER_JOB = 96  # small slices: ~0.7 MB of JSON each (16: 13 MB pieces, held 3 times over by the parent)
WINDOW_PER_JOB = 3  # slices taken and not yet yielded, per process decoding


def _iter_parallel(path: str, size: int, fatbins, opts: Options, jobs: int, fn) -> Iterator:
    """Decompressing and parsing thousands of cubins is CPU-bound (libtorch_cuda.so: 5 GB of
    zstd output): split the fatbins into contiguous slices of similar decoded size, decoded by
    ``jobs`` processes (this one and ``jobs - 1`` workers that map the same file:
    ``workers.in_order``), and yield the results in order. At most ``jobs * WINDOW_PER_JOB``
    slices are taken and not yet yielded, so the results held at once, and the memory, do not
    grow with the file. ``size``: the file's bytes as this process mapped it (a worker that finds
    another size decodes nothing). What ``fn`` writes to ``spill.current()`` comes back through
    memory files (slice ``i`` into ``ring[i % len(ring)]``), not the pipe."""
    slices: list[list[Fatbin]] = [[] for _ in range(jobs * SLICES_PER_JOB)]
    total = sum(e.size for fb in fatbins for e in fb.entries) or 1
    done = 0
    for fb in fatbins:  # contiguous slices, balanced by decoded bytes (what the work scales with)
        slices[min(len(slices) - 1, done * len(slices) // total)].append(fb)
        done += sum(e.size for e in fb.entries)
    slices = [sl for sl in slices if sl]
    serial_opts = dataclasses.replace(opts, jobs=1)
    workers.trim_heap()  # the workers start with what this process holds, freed pages included
    window = jobs * WINDOW_PER_JOB
    ring = spill.open_ring(window)  # (made before the workers fork)
    crew = workers.in_order(
        _decode_nth, (path, slices, serial_opts, fn, size, ring), len(slices), jobs, window
    )
    try:
        for out in crew:
            yield from out
            if ring is None:
                # (the slice's fragments are written and freed: what glibc keeps of them was
                # 4 MB of this process at the tree's peak, libtorch_cuda.so --kernels: 141 ->
                # 138 MB; read back from a memory file, a piece at a time, they are not held,
                # and a trim only made the next slice's pieces fault their pages in again)
                workers.trim_heap()
    finally:
        crew.close()  # (its workers end before their memory files do)
        spill.close_ring(ring)


def _decode_nth(path: str, slices, opts: Options, fn, size: int, ring, i: int) -> list:
    """``_decode_slice`` of ``slices[i]``, written into the memory file ``ring[i % len(ring)]``."""
    return _decode_slice(path, slices[i], opts, fn, size, ring[i % len(ring)] if ring else None)


def _decode_slice(
    path: str, fatbins, opts: Options, fn=_same, size: int | None = None, slot: int | None = None
):
    """``fn`` of each of ``fatbins`` decoded from the file at ``path`` (a worker maps it anew).
    ``size``: the bytes the parent's listing mapped; a file of another size now (truncated or
    replaced since) is not decoded: its entries would each read as cut, the file's record not.
    ``slot``: the memory file ``fn`` may write into (``spill.current()``)."""
    import gc

    old = gc.get_threshold()
    gc.set_threshold(100_000, 50, 100)  # many small acyclic records: see cli.main
    try:
        blob = open_blob(path)
        if size is not None and blob.size != size:
            shrank = changed_record(path, size).error if blob.size < size else None
            raise TruncatedError(
                shrank.message
                if shrank is not None
                else f"the file changed while it was read ({size:,} -> {blob.size:,} bytes): not inspected"
            )
        before = mapguard.faults()
        # each fatbin turned into its final form (JSON) at once, entry by entry: a slice's
        # records together were most of a worker's peak (one of libtorch_cuda.so's: 5 fatbins,
        # 11 MB of JSON), then one fatbin's (4,320 kernels); the pages read stay cached, not
        # resident here
        with spill.writing(slot):
            out = [fn(_pairs(blob, [fb], opts, release=True)) for fb in fatbins]
        if mapguard.faults() != before:  # decoded from zeros: the parent's record says so
            shrank = changed_record(path, blob.size).error
            raise TruncatedError(shrank.message if shrank is not None else "the file shrank")
        workers.trim_heap(TRIM_OVER)
        return out
    finally:
        gc.set_threshold(*old)
