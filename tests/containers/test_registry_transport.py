"""The one HTTP transport (``containers/http.py``) and the registry client over it, against a
hostile server of the test's own (raw sockets through ``socketserver`` on 127.0.0.1: bad status
lines, broken chunking, odd and huge headers, huge and slow bodies, redirects to other schemes,
hosts and plain http, odd token realms) and a TLS one (``openssl``'s self-signed certificate).
Debian's ``docker-registry`` is the well-behaved side (tests/containers/test_oci_images.py).

Every client runs in a child process under an address-space limit (``RLIMIT_AS``, 1 GiB) and a
wall-clock bound (the subprocess timeout: a bound, not a speed assertion); each case must end in
one ``InputError`` line naming the reference and the URL, never a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import ROOT

MEMORY = 1 << 30
REF = "test-ref"

_CHILD = r"""
import json, resource, sys
mem = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
from fatbin_inspect.containers import http
from fatbin_inspect.errors import InputError
try:
    exec(sys.argv[2])
except InputError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
"""


def child(code: str, timeout: float = 30) -> Any:
    """Run ``code`` (it prints one JSON object, or raises InputError) in a child under the limits."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(MEMORY), code],
        capture_output=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0 and "Traceback" not in err, err[-3000:]
    return json.loads(proc.stdout)


Route = Callable[[socket.socket, dict[str, str]], None]


class Hostile(socketserver.ThreadingTCPServer):
    """An HTTP server that says exactly what each route's bytes are; it records each request's
    path and headers. Every loop is bounded in count and time."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, routes: dict[str, Route | bytes], tls: tuple[str, str] | None = None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes = routes
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.tls = tls

    @property
    def base(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.server_address[1]}"


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: Hostile = self.server  # type: ignore[assignment]
        sock = self.request
        sock.settimeout(10)
        if server.tls:
            import ssl

            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*server.tls)
            try:
                sock = ctx.wrap_socket(sock, server_side=True)
            except (ssl.SSLError, OSError):
                return
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < 1 << 16:
                data = sock.recv(4096)
                if not data:
                    return
                head += data
        except OSError:
            return
        lines = head.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
        path = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else ""
        headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
        base, _, query = path.partition("?")
        server.seen.append((base, {**headers, ":query": query}))
        route = server.routes.get(path.split("?")[0], b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        try:
            if isinstance(route, bytes):
                sock.sendall(route)
            else:
                route(sock, headers)
        except OSError:
            pass


@pytest.fixture
def serve() -> Iterator[Callable[..., Hostile]]:
    servers: list[Hostile] = []

    def start(routes: dict[str, Route | bytes], tls: tuple[str, str] | None = None) -> Hostile:
        srv = Hostile(routes, tls)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def ok(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    extra = "".join(f"{h}\r\n" for h in headers)
    return f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


def redirect(location: str, status: int = 302) -> bytes:
    return f"HTTP/1.1 {status} Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode()


def gets(urls: list[str], cap: int = 1 << 20, policy: str = "", **kw: str) -> list[dict]:
    """GET each URL in one child; per URL its body's length and the response's status, or the error."""
    args = ", ".join(f"{k}={v}" for k, v in kw.items())
    return child(
        f"t = http.Transport(http.Policy({policy}))\n"
        "out = []\n"
        f"for url in {urls!r}:\n"
        "    try:\n"
        f"        with t.request(url, {REF!r}{', ' + args if args else ''}) as r:\n"
        f"            body = r.read({cap})\n"
        "            out.append({'status': r.status, 'size': len(body), 'url': r.url, "
        "'range': r.range_honoured, 'body': body[:64].decode('latin-1')})\n"
        "    except InputError as exc:\n"
        "        out.append({'error': type(exc).__name__, 'message': str(exc)})\n"
        "print(json.dumps(out))\n"
    )  # type: ignore[return-value]


def get(url: str, cap: int = 1 << 20, policy: str = "", **kw: str) -> dict:
    return gets([url], cap, policy, **kw)[0]


def one_line(res: dict, *words: str) -> None:
    assert "error" in res, res
    msg = res["message"]
    assert "\n" not in msg and msg.startswith(f"{REF}: ") and len(msg) < 600, msg
    for w in words:
        assert w in msg, msg


# ------------------------------------------------------------------------- protocol garbage
def test_protocol_garbage_is_one_line_naming_the_url(serve):
    junk = {
        "/status": b"HTTX/1.1 200 OK\r\n\r\nhello",
        "/nostatus": b"\x00\xff\xfe garbage\r\n\r\n",
        "/chunks": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        "/shortchunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc",
        "/short": b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc",
        "/longline": b"HTTP/1.1 200 OK\r\nX-A: " + b"a" * 100_000 + b"\r\n\r\n",
        "/manyheaders": b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 500 + b"\r\n",
        "/chunkline": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1" * 200_000,
        "/closed": b"",
    }
    srv = serve(junk)
    results = dict(zip(junk, gets([srv.base + path for path in junk])))
    for path, res in results.items():
        one_line(res, f"GET {srv.base}{path}: ")
        assert res["error"] == "UnreadableError", (path, res)
    assert "not an HTTP status line" in results["/status"]["message"]
    assert "64 KiB" in results["/longline"]["message"]


def test_odd_headers_are_validated_before_use(serve):
    srv = serve(
        {
            "/len": b"HTTP/1.1 200 OK\r\nContent-Length: 12abc\r\n\r\nhello",
            "/type": b"HTTP/1.1 200 OK\r\nContent-Type: text/\xff\x01x\r\nContent-Length: 0\r\n\r\n",
            "/gzip": ok(b"\x1f\x8b\x08\x00", "Content-Encoding: gzip"),
            "/neg": b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello",
        }
    )
    gzip, length, neg = gets([srv.base + p for p in ("/gzip", "/len", "/neg")])
    assert gzip["error"] == "CorruptError"
    one_line(gzip, "Content-Encoding 'gzip', not asked for")
    one_line(length, srv.base + "/len")
    one_line(neg, srv.base + "/neg")
    res = child(
        f"t = http.Transport()\nwith t.request({srv.base + '/type'!r}, {REF!r}) as r:\n    r.content_type\n"
    )
    one_line(res, "header Content-Type is not visible ASCII")


def test_bodies_are_capped_declared_or_not(serve):
    def endless(sock: socket.socket, _h: dict[str, str]) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (1 << 16, b"z" * (1 << 16))
        for _ in range(4096):  # at most 256 MiB, far past the cap
            sock.sendall(chunk)

    srv = serve(
        {"/declared": b"HTTP/1.1 200 OK\r\nContent-Length: 10737418240\r\n\r\nabc", "/endless": endless}
    )
    res = get(srv.base + "/declared", cap=1 << 20)
    assert res["error"] == "LimitExceeded"
    one_line(res, "declares 10737418240 bytes: over 1048576 bytes")
    res = get(srv.base + "/endless", cap=1 << 22)
    assert res["error"] == "LimitExceeded"
    one_line(res, "over 4194304 bytes")


def test_slow_answers_end_at_the_deadline(serve):
    def dribble(head: bytes) -> Route:
        def route(sock: socket.socket, _h: dict[str, str]) -> None:
            sock.sendall(head)
            for _ in range(300):  # a byte every 0.05 s for at most 15 s
                sock.sendall(b"a")
                time.sleep(0.05)

        return route

    srv = serve(
        {
            "/body": dribble(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"),
            "/headers": dribble(b"HTTP/1.1 200 OK\r\nX-Slow: "),
        }
    )
    # and a server that accepts and says nothing: the per-read timeout
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    try:
        urls = [srv.base + "/body", srv.base + "/headers", f"http://127.0.0.1:{silent.getsockname()[1]}/x"]
        body, headers, quiet = gets(urls, policy="deadline=0.5, timeout=0.3")
    finally:
        silent.close()
    one_line(body, "no whole answer within 0.5 s")
    one_line(headers, "no answer within 0.5 s")
    one_line(quiet, "timed out")


def test_nothing_listening_is_one_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    one_line(get(f"http://127.0.0.1:{port}/v2/"), f"GET http://127.0.0.1:{port}/v2/: ")


# ------------------------------------------------------------------------------- redirects
def test_redirects_to_other_schemes_and_plain_http_are_refused(serve):
    srv = serve(
        {
            "/file": redirect("file:///etc/passwd"),
            "/ftp": redirect("ftp://127.0.0.1/x"),
            "/gopher": redirect("gopher://127.0.0.1:70/"),
            "/plain": redirect("http://registry.example.com/v2/"),
            "/login": redirect("http://user:pw@127.0.0.1:1/x"),
            "/bad": b"HTTP/1.1 302 Found\r\nLocation: http://a\x01b/\r\nContent-Length: 0\r\n\r\n",
            "/none": b"HTTP/1.1 302 Found\r\nContent-Length: 0\r\n\r\n",
            "/loop": redirect("/loop"),
        }
    )
    cases = {
        "/file": "file:///etc/passwd is not http(s): refused",
        "/ftp": "is not http(s): refused",
        "/gopher": "is not http(s): refused",
        "/plain": "plain http to a host not allowed it",
        "/login": "carries a login: refused",
        "/none": "HTTP 302 without a Location",
        "/loop": "more than 5 redirects",
        "/bad": "header Location is not visible ASCII",
    }
    for res, (path, words) in zip(gets([srv.base + p for p in cases]), cases.items()):
        assert res["error"] in ("UnreadableError", "CorruptError"), (path, res)
        one_line(res, words)
    # only the loop's six requests were made, and nothing was asked of another host
    assert [p for p, _h in srv.seen].count("/loop") == 6


def test_credentials_stay_on_their_host(serve):
    other = serve({"/blob": ok(b"layer bytes")})
    port = other.server_address[1]
    srv = serve(
        {
            "/same": redirect("/final"),
            "/final": ok(b"final"),
            "/away": redirect(f"http://localhost:{port}/blob", 307),
        }
    )
    host = f"127.0.0.1:{srv.server_address[1]}"
    for path in ("/same", "/away"):
        res = child(
            "t = http.Transport()\n"
            f"c = http.bearer({host!r}, 'tok.en-1', {REF!r}, 'realm')\n"
            f"with t.request({srv.base + path!r}, {REF!r}, credentials=[c]) as r:\n"
            "    print(json.dumps({'body': r.read(100).decode(), 'url': r.url}))\n"
        )
        assert "error" not in res, res
    seen = dict(srv.seen)
    assert seen["/same"]["authorization"] == seen["/final"]["authorization"] == "Bearer tok.en-1"
    assert seen["/away"]["authorization"] == "Bearer tok.en-1"
    (blob,) = [h for p, h in other.seen if p == "/blob"]
    assert "authorization" not in blob  # localhost:PORT is another host than 127.0.0.1:PORT
    # a POST's body (a refresh token) is never re-sent to another host
    res = child(
        "t = http.Transport()\n"
        f"t.request({srv.base + '/away'!r}, {REF!r}, method='POST', body=b'refresh_token=secret')\n"
    )
    one_line(res, "redirect of a request body to", "another host: refused")
    assert [p for p, _h in other.seen] == ["/blob"]


@pytest.fixture(scope="module")
def cert(tmp_path_factory) -> tuple[str, str]:
    if not shutil.which("openssl"):
        pytest.skip("openssl is not installed")
    d = tmp_path_factory.mktemp("tls")
    crt, key = str(d / "c.pem"), str(d / "k.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", crt],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return crt, key


def test_https_to_plain_http_only_on_a_host_allowed_it(serve, cert):
    plain = serve({"/blob": ok(b"plain")})
    srv = serve(
        {
            "/down": redirect("http://registry.example.com/blob"),
            "/loop": redirect(f"{plain.base}/blob"),
            "/ok": ok(b"tls"),
        },
        tls=cert,
    )
    ca = f"ca_file={cert[0]!r}"
    res = get(srv.base + "/ok", policy=ca)
    assert res["body"] == "tls", res
    one_line(get(srv.base + "/down", policy=ca), "plain http to a host not allowed it")
    res = get(srv.base + "/loop", policy=ca)  # loopback: allowed plain http
    assert res["body"] == "plain", res
    # a certificate nobody vouches for
    one_line(get(srv.base + "/ok"), "TLS certificate not trusted")


# ---------------------------------------------------------------------------------- ranges
def test_ranges_report_whether_the_server_honoured_them(serve):
    data = bytes(range(256)) * 4

    def ranged(sock: socket.socket, h: dict[str, str]) -> None:
        start, _, end = h["range"].removeprefix("bytes=").partition("-")
        part = data[int(start) : int(end) + 1]
        sock.sendall(
            ok(part, f"Content-Range: bytes {start}-{end}/{len(data)}", status="206 Partial Content")
        )

    srv = serve(
        {
            "/ranged": ranged,
            "/whole": ok(data),
            "/wrong": ok(b"xx", "Content-Range: bytes 0-1/1024", status="206 Partial Content"),
        }
    )
    rng = "http.Range(100, 199)"
    res = get(srv.base + "/ranged", byte_range=rng)
    assert (res["status"], res["size"], res["range"]) == (206, 100, True), res
    res = get(srv.base + "/whole", byte_range=rng)
    assert (res["status"], res["size"], res["range"]) == (200, 1024, False), res
    res = get(srv.base + "/wrong", byte_range=rng)
    assert res["error"] == "CorruptError"
    one_line(res, "is not the range asked (bytes=100-199)")
    assert dict(srv.seen)["/whole"]["range"] == "bytes=100-199"
    # HEAD: the headers of the whole body, no body read
    res = get(srv.base + "/whole", method="'HEAD'")
    assert (res["status"], res["size"]) == (200, 0), res
    assert srv.seen[-1][0] == "/whole"


# --------------------------------------------------------------- challenges and token realms
CHALLENGES = {
    'Bearer realm="file:///etc/passwd",service="r"': "token realm file:///etc/passwd is not http(s)",
    'Bearer realm="ftp://127.0.0.1/token"': "is not http(s): refused",
    'Bearer realm="http://auth.example.com/token"': "plain http to a host not allowed it",
    'Bearer realm="https://u:p@auth.example.com/t"': "carries a login",
    'Bearer realm="a",realm="b"': "WWW-Authenticate header that does not parse",
    'Bearer realm="x\x01y"': "header WWW-Authenticate is not visible ASCII",
    'Bearer service="r"': "unsupported authentication 'bearer'",
    "Negotiate abc": "unsupported authentication 'negotiate'",
    'Basic realm="r"': "asks for a login (none in the Docker config)",
    "": "HTTP 401 without a challenge",
    'Bearer realm="' + "a" * 10000 + '"': "header WWW-Authenticate is not visible ASCII of ≤ 8 KiB",
}


def test_odd_challenges_and_realms(serve, tmp_path):
    answers = iter(CHALLENGES)

    def challenge(sock: socket.socket, _h: dict[str, str]) -> None:
        header = next(answers)
        line = f"WWW-Authenticate: {header}\r\n" if header else ""
        sock.sendall(f"HTTP/1.1 401 Unauthorized\r\n{line}Content-Length: 0\r\n\r\n".encode("latin-1"))

    srv = serve({"/v2/app/manifests/t": challenge})
    for res, words in zip(registry_top(srv, tmp_path, times=len(CHALLENGES)), CHALLENGES.values()):
        assert res["message"].startswith(f"127.0.0.1:{srv.server_address[1]}/app:t: "), res
        assert words in res["message"], res
        assert "\n" not in res["message"]


def registry_top(srv: Hostile, tmp_path, auth: str = "", times: int = 1) -> list[dict]:
    """Read the top manifest of ``127.0.0.1:PORT/app:t`` through ``RegistryStore``, ``times``
    times (a new store each time), in one child."""
    cfg = tmp_path / "config.json"
    cfg.write_text(auth or "{}")
    code = (
        "import os\n"
        f"os.environ['DOCKER_CONFIG'] = {str(tmp_path)!r}\n"
        "from fatbin_inspect.containers import registry\n"
        "out = []\n"
        f"for _ in range({times}):\n"
        "    try:\n"
        f"        s = registry.open_store('127.0.0.1:{srv.server_address[1]}/app:t')\n"
        "        out.append({'top': s._top()})\n"
        "    except InputError as exc:\n"
        "        out.append({'error': type(exc).__name__, 'message': str(exc)})\n"
        "print(json.dumps(out))\n"
    )
    return child(code)  # type: ignore[no-any-return]


def test_tokens_are_validated_and_logins_go_to_the_realm_only(serve, tmp_path):
    manifest = b'{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json"}'
    tokens = serve(
        {
            "/good": ok(b'{"token": "abc.def"}'),
            "/space": ok(b'{"token": "abc def"}'),
            "/newline": ok(b'{"token": "abc\\r\\nX-Injected: 1"}'),
            "/none": ok(b'{"nothing": 1}'),
            "/junk": ok(b"<html>"),
            "/huge": ok(b'{"token": "' + b"a" * (2 << 20) + b'"}'),
        }
    )
    login = '{"auths": {"%s": {"auth": "dXNlcjpwdw=="}}}'  # user:pw

    realms = ["/space", "/newline", "/none", "/junk", "/huge", "/good"]
    asked = iter(realms)

    def protected(sock: socket.socket, h: dict[str, str]) -> None:
        if h.get("authorization") == "Bearer abc.def":
            sock.sendall(ok(manifest, "Content-Type: application/vnd.oci.image.manifest.v1+json"))
        else:
            realm = f"http://localhost:{tokens.server_address[1]}{next(asked)}"
            sock.sendall(
                f'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm="{realm}",'
                'service="reg",scope="repository:app:pull"\r\nContent-Length: 0\r\n\r\n'.encode()
            )

    srv = serve({"/v2/app/manifests/t": protected})
    host = f"127.0.0.1:{srv.server_address[1]}"
    results = registry_top(srv, tmp_path, login % host, times=len(realms))
    for res, words in zip(
        results,
        ("is not a token", "is not a token", "gave no token", "token response", "over 1048576 bytes"),
    ):
        assert "error" in res and words in res["message"], res
        assert "\n" not in res["message"]
    assert results[-1]["top"][1] == "application/vnd.oci.image.manifest.v1+json", results
    # the login went to the realm's host, never to the registry; the token to the registry only
    (good,) = [h for p, h in tokens.seen if p == "/good"]
    assert good["authorization"] == "Basic dXNlcjpwdw=="
    assert "authorization" not in [h for p, h in srv.seen][0]
    assert all(h.get("authorization", "Bearer abc.def") == "Bearer abc.def" for _p, h in srv.seen)
    assert "service=reg" in good[":query"] and "scope=repository%3Aapp%3Apull" in good[":query"]


def test_plain_http_only_to_the_hosts_named():
    from fatbin_inspect.containers import http
    from fatbin_inspect.errors import UnreadableError

    port_only = http.Policy(plain_http=frozenset({"reg.internal:5000"}))
    any_port = http.Policy(plain_http=frozenset({"reg.internal"}))
    assert port_only.check_url("http://reg.internal:5000/v2/", REF).host == "reg.internal"
    assert any_port.check_url("http://REG.internal:5001/v2/", REF).port == 5001
    for policy, url in ((port_only, "http://reg.internal:5001/"), (port_only, "http://reg.internal/")):
        with pytest.raises(UnreadableError, match="plain http to a host not allowed it"):
            policy.check_url(url, REF)
    for host in ("127.0.0.2", "localhost", "[::1]"):
        assert http.Policy().allows_plain_http(http.parse_url(f"http://{host}:1/"))


def test_every_command_says_one_line_for_a_hostile_registry(serve, tmp_path):
    """The command line over a registry that answers garbage: one line naming the reference and
    the URL, in every format of list and scan, under the hostile runner's limits."""
    from hostile_runner import formats, run_many

    from fatbin_inspect.cli.main import COMMANDS  # noqa: F401  (the table the runner reads)

    srv = serve(
        {
            "/v2/app/manifests/t": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "/v2/app/manifests/r": redirect("file:///etc/passwd"),
        }
    )
    import click

    from fatbin_inspect.cli.main import cli as main_cli

    runs, want = [], []
    for name in ("list", "scan"):
        cmd = main_cli.get_command(click.Context(main_cli), name)
        for fmt in formats(cmd):
            for tag, words in (("t", "the body breaks off"), ("r", "is not http(s): refused")):
                ref = f"127.0.0.1:{srv.server_address[1]}/app:{tag}"
                runs.append(
                    [name, f"docker://{ref}", "--format", fmt, *(["--no-cache"] if name == "scan" else [])]
                )
                want.append((f"{ref}: GET {srv.base}/v2/app/manifests/{tag}", words))
    for run, (head, words) in zip(run_many(tmp_path, runs), want):
        assert head in run.stderr and words in run.stderr, run
        (line,) = [x for x in run.stderr.splitlines() if head in x]
