"""How index pages, metadata and wheel bytes are fetched: ``http(s)://`` through the project's
one HTTP transport (``containers.http``: its redirect policy, caps, deadlines, credentials only
to their own host), ``file://`` from the local file.

Plain http is allowed to loopback hosts and to the hosts of the indexes the user configured
(``IndexSource``: an index named ``http://...`` is the user's choice, as pip takes it); a
redirect elsewhere in plain http is refused by the transport. A login comes from the URL or
netrc (``config.credentials``) and goes to that host only.
"""

from __future__ import annotations

import os
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from fatbin_inspect.containers import http
from fatbin_inspect.containers.index import config
from fatbin_inspect.errors import InputError, UnreadableError

CHUNK = 1 << 20
PAGE_MAX = 64 << 20  # a project page (torch's JSON page is ~3 MB) or a METADATA file
WHEEL_MAX = 8 << 30  # archives.MAX_MEMBER_BYTES: the largest file read at all


class NotFound(InputError):
    """The server says there is no such page or file (404, 410)."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Mapping[str, str]  # names in lower case
    body: bytes
    url: str  # after redirects


@dataclass
class Stream:
    """A body being read: ``chunks()`` gives it piece by piece; ``close()`` when done."""

    status: int
    headers: Mapping[str, str]  # content-type, content-range, content-length (lower case)
    url: str
    _pieces: Iterator[bytes] = field(repr=False, default=iter(()))
    _close: Callable[[], None] | None = field(repr=False, default=None)

    def chunks(self) -> Iterator[bytes]:
        return self._pieces

    def close(self) -> None:
        if self._close is not None:
            self._close()


def shown(url: str) -> str:
    """A URL as messages show it: no credentials, no fragment."""
    return config.without_credentials(url).partition("#")[0]


class Transport:
    """One command's fetching; counts the body bytes it received (``received``)."""

    def __init__(self, plain_http: Iterable[str] = ()) -> None:
        hosts = frozenset(urllib.parse.urlsplit(u).netloc.rpartition("@")[2] for u in plain_http)
        self._http = http.Transport(http.Policy(plain_http=frozenset(h for h in hosts if h)))
        self.received = 0

    def get(self, url: str, headers: Mapping[str, str] | None = None, limit: int = PAGE_MAX) -> Reply:
        """The whole body of ``url`` (at most ``limit`` bytes); an error status is an error."""
        stream = self.stream(url, headers, limit)
        try:
            body = b"".join(stream.chunks())
        finally:
            stream.close()
        return Reply(stream.status, stream.headers, body, stream.url)

    def stream(self, url: str, headers: Mapping[str, str] | None = None, limit: int = WHEEL_MAX) -> Stream:
        """``url``'s answer, its body not read yet: a status of 200 or 206, else an error."""
        scheme = urllib.parse.urlsplit(url).scheme
        if scheme == "file":
            return _file_stream(url, headers or {}, self)
        plain = shown(url)  # sent and shown alike: no login (that goes as a header), no fragment
        creds = config.credentials(url)
        given = []
        if creds is not None:
            host = http.netloc(http.parse_url(plain))
            given.append(http.basic(host, creds.user, creds.password, plain))
        resp = self._http.request(plain, plain, headers=headers, credentials=given)
        if resp.status in (404, 410):
            resp.close()
            raise NotFound(f"{plain}: not found (HTTP {resp.status})")
        if resp.status in (401, 403):
            resp.close()
            raise UnreadableError(
                f"{plain}: login denied (HTTP {resp.status}): check the credentials for its host"
            )
        try:
            resp.check_status(200, 206)
            found = {k: resp.header(k) for k in ("Content-Type", "Content-Range", "Content-Length")}
        except InputError:
            resp.close()
            raise
        return Stream(
            resp.status,
            {k.lower(): v for k, v in found.items() if v is not None},
            resp.url,
            self._counted(resp.chunks(limit)),
            resp.close,
        )

    def _counted(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        for piece in pieces:
            self.received += len(piece)
            yield piece


def _file_stream(url: str, headers: Mapping[str, str], owner: Transport) -> Stream:
    """A ``file://`` URL: the file (a folder: its ``index.html``, as a static index is laid
    out); ``Range`` is honoured as a server that takes ranges would."""
    path = urllib.request.url2pathname(urllib.parse.urlsplit(url).path)
    if os.path.isdir(path):
        path = os.path.join(path, "index.html")
    try:
        fh = open(path, "rb")  # closed by Stream.close
    except FileNotFoundError:
        raise NotFound(f"{shown(url)}: not found") from None
    except OSError as exc:
        raise UnreadableError(f"{shown(url)}: cannot read: {exc.strerror or exc}") from None
    size = os.fstat(fh.fileno()).st_size
    wanted = headers.get("Range", "")
    start, end, status = 0, size - 1, 200
    if wanted.startswith("bytes=") and size:
        first, _, last = wanted[6:].partition("-")
        start, end = (
            (max(0, size - int(last)), size - 1)
            if not first
            else (int(first), min(size - 1, int(last or size - 1)))
        )
        status = 206
    fh.seek(start)

    def pieces() -> Iterator[bytes]:
        left = end - start + 1
        while left > 0 and (data := fh.read(min(CHUNK, left))):
            left -= len(data)
            yield data

    found = {
        "content-length": str(end - start + 1),
        "content-type": "text/html" if path.endswith(".html") else "",
    }
    if status == 206:
        found["content-range"] = f"bytes {start}-{end}/{size}"
    return Stream(status, found, url, owner._counted(pieces()), fh.close)
