"""Packages on a package index as inputs: ``pkg:pypi/NAME[@VERSION]`` and ``-r FILE``.

A release is looked up on the index pip would use (``containers.index.config``), the file pip
would install chosen per platform (``containers.index.choose``: one per host CPU among the
targets, ``--python``/``--platform`` overriding), and its records made from the members that
can hold device code only (``containers.index.remote_zip``). Records are named by the file's URL
(``URL!MEMBER``), so the wheel's file name, and with it its distribution, reads as a downloaded
file's does. What the verdicts need of the wheel besides its members (``METADATA``'s
``Requires-Dist``, the names beside a library) is kept per URL in ``WheelFacts`` and asked for by
``judging.verdicts``. The records of a file the index gives a sha256 for are kept in the scan
cache under that digest: asked again, no byte of the wheel is read.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fatbin_inspect.containers.index import choose as choosing
from fatbin_inspect.containers.index import config
from fatbin_inspect.containers.index.pages import DistFile
from fatbin_inspect.containers.index.purl import REQUIREMENT_PREFIX, Release, is_purl
from fatbin_inspect.errors import InputError
from fatbin_inspect.formats.model import FileError, FileReport

if TYPE_CHECKING:
    from fatbin_inspect.compat.targets import Target
    from fatbin_inspect.containers.index.transport import Transport
    from fatbin_inspect.inventory.options import Options
    from fatbin_inspect.scanning.cache import ScanCache

FACTS_KIND = "index-facts"


@dataclass(frozen=True)
class WheelFacts:
    """What a remote wheel says beside its members: its METADATA text and member names."""

    metadata: str | None
    names: tuple[str, ...]


@dataclass
class Fetched:
    """The wheel chosen for one release and platform, and what reading it cost."""

    release: Release
    platform: choosing.Platform
    file: DistFile | None
    records: list[FileReport]
    reason: str = ""
    received: int = 0  # body bytes of the wheel (pages and metadata not counted)
    cached: bool = False
    source_only: bool = False  # the release has only sdists: built where it is installed


@dataclass
class IndexSource:
    """One command's index: where to look (``cfg``), the Python and platforms asked for, the
    transport, and what was read so far (project pages, wheel facts by URL)."""

    cfg: config.IndexConfig
    python: str | None = None
    overrides: config.Overrides = field(default_factory=config.Overrides)  # the command's own options
    platforms: tuple[str, ...] = ()
    cache_dir: str | None = None
    no_cache: bool = False
    progress: Callable[[int, int | None], None] | None = None  # wheel bytes (done, total)
    _transport: Transport | None = None
    _pages: dict[str, list[DistFile]] = field(default_factory=dict)
    facts: dict[str, WheelFacts] = field(default_factory=dict)

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            from fatbin_inspect.containers.index.transport import Transport

            self._transport = Transport((*self.cfg.indexes, *self.cfg.find_links))
        return self._transport

    def files(self, name: str) -> list[DistFile]:
        """Every file of project ``name`` on the indexes and find-links pages, in their order."""
        if name in self._pages:
            return self._pages[name]
        from fatbin_inspect.containers.index import pages
        from fatbin_inspect.containers.index.transport import NotFound

        found: list[DistFile] = []
        for root in self.cfg.indexes:
            url = pages.page_url(root, name)
            try:
                reply = self.transport.get(url, {"Accept": pages.ACCEPT})
            except NotFound:
                continue  # not on this index: pip goes on to the next
            try:
                found += pages.parse_page(reply.body, reply.headers.get("content-type", ""), reply.url, name)
            except InputError as exc:
                raise InputError(f"{url}: {exc.message}") from None
        for link in self.cfg.find_links:
            found += self._link_files(link, name)
        if not found:
            where = ", ".join((*self.cfg.indexes, *self.cfg.find_links))
            raise NotFound(f"no project {name!r} on {where}")
        self._pages[name] = found
        return found

    def _link_files(self, link: str, name: str) -> list[DistFile]:
        import os
        import urllib.parse
        import urllib.request

        from fatbin_inspect.containers.index import pages

        local = "://" not in link or link.startswith("file:")
        path = (
            urllib.request.url2pathname(urllib.parse.urlsplit(link).path)
            if link.startswith("file:")
            else link
        )
        if local and os.path.isdir(path):
            return pages.folder_files(path, name)
        url = "file://" + urllib.request.pathname2url(os.path.abspath(path)) if local else link
        reply = self.transport.get(url, {"Accept": "text/html"})
        return pages.parse_page(reply.body, reply.headers.get("content-type", ""), reply.url, name)

    def platform_for(self, arch: str | None) -> choosing.Platform:
        return choosing.for_host(arch, self.python, self.platforms)

    def choose(self, release: Release, platform: choosing.Platform) -> choosing.Choice:
        files = list(release.files) if release.files else self.files(release.name)
        return choosing.choose(files, release.version, platform, release.hashes, specifier=release.specifier)

    def fetch(self, release: Release, platform: choosing.Platform, opts: Options) -> Fetched:
        """The records of the wheel pip would install of ``release`` on ``platform``; a release
        that cannot be judged gives one error record naming it and why."""
        try:
            if not _marker_holds(release, platform):
                return Fetched(
                    release, platform, None, [], reason="its environment marker excludes this platform"
                )
            chosen = self.choose(release, platform)
        except InputError as exc:
            return Fetched(release, platform, None, [_error_record(release.origin, exc.message)], exc.message)
        if chosen.file is None:
            what = f"{release.name}: {chosen.reason}"
            record = _error_record(release.origin, what)
            return Fetched(release, platform, None, [record], chosen.reason, source_only=chosen.source_only)
        return self.read_file(release, platform, chosen.file, opts)

    def read_file(self, release: Release, platform: choosing.Platform, f: DistFile, opts: Options) -> Fetched:
        """The records of the wheel ``f`` (from the cache when its sha256 was read before)."""
        from fatbin_inspect.containers.index.transport import shown

        path = shown(f.url)
        cached = self._cached(f, path, opts)
        if cached is not None:
            return Fetched(release, platform, f, cached, cached=True)
        try:
            records, received = self._read(f, path, opts)
        except InputError as exc:
            msg = exc.message.removeprefix(f"{path}: ")
            return Fetched(release, platform, f, [_error_record(path, msg)], msg)
        self._store(f, path, opts, records)
        return Fetched(release, platform, f, records, received=received)

    def _read(self, f: DistFile, path: str, opts: Options) -> tuple[list[FileReport], int]:
        from fatbin_inspect.containers.index import remote_zip
        from fatbin_inspect.inventory import reader

        metadata = self._pep658(f) if f.metadata else None  # (condition 1 before any wheel byte)
        wheel = remote_zip.open_wheel(self.transport, f.url, f.sha256, self.progress)
        self.facts[path] = WheelFacts(metadata or wheel.metadata, tuple(wheel.names))
        if wheel.whole:
            return list(reader.inspect_blob(path, wheel.blob, opts, 0)), wheel.received
        own: FileReport | None = None
        members: list[FileReport] = []
        for infos in wheel.batches():  # one span of members at a time, let go after
            wheel.zf.filelist = infos
            found = list(reader.inspect_zip_span(path, wheel.blob, opts, (0, len(infos)), wheel.zf))
            own = _joined(own, found[0]) if found and found[0].path == path else own
            members += [r for r in found if r.path != path]
        if own is None:  # no member that can hold device code
            wheel.zf.filelist = []
            own = next(iter(reader.inspect_zip_span(path, wheel.blob, opts, (0, 0), wheel.zf)))
        ranged = (
            f"read by HTTP range requests: {len(wheel.groups)} span(s) of the members that can hold "
            "device code, not the whole file, so the index's sha256 was not checked"
        )
        own = dataclasses.replace(own, size=wheel.size, notes=(*own.notes, ranged))
        return [own, *members], wheel.received

    def _pep658(self, f: DistFile) -> str | None:
        """The file's METADATA as the index serves it alone (PEP 658), checked against its
        sha256 when the index gives one; None when it cannot be had (the wheel's is read)."""
        import hashlib

        try:
            reply = self.transport.get(f.url + ".metadata")
        except InputError:
            return None
        if f.metadata_sha256 and hashlib.sha256(reply.body).hexdigest() != f.metadata_sha256:
            return None
        return reply.body.decode("utf-8", "replace")

    def _cache(self, opts: Options) -> ScanCache | None:
        if self.no_cache:
            return None
        from fatbin_inspect.scanning import options_fingerprint
        from fatbin_inspect.scanning.cache import ScanCache, default_dir

        cache = ScanCache(self.cache_dir or default_dir(), f"{options_fingerprint(opts)}|{FACTS_KIND}")
        return cache if cache.enabled else None

    def _cached(self, f: DistFile, path: str, opts: Options) -> list[FileReport] | None:
        """The records of ``f`` from an earlier read of the same sha256, shown on ``path``."""
        from fatbin_inspect.scanning.cache import MISS

        cache = self._cache(opts) if f.sha256 else None
        if cache is None:
            return None
        try:
            hit = cache.get(_key_path(f), _key(f))
            found = None if hit is MISS or hit is None else hit.reports(path)
            if not isinstance(found, tuple) or not found:
                return None
            facts_record, records = found[-1], list(found[:-1])
            doc = json.loads(facts_record.notes[0]) if facts_record.format == FACTS_KIND else None
            if not isinstance(doc, dict):
                return None
            self.facts[path] = WheelFacts(doc.get("metadata"), tuple(doc.get("names") or ()))
            return records
        except (ValueError, TypeError, IndexError):
            return None
        finally:
            cache.close()

    def _store(self, f: DistFile, path: str, opts: Options, records: list[FileReport]) -> None:
        """Keep ``records`` under ``f``'s sha256 (never a file whose records hold an error)."""
        facts = self.facts.get(path)
        cache = self._cache(opts) if f.sha256 and facts is not None else None
        if cache is None or facts is None or any(r.error is not None for r in records):
            return
        doc = json.dumps({"metadata": facts.metadata, "names": list(facts.names)})
        facts_record = FileReport(path=path + "!", format=FACTS_KIND, size=0, notes=(doc,))
        try:
            cache.put(_key_path(f), _key(f), (*records, facts_record), base=path)
            cache.flush()
        finally:
            cache.close()


def _key_path(f: DistFile) -> str:
    return f"pypi-sha256:{f.sha256}"


def _key(f: DistFile) -> tuple[int, int, int, int, int]:
    """The cache's five stat fields for a file known by its digest: its size, zeros elsewhere."""
    return (0, 0, f.size or 0, 0, 0)


def _joined(own: FileReport | None, more: FileReport) -> FileReport:
    """The wheel's own record over its spans: the first error, every note once."""
    if own is None:
        return more
    notes = tuple(dict.fromkeys((*own.notes, *more.notes)))
    return dataclasses.replace(own, error=own.error or more.error, notes=notes)


def _error_record(path: str, message: str) -> FileReport:
    return FileReport(path=path, format="unknown", size=0, error=FileError(message))


def _marker_holds(release: Release, platform: choosing.Platform) -> bool:
    """The release's environment marker on ``platform`` (Linux, its CPU and Python)."""
    if not release.marker:
        return True
    from packaging.markers import Marker

    env = {
        "python_version": platform.python,
        "python_full_version": platform.python + ".0",
        "platform_machine": platform.arch,
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    return Marker(release.marker).evaluate(env)


# ------------------------------------------------------------------ the command's index (inputs)
_CURRENT: list[IndexSource] = []


def use(source: IndexSource) -> None:
    """The index the inputs of this command are read from (set once by the command)."""
    _CURRENT[:] = [source]


def current() -> IndexSource:
    """The command's index: the one ``use`` set, else pip's configuration as it is."""
    if not _CURRENT:
        _CURRENT.append(IndexSource(config.resolve()))
    return _CURRENT[0]


def facts_of(path: str) -> WheelFacts | None:
    """What a remote wheel read in this process says beside its members (None: no such wheel)."""
    return _CURRENT[0].facts.get(path) if _CURRENT else None


def releases_of(path: str) -> tuple[list[Release], config.Overrides]:
    """The releases a ``pkg:pypi/...`` input or a ``-r:FILE`` input asks for."""
    from fatbin_inspect.containers.index import purl, requirements

    if is_purl(path):
        return [purl.parse(path)], config.Overrides()
    req = requirements.read(path[len(REQUIREMENT_PREFIX) :])
    return req.releases, req.overrides()


def source_for(overrides: config.Overrides) -> IndexSource:
    """The command's index with a requirements file's own index options on top."""
    base = current()
    if overrides == config.Overrides():
        return base
    given = base.overrides  # the command's own options, then the file's (its --index-url wins)
    both = config.Overrides(
        overrides.index_url or given.index_url,
        given.extra_index_urls + overrides.extra_index_urls,
        given.find_links + overrides.find_links,
        given.no_index or overrides.no_index,
    )
    return dataclasses.replace(base, cfg=config.resolve(both), _transport=None, _pages={}, facts=base.facts)


def fetch_all(path: str, opts: Options, archs: Sequence[str | None] = (None,)) -> Iterator[Fetched]:
    """Each release of the input ``path`` read for each host CPU in ``archs`` (None: the
    command's platform), one ``Fetched`` each."""
    releases, overrides = releases_of(path)
    src = source_for(overrides)
    for release in releases:
        for arch in dict.fromkeys(archs):
            yield src.fetch(release, src.platform_for(arch), opts)


def reports(path: str, opts: Options) -> Iterator[FileReport]:
    """The records of an index input on the command's platform (``list``, ``scan``, ``gate``,
    ``diff``)."""
    for fetched in fetch_all(path, opts):
        yield from fetched.records


def host_groups(targets: Sequence[Target]) -> dict[str | None, Sequence[Target]]:
    """``judge_groups`` of ``targets``, each group a tuple; without targets one empty group on
    the command's platform (None)."""
    if not targets:
        return {None: ()}
    return {arch: tuple(on) for arch, on in judge_groups(targets).items()}


def judge_groups(targets: Sequence[Target]) -> dict[str, list[Target]]:
    """The targets by the host CPU whose wheel they are judged on (a target whose host is not
    known: the command's platform, this machine's CPU unless ``--platform`` says otherwise)."""
    default = current().platform_for(None).arch
    groups: dict[str, list[Target]] = {}
    for t in targets:
        groups.setdefault(t.host_arch or default, []).append(t)
    return groups
