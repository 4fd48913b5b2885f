"""Images read straight from a registry over the OCI distribution API, without a daemon or a copy.

``docker://HOST[:PORT]/REPO[:TAG|@sha256:HEX]`` (``registry://`` too): ``GET /v2/REPO/manifests/REF``
with the OCI and Docker v2 ``Accept`` types gives the image (or index); its digest is the sha256
of the bytes received (checked against a ``@digest`` reference). Indexes and manifests named by
digest come from ``/manifests/DIGEST``, configs and layers from ``/blobs/DIGEST`` (registries
redirect those to storage: the ``Authorization`` header is never sent on to another host).
Layers stream into the image reader one at a time, hashed as they stream (``oci.Hashing``):
nothing is written to disk.

Auth (distribution spec, "token authentication"): a 401 with ``WWW-Authenticate: Bearer
realm=...,service=...,scope=...`` is answered by fetching a token from ``realm`` (with the user's
credentials when ``~/.docker/config.json``, ``$DOCKER_CONFIG/config.json`` or
``$REGISTRY_AUTH_FILE`` holds them for the host: ``auths.HOST.auth``, base64 ``user:password``, or
``identitytoken``), anonymously otherwise; ``Basic`` is answered with the credentials. Credential
helpers (``credHelpers``, ``credsStore``) are programs: they are never run.

TLS always, except for a loopback host (``127.0.0.1``, ``localhost``, ``::1``) or a host named in
``FATBIN_INSPECT_INSECURE_REGISTRIES`` (comma-separated ``HOST[:PORT]``; ``--insecure-registry``
sets it): those speak plain http.

The standard library's ``urllib`` is enough (a GET with headers, redirects, a streamed body) and
keeps the install free of an HTTP stack; ``requests`` would add four packages for no feature used.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from fatbin_inspect.containers import oci
from fatbin_inspect.errors import CorruptError, InputError, LimitExceeded, UnreadableError, UsageError
from fatbin_inspect.formats.binio import Blob

TIMEOUT = 60  # seconds without a byte before a request is given up
INSECURE_ENV = "FATBIN_INSPECT_INSECURE_REGISTRIES"
MANIFEST_TYPES = ", ".join(
    (
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    )
)
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "::1")
_REPO = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")


@dataclass(frozen=True)
class Reference:
    host: str  # HOST[:PORT]
    repo: str
    ref: str  # a tag or sha256:<hex>

    @property
    def text(self) -> str:
        sep = "@" if self.ref.startswith("sha256:") else ":"
        return f"{self.host}/{self.repo}{sep}{self.ref}"


def parse(text: str) -> Reference:
    """``HOST[:PORT]/REPO[:TAG|@DIGEST]`` (docker's default tag ``latest``); a malformed one is a
    usage error naming it. A bare ``REPO`` (Docker Hub) is refused: the host must be named."""
    rest, at, digest = text.partition("@")
    host, slash, path = rest.partition("/")
    if not slash or not path or not ("." in host or ":" in host or host == "localhost"):
        raise UsageError(f"docker://{text}: give the registry host, as docker://HOST[:PORT]/REPO:TAG")
    repo, colon, tag = path.rpartition(":") if ":" in path.rsplit("/", 1)[-1] else (path, "", "")
    ref = digest if at else (tag if colon else "latest")
    _check_names(text, repo, ref, bool(at))
    return Reference(host, repo, ref)


def _check_names(text: str, repo: str, ref: str, digest: bool) -> None:
    if not _REPO.match(repo):
        raise UsageError(f"docker://{text}: {repo!r} is not a repository name")
    if digest and not oci._DIGEST.match(ref):
        raise UsageError(f"docker://{text}: {ref!r} is not sha256:<64 hex digits>")
    if not digest and not _TAG.match(ref):
        raise UsageError(f"docker://{text}: {ref!r} is not a tag")


def _insecure(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
    allowed = {h.strip() for h in os.environ.get(INSECURE_ENV, "").split(",") if h.strip()}
    return name in _LOOPBACK or host in allowed or name in allowed


def credentials(host: str) -> tuple[str, str] | str | None:
    """(user, password), an identity token, or None, for ``host`` from the Docker config files."""
    files = [os.environ.get("REGISTRY_AUTH_FILE")]
    files.append(
        os.path.join(os.environ.get("DOCKER_CONFIG") or os.path.expanduser("~/.docker"), "config.json")
    )
    for path in filter(None, files):
        auths = _auths(path)
        for key in (host, f"https://{host}", f"http://{host}", f"https://{host}/v2/", f"https://{host}/v1/"):
            found = _entry_credentials(auths.get(key))
            if found is not None:
                return found
    return None


def _auths(path: str) -> dict:
    """The ``auths`` of a Docker config file ({} when it cannot be read or has none)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(1 << 20)
        doc = json.loads(data)
    except (OSError, ValueError, RecursionError):
        return {}
    auths = doc.get("auths") if isinstance(doc, dict) else None
    return auths if isinstance(auths, dict) else {}


def _entry_credentials(entry) -> tuple[str, str] | str | None:
    """An ``auths`` entry's identity token, or its ``auth`` (base64 of user:password)."""
    if not isinstance(entry, dict):
        return None
    if isinstance(entry.get("identitytoken"), str) and entry["identitytoken"]:
        return entry["identitytoken"]
    if not isinstance(entry.get("auth"), str):
        return None
    try:
        user, _, pw = base64.b64decode(entry["auth"]).decode("utf-8").partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return user, pw


def _basic(creds: tuple[str, str]) -> str:
    return "Basic " + base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()


def _token_request(realm: str, fields: dict, creds: tuple[str, str] | str | None):
    """The request for a token: an identity token's OAuth2 refresh-token grant (POST), else a
    GET with the user and password, if any, as Basic auth (never sent on to a redirect)."""
    if isinstance(creds, str):
        body = urllib.parse.urlencode(
            dict(
                grant_type="refresh_token",
                refresh_token=creds,
                service=fields.get("service", ""),
                scope=fields["scope"],
                client_id="fatbin-inspect",
            )
        ).encode()
        return urllib.request.Request(realm, data=body)
    req = urllib.request.Request(f"{realm}?{urllib.parse.urlencode(fields)}")
    if creds:
        req.add_unredirected_header("Authorization", _basic(creds))
    return req


class _NoAuthOnRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects followed (blobs go to storage), never to a plain-http URL from https."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if req.full_url.startswith("https:") and not newurl.startswith("https:"):
            return None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class RegistryStore:
    """An image in a registry as the store ``oci.images`` and ``oci.ImageReader`` read: the
    reference is the layout's one ``index.json`` entry, tagged with it; manifests and configs are
    read whole (bounded), layers as streams."""

    def __init__(self, ref: Reference):
        self.ref = ref
        self.base = f"{'http' if _insecure(ref.host) else 'https'}://{ref.host}/v2/{ref.repo}"
        self.opener = urllib.request.build_opener(_NoAuthOnRedirect)
        self.token: str | None = None
        self.docs: dict[str, bytes] = {}  # digest -> manifest bytes already fetched
        self.top: tuple[str, str, int] | None = None

    # -------------------------------------------------------------------- HTTP
    def _open(self, url: str, accept: str | None = None, retry: bool = True):
        req = urllib.request.Request(url)
        if accept:
            req.add_header("Accept", accept)
        if self.token:
            req.add_unredirected_header("Authorization", self.token)  # not sent on a redirect
        try:
            return self.opener.open(req, timeout=TIMEOUT)
        except urllib.error.HTTPError as exc:
            if exc.code == 401 and retry:
                self._authenticate(exc.headers.get("WWW-Authenticate", ""))
                exc.close()
                return self._open(url, accept, retry=False)
            exc.close()
            raise UnreadableError(
                f"{self.ref.text}: GET {url[len(self.base) + 1 :] if url.startswith(self.base) else url}: "
                f"HTTP {exc.code} {exc.reason}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            why = getattr(exc, "reason", exc)
            raise UnreadableError(f"{self.ref.text}: cannot reach {self.ref.host}: {why}") from None

    def _token(self, realm: str, req) -> str:
        """The token the realm's server gives for ``req``; UnreadableError naming it otherwise."""
        try:
            with self.opener.open(req, timeout=TIMEOUT) as resp:
                doc = oci.loads(resp.read(1 << 20), "token response")
        except (urllib.error.URLError, OSError) as exc:
            raise UnreadableError(
                f"{self.ref.text}: token from {realm}: {getattr(exc, 'reason', exc)}"
            ) from None
        token = doc.get("token") or doc.get("access_token") if isinstance(doc, dict) else None
        if not isinstance(token, str) or not token:
            raise UnreadableError(f"{self.ref.text}: the token server at {realm} gave no token")
        return token

    def _authenticate(self, challenge: str) -> None:
        scheme, _, params = challenge.partition(" ")
        fields = dict(re.findall(r'(\w+)="([^"]*)"', params))
        creds = credentials(self.ref.host)
        if scheme.lower() == "basic":
            if not isinstance(creds, tuple):
                raise UnreadableError(
                    f"{self.ref.text}: the registry asks for a login (none in the Docker config)"
                )
            self.token = _basic(creds)
            return
        if scheme.lower() != "bearer" or "realm" not in fields:
            raise UnreadableError(f"{self.ref.text}: unsupported authentication {scheme or '(none)'}")
        realm = fields.pop("realm")
        realm_host = urllib.parse.urlsplit(realm).netloc
        if not (realm.startswith("https:") or (realm.startswith("http:") and _insecure(realm_host))):
            # (credentials go to the realm: never over plain http to a host not allowed it)
            raise UnreadableError(f"{self.ref.text}: token realm {realm[:80]!r} is no https URL")
        fields.setdefault("scope", f"repository:{self.ref.repo}:pull")
        token = self._token(realm, _token_request(realm, fields, creds))
        self.token = f"Bearer {token}"

    def _manifest(self, ref: str) -> tuple[bytes, str]:
        """A manifest or index and the media type the registry says it is."""
        with self._open(f"{self.base}/manifests/{ref}", MANIFEST_TYPES) as resp:
            data = resp.read(oci.MAX_JSON_BYTES + 1)
            ctype = resp.headers.get("Content-Type", "").split(";")[0].strip()
        if len(data) > oci.MAX_JSON_BYTES:
            raise LimitExceeded(f"{self.ref.text}: manifest {ref} over {oci.MAX_JSON_BYTES} bytes")
        return data, ctype

    # -------------------------------------------------------------- the store
    def _top(self) -> tuple[str, str, int]:
        if self.top is None:
            data, ctype = self._manifest(self.ref.ref)
            import hashlib

            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            if self.ref.ref.startswith("sha256:") and digest != self.ref.ref:
                raise CorruptError(f"{self.ref.text}: the manifest received hashes to {digest}")
            if not ctype or ctype == "application/json":
                doc = oci.loads(data, f"manifest {self.ref.text}")
                ctype = doc.get("mediaType", "") if isinstance(doc, dict) else ""
                if not ctype and isinstance(doc, dict) and "manifests" in doc:
                    ctype = "application/vnd.oci.image.index.v1+json"
            self.docs[digest] = data
            self.top = (digest, ctype, len(data))
        return self.top

    def get(self, name: str, kind: str = "layer"):
        """``oci-layout``, ``index.json`` (made of the reference), ``blobs/sha256/HEX`` (a
        manifest or index when ``kind`` says so, a config read whole, a layer as a stream)."""
        if name == "oci-layout":
            return Blob(b'{"imageLayoutVersion": "1.0.0"}')
        if name == "index.json":
            digest, ctype, size = self._top()
            entry = {
                "mediaType": ctype,
                "digest": digest,
                "size": size,
                "annotations": {oci.REF_NAME: self.ref.text},
            }
            return Blob(json.dumps({"schemaVersion": 2, "manifests": [entry]}).encode())
        if not name.startswith("blobs/sha256/"):
            return None
        digest = "sha256:" + name[len("blobs/sha256/") :]
        if kind in ("manifest", "index"):
            if digest not in self.docs:
                self.docs[digest] = self._manifest(digest)[0]
            return Blob(self.docs[digest])
        resp = self._open(f"{self.base}/blobs/{digest}")
        if kind == "config":
            with resp:
                data = resp.read(oci.MAX_JSON_BYTES + 1)
            return Blob(data)
        return StreamBlob(resp)


class StreamBlob:
    """A layer coming over HTTP: read once, front to back (``stream``); ``head`` peeks at its
    first bytes without consuming them. ``size``: what the response declares (0: not said)."""

    def __init__(self, resp):
        self.resp = resp
        length = resp.headers.get("Content-Length")
        self.size = int(length) if length and length.isdigit() else 0
        self._buf = io.BufferedReader(resp, 1 << 20)

    def head(self, n: int) -> bytes:
        try:
            return self._buf.peek(n)[:n]
        except OSError as exc:
            raise UnreadableError(f"layer stream breaks off: {exc}") from None

    def stream(self):
        return self._buf

    def read(self, off: int, n: int, what: str = "data") -> bytes:
        if off:
            raise InputError(f"{what}: a registry stream is read front to back")
        return self._buf.read(n)


def open_store(text: str) -> RegistryStore:
    return RegistryStore(parse(text))
