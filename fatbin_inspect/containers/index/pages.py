"""A project's files as the Simple API lists them: PEP 691 JSON, else PEP 503 HTML.

No Simple API client library is used: the two well-kept ones each bring their own HTTP stack
(``pypi-simple`` requests and BeautifulSoup, ``unearth`` httpx) and cannot run over the one
transport (redirect policy, caps, credentials) the registry client uses too; the formats
themselves are a JSON document and a page of anchors, read here with ``json`` and
``html.parser``. Files are told apart with ``packaging.utils`` (wheel and sdist names).
"""

from __future__ import annotations

import html.parser
import os
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fatbin_inspect.errors import CorruptError

if TYPE_CHECKING:
    from packaging.tags import Tag
    from packaging.version import Version

ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"


@dataclass(frozen=True)
class DistFile:
    """One file of a release as the index lists it. ``tags`` is empty for an sdist;
    ``metadata``: the index serves the file's METADATA alone (PEP 658, ``URL.metadata``)."""

    filename: str
    url: str
    version: Version
    tags: frozenset[Tag]
    sha256: str | None = None
    requires_python: str | None = None
    yanked: bool = False
    metadata: bool = False
    metadata_sha256: str | None = None
    size: int | None = None

    @property
    def is_wheel(self) -> bool:
        return bool(self.tags)


def page_url(index_url: str, name: str) -> str:
    """The project page of ``name`` (canonical) under a Simple API root."""
    return index_url.rstrip("/") + "/" + name + "/"


def parse_page(body: bytes, content_type: str, url: str, name: str) -> list[DistFile]:
    """The files of project ``name`` on the page at ``url`` (JSON when ``content_type`` says so,
    else HTML); a page that does not parse is a ``CorruptError`` naming what is wrong."""
    if content_type.split(";")[0].strip().lower() == JSON_TYPE:
        return _json_files(body, url, name)
    return _html_files(body, url, name)


def _json_files(body: bytes, url: str, name: str) -> list[DistFile]:
    from fatbin_inspect.errors import InputError
    from fatbin_inspect.formats.documents import loads_json

    try:
        doc = loads_json(body)
    except InputError as exc:
        raise CorruptError(f"the index's JSON page does not parse: {exc}") from None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, list):
        raise CorruptError("the index's JSON page has no files list")
    out = []
    for i, f in enumerate(files):
        if (
            not isinstance(f, dict)
            or not isinstance(f.get("filename"), str)
            or not isinstance(f.get("url"), str)
        ):
            raise CorruptError(f"the index's JSON page: files[{i}] has no filename or url")
        hashes = f["hashes"] if isinstance(f.get("hashes"), dict) else {}
        meta = f.get("core-metadata", f.get("dist-info-metadata", False))
        size = f.get("size")
        made = _dist_file(
            f["filename"],
            urllib.parse.urljoin(url, f["url"]),
            name,
            sha256=_hex(hashes.get("sha256")),
            requires_python=f.get("requires-python") if isinstance(f.get("requires-python"), str) else None,
            yanked=bool(f.get("yanked")),
            metadata=bool(meta),
            metadata_sha256=_hex(meta.get("sha256")) if isinstance(meta, dict) else None,
            size=size if isinstance(size, int) and size >= 0 else None,
        )
        if made is not None:
            out.append(made)
    return out


def _hex(value: Any) -> str | None:
    if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdefABCDEF" for c in value):
        return value.lower()
    return None


class _Anchors(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.anchors.append((self._open, "".join(self._text).strip()))
            self._open = None


def _html_files(body: bytes, url: str, name: str) -> list[DistFile]:
    parser = _Anchors()
    try:
        parser.feed(body.decode("utf-8", "replace"))
        parser.close()
    except Exception as exc:  # html.parser raises AssertionError and others on hostile markup
        raise CorruptError(f"the index's HTML page does not parse: {exc}") from None
    out = []
    for attrs, text in parser.anchors:
        href = attrs.get("href")
        if not href:
            continue
        full = urllib.parse.urljoin(url, href)
        link, _, fragment = full.partition("#")
        frag = urllib.parse.parse_qs(fragment)
        meta = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
        filename = urllib.parse.unquote(link.rstrip("/").rsplit("/", 1)[-1]) or text
        made = _dist_file(
            filename,
            link,
            name,
            sha256=_hex(frag["sha256"][0]) if frag.get("sha256") else None,
            requires_python=attrs.get("data-requires-python"),
            yanked="data-yanked" in attrs,
            metadata=meta is not None and meta != "false",
            metadata_sha256=_hex(meta[7:]) if meta and meta.startswith("sha256=") else None,
        )
        if made is not None:
            out.append(made)
    return out


def folder_files(folder: str, name: str) -> list[DistFile]:
    """The files of ``name`` in a find-links folder (file URLs to them; no hashes)."""
    try:
        entries = sorted(os.listdir(folder))
    except OSError as exc:
        raise CorruptError(f"cannot list the find-links folder: {exc.strerror or exc}") from None
    base = "file://" + urllib.parse.quote(os.path.abspath(folder)) + "/"
    out = []
    for entry in entries:
        made = _dist_file(entry, base + urllib.parse.quote(entry), name)
        if made is not None:
            out.append(made)
    return out


def _dist_file(filename: str, url: str, name: str, **facts: Any) -> DistFile | None:
    """The file as a ``DistFile`` when it is a wheel or an sdist of project ``name``."""
    from packaging.utils import (
        InvalidSdistFilename,
        InvalidWheelFilename,
        canonicalize_name,
        parse_sdist_filename,
        parse_wheel_filename,
    )

    try:
        if filename.endswith(".whl"):
            project, version, _build, tags = parse_wheel_filename(filename)
        elif filename.endswith((".tar.gz", ".zip")):
            project, version = parse_sdist_filename(filename)
            tags = frozenset()
        else:
            return None
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    if canonicalize_name(project) != name:
        return None
    return DistFile(filename, url, version, frozenset(tags), **facts)


def lock_file(filename: str, url: str, name: str, sha256: str | None, size: int | None) -> DistFile | None:
    """A file a lock file names exactly (PEP 751 ``wheels``/``sdist``) as a ``DistFile``."""
    return _dist_file(filename, url, name, sha256=_hex(sha256), size=size)
