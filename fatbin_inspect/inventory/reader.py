"""Inventory: from a path to ``FileReport`` records (containers -> fatbin/cubin/ptx parsers).

One input yields one record, plus, for archives and wheels, one record per member that holds
device code (named ``CONTAINER!MEMBER``, see ``member_path``). Errors become the record's
``error``: one bad file or member never stops the rest. Each top-level input gets one ``Budget``
(inflated bytes and time) shared by all its nesting levels.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from fatbin_inspect.containers import ARCHIVES, archive_format, detect, open_archive
from fatbin_inspect.errors import BudgetExceeded, InputError, LimitExceeded, UnreadableError
from fatbin_inspect.formats.binio import Blob, open_blob
from fatbin_inspect.formats.decompress import Budget
from fatbin_inspect.formats.model import FileError, FileReport
from fatbin_inspect.inventory import member_path, walk, workers
from fatbin_inspect.inventory.binary import inspect_binary
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.record_errors import error_of, size_or_zero, unchanged
from fatbin_inspect.inventory.zip_plan import SPAN_BYTES, SPLIT_BYTES, zip_spans

if TYPE_CHECKING:
    import zipfile

    from fatbin_inspect.containers import archives, conda, oci, registry
    from fatbin_inspect.formats.model import Package

    ArchiveReader = archives.MemberReader | conda.CondaReader
    ImageStore = oci.DirStore | oci.TarStore | registry.RegistryStore

# a record and the bytes its offsets point into (None: an image's file, read and let go)
Pair = tuple[FileReport, Blob | None]

MAX_DEPTH = 4  # wheel inside a tar layer inside a tar is depth 2; deeper is not a real layout


def _layout_dir(path: str) -> bool:
    """An OCI image layout folder. ``containers.oci`` and ``archives`` (and tarfile) are imported
    where an image or an archive is read: ``list`` of one ELF file does not pay for them."""
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
        size = size_or_zero(path)
        yield FileReport(path=path, format="unknown", size=size, error=error_of(exc))
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
    """Records of ``-``: standard input, copied once (``inventory.stdin.stdin_blob``)."""
    try:
        from fatbin_inspect.inventory.stdin import stdin_blob

        blob = stdin_blob()
    except InputError as exc:
        yield FileReport(path=path, format="unknown", size=0, error=error_of(exc))
        return
    yield from inspect_blob(path, blob, opts, 0)


def _image_input_records(path: str, ref: walk.ImageRef | None, opts: Options) -> Iterator[FileReport]:
    """Records of an image input (a layout folder or a reference), the input's record first."""
    try:
        store, select = open_image(path, ref)
    except InputError as exc:
        yield FileReport(path=path, format="oci", size=0, error=error_of(exc))
        return
    yield from _container_first(path, _inspect_image(path, store, opts, 0, 0, select=select))


def _inspect_zip_parallel(
    path: str, spans: list[tuple[int, int, int]], opts: Options, jobs: int
) -> Iterator[FileReport]:
    """``inspect_blob`` of a large zip on disk with its spans inspected by ``jobs`` processes: the
    same records in the same order (the zip's own record first, its notes those of every span up
    to the first whose walk ended in an error, which is the record's error and ends the members
    there, as in one walk)."""
    import concurrent.futures as cf

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


def inspect_blob(path: str, blob: Blob, opts: Options, depth: int) -> Iterator[FileReport]:
    """Records for one blob; an archive's own record comes first, then its members'."""
    shown = member_path.escape(path) if depth == 0 else path
    yield from _container_first(shown, inspect_pairs(path, blob, opts, depth))


def inspect_zip_span(
    path: str, blob: Blob, opts: Options, span: tuple[int, int], zf: zipfile.ZipFile | None = None
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


def _container_first(path: str, pairs: Iterable[Pair]) -> Iterator[FileReport]:
    """The records of ``pairs``, the one named ``path`` (the container's own) first."""
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
) -> Iterator[Pair]:
    """(record, blob) pairs, streaming: each member's bytes can be dropped once the consumer moves
    on (a wheel's members are never all held at once). An archive's own record comes last.
    At ``depth`` 0, ``path`` is a real path (put in path form here) and ``budget`` starts."""
    disk = path if depth == 0 else None  # the file a second process may map too (``handoff``)
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
        rec, read = inspect_binary(path, fmt, blob, opts, budget, disk=disk)
    except InputError as exc:
        rec = FileReport(path=path, format=fmt, size=blob.size, error=error_of(exc))
    except Exception as exc:  # a parser bug must cost one record, not the scan
        rec = FileReport(path=path, format=fmt, size=blob.size, error=error_of(exc))
    yield (dataclasses.replace(rec, sha256=sha256_of(blob)) if opts.digests else rec), read


def _image_tar(blob: Blob) -> oci.TarStore | None:
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
    reader: ArchiveReader | None = None,
    budget: Budget | None = None,
    span: bool = False,
) -> Iterator[Pair]:
    """(record, blob) pairs of an archive's members with device code (every candidate with
    ``members="all"``), then the archive's own record. ``reader``: one already open (a zip span's),
    else ``containers.open_archive`` opens it by ``fmt``; ``span``: a span of a zip, hashed
    whole by its caller."""
    budget = budget if budget is not None else Budget(blob.size)
    if depth >= MAX_DEPTH:
        deep = error_of(LimitExceeded(f"archive nested deeper than {MAX_DEPTH} levels"))
        yield FileReport(path=path, format=fmt, size=blob.size, error=deep), blob
        return
    notes: list[str] = []
    error: FileError | None = None
    try:
        reader = reader if reader is not None else open_archive(fmt, blob, opts.members == "all", budget)
        for m in reader.members():
            if m.note and m.blob is None:  # (a member read carries its own note: _member_pairs)
                notes.append(m.note)
            yield from _member_pairs(
                member_path.join(path, m.name), m, reader.owner(m.name), opts, depth, budget
            )
    except BudgetExceeded as exc:
        if depth > 0:
            raise  # reported once, by the top-level input whose budget it was
        error = error_of(exc)
    except Exception as exc:  # InputError, or a reader's bug: this archive's error
        error = error_of(exc)
    digest = sha256_of(blob) if opts.digests and not span else None
    yield _archive_record(path, fmt, blob, reader, error, notes, digest), blob


def _archive_record(
    path: str,
    fmt: str,
    blob: Blob,
    reader: ArchiveReader | None,
    error: FileError | None,
    notes: list[str],
    digest: str | None,
) -> FileReport:
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


def _member_pairs(
    child: str, m: archives.Member, owner: Package | None, opts: Options, depth: int, budget: Budget
) -> Iterator[Pair]:
    """The (record, blob) pairs worth reporting of one archive member, attributed to ``owner``
    (its package) unless a deeper level named one."""
    if m.error is not None:
        yield FileReport(path=child, format="unknown", size=0, error=error_of(m.error), package=owner), None
        return
    if m.blob is None:
        return
    for rec, b in inspect_pairs(child, m.blob, opts, depth + 1, budget):
        if m.note and rec.path == child:  # a zip member whose name repeats: said on its record
            rec = dataclasses.replace(rec, notes=(m.note, *rec.notes))
        if _worth_reporting(rec, opts):
            yield _owned(rec, owner), b


def open_image(path: str, ref: walk.ImageRef | None = None) -> tuple[ImageStore, str | None]:
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
    store: ImageStore,
    opts: Options,
    depth: int,
    size: int,
    budget: Budget | None = None,
    select: str | None = None,
) -> Iterator[Pair]:
    """An OCI layout, image tar or registry image: each image's final filesystem's files
    (``PATH!LAYER!FILE``, ``PATH!IMAGE!LAYER!FILE`` when it holds several), attributed by the
    image's own Python and conda metadata, then a record per image when there are several (its
    notes, its error) and the input's record. An image's records are held until its last layer
    was read and checked (metadata may sit in any layer); one image's error costs that image."""
    out: list[Pair] = []
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
                (
                    FileReport(
                        path=f"{path}!{prefix[:-1]}",
                        format="oci",
                        size=image.size,
                        error=ierr,
                        notes=tuple(inotes),
                    ),
                    None,
                )
            )
        else:
            notes += inotes
            error = error or ierr
    yield from out
    total = size or sum(i.size for i in found)
    contents = (tally[0], tally[1]) if tally else None
    yield (
        FileReport(path=path, format="oci", size=total, error=error, notes=tuple(notes), contents=contents),
        None,
    )


def _images_of(
    store: ImageStore, opts: Options, select: str | None
) -> tuple[list[oci.Image], list[str], FileError | None]:
    """(images, notes, error) of an image store: the images chosen by ``select`` and
    ``opts.platform``, or none and the error that says why."""
    from fatbin_inspect.containers import oci

    try:
        found, notes = oci.images(store, opts.platform, select)
    except Exception as exc:  # InputError, or a reader's bug: the input's error
        return [], [], error_of(exc)
    return found, notes, None


def _image_records(
    path: str,
    store: ImageStore,
    image: oci.Image,
    prefix: str,
    opts: Options,
    depth: int,
    budget: Budget,
    tally: list[int],
) -> tuple[list[Pair], list[str], FileError | None]:
    """(pairs, notes, error) of one image; its records are dropped when a layer fails its check.
    A record's bytes come with it under ``opts.image_bytes`` (else None). ``tally`` adds its final
    filesystem's files and bytes (``ImageReader.contents``) once read."""
    from fatbin_inspect.containers import oci

    if image.error is not None:
        return [], [], FileError(image.error)
    reader = oci.ImageReader(store, image, prefix)
    pairs: list[tuple[str, FileReport, Blob | None]] = []
    try:
        for m in reader.members():
            pairs += _image_member(path, m, prefix, pairs, opts, depth, budget)
    except Exception as exc:  # InputError, or a reader's bug: this image's error
        return [], reader.notes, error_of(exc)
    tally[:] = [a + b for a, b in zip(tally or [0, 0], reader.contents, strict=True)]
    owners = reader.owners()
    return [(_owned(rec, owners.get(inside)), b) for inside, rec, b in pairs], reader.notes, None


def _owned(rec: FileReport, owner: Package | None) -> FileReport:
    """``rec`` attributed to ``owner`` (its package) unless it names one of its own."""
    return rec if owner is None or rec.package else dataclasses.replace(rec, package=owner)


def _worth_reporting(rec: FileReport, opts: Options) -> bool:
    """A member's record is kept when it has device code, a static CUDA runtime whose version its
    code names (a runtime without kernels: it needs a driver, R-RT 3) or an error (every candidate
    that is a binary or an archive with ``members="all"``)."""
    return bool(
        rec.fatbins
        or rec.static_cudart_version
        or rec.error
        or (opts.members == "all" and rec.format != "unknown")
    )


def _image_member(
    path: str,
    m: archives.Member,
    prefix: str,
    pairs: list[tuple[str, FileReport, Blob | None]],
    opts: Options,
    depth: int,
    budget: Budget,
) -> list[tuple[str, FileReport, Blob | None]]:
    """The (path inside the image, record, its bytes under ``opts.image_bytes``) triples one image
    member adds to ``pairs``, those of the members before it (a hard link's records are those of
    the file it names, renamed)."""
    child = f"{path}!{m.name}"  # the image reader names members [IMAGE!]LAYER!PATH itself
    inside = m.name[len(prefix) :].split("!", 1)[-1]
    if m.error is not None:
        return [(inside, FileReport(path=child, format="unknown", size=0, error=error_of(m.error)), None)]
    if m.alias is not None:
        target = f"{path}!{m.alias}"
        return [
            (inside, dataclasses.replace(r, path=child + r.path[len(target) :]), b)
            for _i, r, b in pairs
            if r.path == target or r.path.startswith(target + "!")
        ]
    if m.blob is None:
        return []
    return [
        (inside, rec, b if opts.image_bytes else None)
        for rec, b in inspect_pairs(child, m.blob, opts, depth + 1, budget)
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
