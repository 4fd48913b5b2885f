"""The one HTTP transport: registries (``containers/registry.py``) and package indexes speak through it.

Built on urllib3 2.x (its connection and response classes): TLS with certificate and host name
checks, status-line and header parsing (``http.client``'s bounds: 100 header lines of at most
64 KiB), chunked decoding and ``Content-Length`` enforcement come from it. urllib3 over httpx:
one package with no dependencies (httpx brings httpcore, h11, anyio, sniffio, certifi, idna) and
a blocking API the scan's worker processes call as they are; over the standard library's
``urllib``: its redirect handler cannot be held to the policy below without being rewritten, and
it has no bound on a slow response.

The policy, the same for every caller:

- Schemes: ``https``, and plain ``http`` only to a host allowed it: a loopback host
  (``127.0.0.0/8``, ``::1``, ``localhost``) or one the caller names (``--insecure-registry``).
- Redirects (301, 302, 303, 307, 308) are followed by this module, at most ``MAX_REDIRECTS``,
  only under the same scheme rule (never to ``file:``, ``ftp:`` or any other scheme; ``http`` only
  to a host allowed it, also from ``https``). A 303, or a 301/302 answering a POST, continues as
  a GET without the body.
- Credentials (``Authorization``) go only to the host (and port) they were given for: a redirect
  to another host drops them; a request body (an OAuth2 refresh token) is never sent on to another
  host (a 307/308 there is refused).
- Every header this module or a caller uses is validated before use (``Response.header``):
  visible ASCII, at most 8 KiB; ``Content-Length`` digits only; ``Location`` a URL with a host and
  without userinfo; ``Content-Range`` matching the range asked for; a ``WWW-Authenticate``
  challenge parsed strictly (``parse_challenge``) and a token realm checked as a URL to fetch.
- Bodies are read up to a byte cap the caller gives (a declared ``Content-Length`` over it is
  refused unread); ``Accept-Encoding: identity`` is asked and any other ``Content-Encoding`` is
  refused, so nothing is inflated here.
- Time: ``timeout`` seconds without a byte (connect or read), and ``deadline`` seconds for the
  whole exchange, headers and body (a watchdog shuts the socket down: a server that sends one byte
  a second is cut off).

Every failure is one ``errors.InputError`` (``UnreadableError``: transport, protocol, status,
policy; ``CorruptError``: a header that does not validate; ``LimitExceeded``: a size) whose one
line names the reference the caller was reading and the URL.
"""

from __future__ import annotations

import base64
import http
import http.client
import io
import ipaddress
import re
import socket
import ssl
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import HTTPError, IncompleteRead, InvalidChunkLength, LocationParseError
from urllib3.util import Url, parse_url

from fatbin_inspect.errors import CorruptError, InputError, LimitExceeded, UnreadableError

TIMEOUT = 60.0  # seconds without a byte before a request is given up
DEADLINE = 600.0  # seconds for one whole exchange (the budget of one top-level input)
MAX_REDIRECTS = 5
MAX_HEADER = 8192  # bytes of one header value used
MAX_URL = 4096
CHUNK = 1 << 20
USER_AGENT = "fatbin-inspect"
REDIRECTS = frozenset({301, 302, 303, 307, 308})
_VISIBLE = re.compile(r"^[\x20-\x7e\t]*$")
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_PARAM = re.compile(rf'\s*({_TOKEN})\s*=\s*(?:({_TOKEN})|"((?:[^"\\\x00-\x1f\x7f]|\\[\x20-\x7e])*)")\s*(,|$)')
_CRED = re.compile(r"^[\x21-\x7e]+$")  # a token or a base64 credential: visible ASCII, no space


def show_url(url: str) -> str:
    """A URL as it goes into a message: at most 200 characters, anything not visible ASCII escaped."""
    text = url if _VISIBLE.match(url) and "\t" not in url else url.encode("unicode_escape").decode("ascii")
    return text if len(text) <= 200 else text[:200] + "…"


def is_loopback(host: str) -> bool:
    """``localhost``, ``127.0.0.0/8`` or ``::1`` (brackets allowed)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def netloc(url: Url) -> str:
    """``host:port`` of a parsed URL, the port made explicit (443 for https, 80 for http)."""
    port = url.port or (443 if url.scheme == "https" else 80)
    host = f"[{url.host.strip('[]')}]" if url.host and ":" in url.host else (url.host or "")
    return f"{host.lower()}:{port}"


@dataclass(frozen=True)
class Policy:
    """Which hosts may be spoken to in plain http, beside loopback ones: ``HOST`` (any port) or
    ``HOST:PORT`` as the user wrote them."""

    plain_http: frozenset[str] = frozenset()
    timeout: float = TIMEOUT
    deadline: float = DEADLINE
    max_redirects: int = MAX_REDIRECTS
    ca_file: str | None = None  # a CA bundle to trust instead of the system's (tests, private CAs)

    def allows_plain_http(self, url: Url) -> bool:
        host = (url.host or "").lower()
        bare = host.strip("[]")
        named = {h.lower() for h in self.plain_http}
        return is_loopback(host) or bool({host, bare, netloc(url), f"{host}:{url.port}"} & named)

    def check_url(self, text: str, ref: str, what: str = "URL") -> Url:
        """``text`` parsed; ``UnreadableError`` unless it is an https URL, or an http one to a host
        allowed plain http, with a host and without user info."""
        if len(text) > MAX_URL or not _VISIBLE.match(text) or "\t" in text or " " in text:
            raise UnreadableError(f"{ref}: {what} {show_url(text)!r} is not a URL")
        try:
            url = parse_url(text)
        except LocationParseError:
            raise UnreadableError(f"{ref}: {what} {show_url(text)!r} is not a URL") from None
        scheme = (url.scheme or "").lower()
        if scheme not in ("http", "https"):
            raise UnreadableError(f"{ref}: {what} {show_url(text)} is not http(s): refused")
        if not url.host or url.auth:
            raise UnreadableError(f"{ref}: {what} {show_url(text)} has no host or carries a login: refused")
        if scheme == "http" and not self.allows_plain_http(url):
            raise UnreadableError(
                f"{ref}: {what} {show_url(text)} is plain http to a host not allowed it "
                "(only loopback hosts and --insecure-registry ones): refused"
            )
        return url


@dataclass(frozen=True)
class Credentials:
    """An ``Authorization`` value and the one ``host:port`` it may be sent to."""

    host: str
    value: str = field(repr=False)


def basic(host: str, user: str, password: str, ref: str) -> Credentials:
    """Basic credentials for ``host`` (``netloc`` form); a user or password holding a control
    character, or a user with a colon (RFC 7617), is refused."""
    if ":" in user or any(ord(c) < 0x20 or ord(c) == 0x7F for c in user + password):
        raise UnreadableError(f"{ref}: the login for {host} holds a colon in its user or a control character")
    return Credentials(host, "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii"))


def bearer(host: str, token: str, ref: str, source: str) -> Credentials:
    """A bearer token for ``host``: visible ASCII without spaces, at most 8 KiB, or an error naming
    where it came from (``source``: the token URL)."""
    if not isinstance(token, str) or not token or len(token) > MAX_HEADER or not _CRED.match(token):
        raise UnreadableError(
            f"{ref}: the token from {show_url(source)} is not a token (visible ASCII, ≤ 8 KiB)"
        )
    return Credentials(host, "Bearer " + token)


class Challenge(NamedTuple):
    """One ``WWW-Authenticate`` challenge: its scheme (lower case) and parameters."""

    scheme: str
    params: Mapping[str, str]


def parse_challenge(value: str, ref: str, url: str) -> Challenge:
    """The first challenge of a ``WWW-Authenticate`` value (RFC 7235 ``auth-param`` list); a value
    that does not parse, repeats a parameter or is over 8 KiB is ``CorruptError``."""
    bad = CorruptError(f"{ref}: {show_url(url)}: a WWW-Authenticate header that does not parse")
    if len(value) > MAX_HEADER or not _VISIBLE.match(value):
        raise bad
    m = re.match(rf"\s*({_TOKEN})(?:\s+|$)", value)
    if not m:
        raise bad
    params: dict[str, str] = {}
    pos = m.end()
    while pos < len(value):
        p = _PARAM.match(value, pos)
        if not p or p.end() == pos:
            break  # a second challenge (``Basic realm=...``) or a token68: the first one ends here
        key = p.group(1).lower()
        if key in params:
            raise bad
        params[key] = p.group(2) if p.group(2) is not None else re.sub(r"\\(.)", r"\1", p.group(3))
        pos = p.end()
    return Challenge(m.group(1).lower(), params)


class Range(NamedTuple):
    """Bytes ``start`` to ``end`` inclusive (``None``: to the end)."""

    start: int
    end: int | None = None

    @property
    def header(self) -> str:
        return f"bytes={self.start}-{'' if self.end is None else self.end}"


class _Watchdog:
    """Shuts a socket down when the exchange's deadline passes (a blocked read then ends)."""

    def __init__(self, deadline: float):
        self.sock: socket.socket | None = None
        self.fired = False
        self.seconds = deadline
        self._timer = threading.Timer(deadline, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        if self.sock is not None:
            try:
                socket.socket.shutdown(self.sock, socket.SHUT_RDWR)
            except OSError:
                pass

    def cancel(self) -> None:
        self._timer.cancel()


class Response:
    """A final (non-redirect) response: ``status``, its ``url``, validated headers, and the body
    read once under a cap (``read``, ``chunks`` or ``reader``). Close it (or use ``with``)."""

    def __init__(
        self,
        ref: str,
        method: str,
        url: str,
        raw: urllib3.BaseHTTPResponse,
        conn: HTTPConnection,
        dog: _Watchdog,
    ):
        self.ref = ref
        self.method = method
        self.url = url
        self.status = raw.status
        self._raw = raw
        self._conn = conn
        self._dog = dog
        self._got = 0
        self.range_honoured = False

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._dog.cancel()
        self._raw.release_conn()
        self._conn.close()

    def _fail(self, why: str) -> UnreadableError:
        return UnreadableError(f"{self.ref}: {self.method} {show_url(self.url)}: {why}")

    # ------------------------------------------------------------------- headers
    def header(self, name: str) -> str | None:
        """A header's value (repeated ones joined by ``, ``), or None; ``CorruptError`` when it is
        over 8 KiB or holds anything but visible ASCII."""
        value = self._raw.headers.get(name)
        if value is None:
            return None
        if len(value) > MAX_HEADER or not _VISIBLE.match(value):
            raise CorruptError(
                f"{self.ref}: {show_url(self.url)}: header {name} is not visible ASCII of ≤ 8 KiB"
            )
        return value.strip()

    @property
    def content_length(self) -> int | None:
        """The declared body length (None: not declared); ``CorruptError`` when not digits."""
        value = self.header("Content-Length")
        if value is None:
            return None
        if not value.isdigit() or len(value) > 19:
            raise CorruptError(
                f"{self.ref}: {show_url(self.url)}: Content-Length {value[:40]!r} is not a length"
            )
        return int(value)

    @property
    def content_type(self) -> str:
        """The media type without parameters, lower case ('' when not said)."""
        return (self.header("Content-Type") or "").split(";")[0].strip().lower()

    def check_status(self, *ok: int) -> None:
        """``UnreadableError`` naming the status unless it is one of ``ok`` (default 200, 206). The
        server's reason phrase is not shown: the standard one is."""
        if self.status in (ok or (200, 206)):
            return
        try:
            phrase = http.HTTPStatus(self.status).phrase
        except ValueError:
            phrase = "unknown status"
        raise self._fail(f"HTTP {self.status} {phrase}")

    # ---------------------------------------------------------------------- body
    def _cap(self, cap: int) -> None:
        length = self.content_length
        if length is not None and length > cap:
            raise LimitExceeded(
                f"{self.ref}: {show_url(self.url)}: the body declares {length} bytes: over {cap} bytes"
            )

    def read_some(self, n: int, cap: int) -> bytes:
        """Up to ``n`` bytes of the body (b'' at its end); past ``cap`` bytes in all,
        ``LimitExceeded``; a broken body, ``UnreadableError``."""
        try:
            data = self._raw.read(min(n, cap - self._got + 1))
        except (HTTPError, http.client.HTTPException, OSError, ValueError) as exc:
            self.close()
            raise self._fail(self._why(exc)) from None
        if self._dog.fired:  # the shut-down socket reads as an end: not the body's end
            self.close()
            raise self._fail(self._why(TimeoutError()))
        self._got += len(data)
        if self._got > cap:
            self.close()
            raise LimitExceeded(f"{self.ref}: {show_url(self.url)}: the body is over {cap} bytes")
        if not data and n:
            self.close()  # the body's end: the connection and the watchdog go now
        return data

    def _why(self, exc: BaseException) -> str:
        if self._dog.fired:
            return f"no whole answer within {self._dog.seconds:g} s"
        return _reason(exc)

    def chunks(self, cap: int, size: int = CHUNK) -> Iterator[bytes]:
        """The body in pieces of at most ``size`` bytes, at most ``cap`` bytes in all."""
        self._cap(cap)
        while data := self.read_some(size, cap):
            yield data

    def read(self, cap: int) -> bytes:
        """The whole body, at most ``cap`` bytes (else ``LimitExceeded``)."""
        return b"".join(self.chunks(cap))

    def reader(self, cap: int, buffer: int = CHUNK) -> io.BufferedReader:
        """The body as a buffered file (``peek``, ``read``) for a consumer such as ``tarfile``;
        its reads raise what ``read_some`` does."""
        self._cap(cap)
        return io.BufferedReader(_BodyIO(self, cap), buffer)


class _BodyIO(io.RawIOBase):
    def __init__(self, resp: Response, cap: int):
        self._resp = resp
        self._capacity = cap

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._resp.read_some(len(b), self._capacity)
        b[: len(data)] = data
        return len(data)


def _reason(exc: BaseException) -> str:
    """One line for a transport, TLS or protocol failure: the first cause (urllib3 wraps
    ``http.client``'s and the socket's errors) that says what went wrong."""
    chain: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(chain) < 6:
        chain.append(cause)
        reason = getattr(cause, "reason", None)
        cause = reason if isinstance(reason, BaseException) else cause.__context__
    for c in chain:
        if isinstance(c, ssl.SSLCertVerificationError):
            return f"TLS certificate not trusted ({c.verify_message})"
        if isinstance(c, (socket.timeout, TimeoutError)):
            return "timed out"
        if isinstance(c, http.client.LineTooLong):
            return "a header or chunk line over 64 KiB"
        if isinstance(c, http.client.BadStatusLine):
            return "not an HTTP status line"
        if isinstance(c, (http.client.IncompleteRead, IncompleteRead, InvalidChunkLength)):
            return "the body breaks off (short, or broken chunked encoding)"
        if isinstance(c, ConnectionRefusedError):
            return "connection refused"
    last = chain[-1]
    text = str(last).splitlines()[0] if str(last) else type(last).__name__
    return show_url(text)[:160]


class Transport:
    """HTTP GET/HEAD (and the POST of an OAuth2 token grant) under one ``Policy``."""

    def __init__(self, policy: Policy | None = None):
        self.policy = policy or Policy()

    def request(
        self,
        url: str,
        ref: str,
        *,
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
        credentials: Iterable[Credentials] = (),
        body: bytes | None = None,
        byte_range: Range | None = None,
        deadline: float | None = None,
    ) -> Response:
        """The final response to ``method url`` after redirects (any status: see
        ``Response.check_status``). ``ref`` names what is being read, for messages; each
        ``Credentials`` is sent only to its host; ``byte_range`` asks for part of the body and the
        response says whether it was honoured (206 with a matching ``Content-Range``) or not (200,
        the whole body)."""
        creds = {c.host: c.value for c in credentials}
        for name, value in (headers or {}).items():
            if not re.fullmatch(_TOKEN, name) or not _VISIBLE.match(value) or len(value) > MAX_HEADER:
                raise UnreadableError(f"{ref}: request header {name[:40]!r} is not a header")
        hops = 0
        current = self.policy.check_url(url, ref)
        while True:
            resp = self._once(method, current, ref, headers or {}, creds, body, byte_range, deadline)
            if resp.status not in REDIRECTS:
                if byte_range is not None:
                    resp.range_honoured = _range_honoured(resp, byte_range)
                return resp
            with resp:
                location = resp.header("Location")
            if not location:
                raise UnreadableError(
                    f"{ref}: {method} {show_url(str(current))}: HTTP {resp.status} without a Location"
                )
            hops += 1
            if hops > self.policy.max_redirects:
                raise UnreadableError(
                    f"{ref}: {method} {show_url(url)}: more than {self.policy.max_redirects} redirects"
                )
            target = _join(str(current), location)
            came_from = current
            current = self.policy.check_url(target, ref, f"{method} {show_url(str(current))}: redirect to")
            if resp.status == 303 or (resp.status in (301, 302) and method == "POST"):
                method, body = ("GET" if method != "HEAD" else "HEAD"), None
            if body is not None and netloc(current) != netloc(came_from):
                # a body (a token grant's refresh token) is a credential too: never to another host
                raise UnreadableError(
                    f"{ref}: {method} {show_url(str(came_from))}: redirect of a request body to "
                    f"{show_url(str(current))}, another host: refused"
                )

    def _once(
        self,
        method: str,
        url: Url,
        ref: str,
        headers: Mapping[str, str],
        creds: Mapping[str, str],
        body: bytes | None,
        byte_range: Range | None,
        deadline: float | None,
    ) -> Response:
        send = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity", **headers}
        if byte_range is not None:
            send["Range"] = byte_range.header
        auth = creds.get(netloc(url))
        if auth is not None:
            send["Authorization"] = auth
        port = url.port or (443 if url.scheme == "https" else 80)
        timeout = self.policy.timeout
        conn: HTTPConnection
        if url.scheme == "https":
            ctx = ssl.create_default_context(cafile=self.policy.ca_file)
            conn = HTTPSConnection(url.host.strip("[]"), port, timeout=timeout, ssl_context=ctx)  # type: ignore[union-attr]
        else:
            conn = HTTPConnection(url.host.strip("[]"), port, timeout=timeout)  # type: ignore[union-attr]
        dog = _Watchdog(deadline or self.policy.deadline)
        try:
            conn.connect()
            dog.sock = conn.sock
            conn.request(method, url.request_uri, body=body, headers=send, preload_content=False)
            raw = conn.getresponse()
            if dog.fired:  # headers cut short by the watchdog read as complete ones
                raise TimeoutError
        except (HTTPError, http.client.HTTPException, OSError, ValueError) as exc:
            dog.cancel()
            conn.close()
            why = f"no answer within {deadline or self.policy.deadline:g} s" if dog.fired else _reason(exc)
            raise UnreadableError(f"{ref}: {method} {show_url(str(url))}: {why}") from None
        resp = Response(ref, method, str(url), raw, conn, dog)
        try:
            encoding = resp.header("Content-Encoding")
            if encoding and encoding.lower() != "identity":
                raise CorruptError(
                    f"{ref}: {show_url(str(url))}: Content-Encoding {encoding[:40]!r}, not asked for"
                )
        except InputError:
            resp.close()
            raise
        return resp


def _join(base: str, location: str) -> str:
    """``location`` resolved against ``base`` (an absolute one kept as it is)."""
    import urllib.parse

    return urllib.parse.urljoin(base, location)


_CONTENT_RANGE = re.compile(r"^bytes (\d{1,19})-(\d{1,19})/(\d{1,19}|\*)$")


def _range_honoured(resp: Response, asked: Range) -> bool:
    """206 with a ``Content-Range`` that starts where asked: True; 200: False (the whole body);
    a 206 whose range is not the one asked for: ``CorruptError``."""
    if resp.status != 206:
        return False
    value = resp.header("Content-Range") or ""
    m = _CONTENT_RANGE.match(value)
    if not m or int(m.group(1)) != asked.start or int(m.group(2)) < int(m.group(1)):
        resp.close()
        raise CorruptError(
            f"{resp.ref}: {show_url(resp.url)}: Content-Range {value[:60]!r} is not the range asked ({asked.header})"
        )
    if asked.end is not None and int(m.group(2)) > asked.end:
        resp.close()
        raise CorruptError(
            f"{resp.ref}: {show_url(resp.url)}: Content-Range {value[:60]!r} is past the range asked"
        )
    return True
