"""How index pages, metadata and wheel bytes are fetched: ``http(s)://`` through urllib3,
``file://`` from the local file.

The project's one HTTP transport (``containers/http.py``, the registry's too) had not landed when
this was written; this module is the narrow interface the index code calls (``get`` for a whole
small body, ``stream`` for a body read piece by piece, both with request headers such as
``Range``), so only this file changes when it does. Credentials (``config.credentials``) go to
the URL's own host only: urllib3 drops ``Authorization`` on a redirect to another host.
"""

from __future__ import annotations

import base64
import os
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from fatbin_inspect.containers.index import config
from fatbin_inspect.errors import InputError, LimitExceeded, UnreadableError

TIMEOUT = 60.0  # seconds without a byte before a request is given up
CHUNK = 1 << 20
PAGE_MAX = 64 << 20  # a project page (torch's JSON page is ~3 MB) or a METADATA file


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
    headers: Mapping[str, str]
    url: str
    _resp: object = field(repr=False, default=None)
    _file: object = field(repr=False, default=None)

    def chunks(self) -> Iterator[bytes]:
        source = self._resp if self._resp is not None else self._file
        while True:
            try:
                piece = source.read(CHUNK)  # type: ignore[attr-defined]
            except Exception as exc:  # urllib3 ProtocolError, ReadTimeoutError, OSError
                raise UnreadableError(f"{shown(self.url)}: the transfer broke off: {exc}") from None
            if not piece:
                return
            yield piece

    def close(self) -> None:
        for held in (self._resp, self._file):
            if held is not None:
                held.close()  # type: ignore[attr-defined]


def shown(url: str) -> str:
    """A URL as messages show it: no credentials, no fragment."""
    return config.without_credentials(url).partition("#")[0]


class Transport:
    """One connection pool for a command's requests; counts the body bytes it received."""

    def __init__(self) -> None:
        self._pool: object | None = None
        self.received = 0

    def _manager(self) -> object:
        if self._pool is None:
            import urllib3

            self._pool = urllib3.PoolManager(
                timeout=urllib3.Timeout(connect=TIMEOUT, read=TIMEOUT),
                retries=urllib3.Retry(total=2, redirect=5, raise_on_status=False),
            )
        return self._pool

    def get(self, url: str, headers: Mapping[str, str] | None = None, limit: int = PAGE_MAX) -> Reply:
        """The whole body of ``url`` (at most ``limit`` bytes); an error status is an error."""
        stream = self.stream(url, headers)
        try:
            parts, got = [], 0
            for piece in stream.chunks():
                got += len(piece)
                if got > limit:
                    raise LimitExceeded(f"{shown(url)}: the answer is over {limit:,} bytes")
                parts.append(piece)
            return Reply(stream.status, stream.headers, b"".join(parts), stream.url)
        finally:
            stream.close()

    def stream(self, url: str, headers: Mapping[str, str] | None = None) -> Stream:
        """``url``'s answer, its body not read yet: a status of 200 or 206, else an error."""
        scheme = urllib.parse.urlsplit(url).scheme
        if scheme == "file":
            return _file_stream(url, headers or {})
        if scheme not in ("http", "https"):
            raise UnreadableError(f"{shown(url)}: only http(s) and file URLs are read")
        import urllib3

        sent = dict(headers or {})
        creds = config.credentials(url)
        if creds is not None:
            token = base64.b64encode(f"{creds.user}:{creds.password}".encode()).decode()
            sent["Authorization"] = f"Basic {token}"
        plain = config.without_credentials(url)
        try:
            resp = self._manager().request(  # type: ignore[attr-defined]
                "GET", plain, headers=sent, preload_content=False, decode_content=True
            )
        except urllib3.exceptions.HTTPError as exc:
            raise UnreadableError(f"{shown(url)}: cannot reach the index: {_reason(exc)}") from None
        final = urllib.parse.urljoin(plain, resp.geturl() or "")  # (urllib3 may give the path only)
        if resp.status in (200, 206):
            counted = _Counted(resp, self)
            return Stream(resp.status, {k.lower(): v for k, v in resp.headers.items()}, final, _resp=counted)
        resp.drain_conn()
        resp.release_conn()
        raise _status_error(resp.status, url)


class _Counted:
    """A urllib3 response whose body bytes are added to the transport's ``received``."""

    def __init__(self, resp: object, owner: Transport) -> None:
        self._resp, self._owner = resp, owner

    def read(self, n: int) -> bytes:
        data: bytes = self._resp.read(n)  # type: ignore[attr-defined]
        self._owner.received += len(data)
        return data

    def close(self) -> None:
        self._resp.release_conn()  # type: ignore[attr-defined]


def _reason(exc: Exception) -> str:
    inner = getattr(exc, "reason", None)
    return str(inner or exc).split(": ", 1)[-1][:200]


def _status_error(status: int, url: str) -> InputError:
    if status in (404, 410):
        return NotFound(f"{shown(url)}: not found (HTTP {status})")
    if status in (401, 403):
        return UnreadableError(
            f"{shown(url)}: login denied (HTTP {status}): check the credentials for its host"
        )
    return UnreadableError(f"{shown(url)}: the index answered HTTP {status}")


def _file_stream(url: str, headers: Mapping[str, str]) -> Stream:
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
    if wanted.startswith("bytes="):
        start, end = _range(wanted[6:], size)
        fh.seek(start)
        return Stream(
            206,
            {"content-range": f"bytes {start}-{end}/{size}", "content-length": str(end - start + 1)},
            url,
            _file=_Limited(fh, end - start + 1),
        )
    content = "text/html" if path.endswith(".html") else "application/octet-stream"
    return Stream(200, {"content-length": str(size), "content-type": content}, url, _file=fh)


def _range(spec: str, size: int) -> tuple[int, int]:
    first, _, last = spec.partition("-")
    if not first:
        return max(0, size - int(last)), size - 1
    return int(first), min(size - 1, int(last)) if last else size - 1


class _Limited:
    def __init__(self, fh: object, left: int) -> None:
        self._fh, self._left = fh, left

    def read(self, n: int) -> bytes:
        data: bytes = self._fh.read(min(n, self._left))  # type: ignore[attr-defined]
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._fh.close()  # type: ignore[attr-defined]
