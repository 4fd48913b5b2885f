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
sets it): those speak plain http. Requests, redirects and their bounds are ``containers.http``'s.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any

from fatbin_inspect.containers import http, oci
from fatbin_inspect.errors import CorruptError, InputError, LimitExceeded, UnreadableError, UsageError
from fatbin_inspect.formats.binio import Blob

MAX_LAYER_BYTES = 64 << 30  # one layer's stream (its descriptor's size is checked at its end too)
INSECURE_ENV = "FATBIN_INSPECT_INSECURE_REGISTRIES"
MANIFEST_TYPES = ", ".join(
    (
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    )
)
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


def insecure_hosts() -> frozenset[str]:
    """The hosts ``--insecure-registry`` allows plain http (``FATBIN_INSPECT_INSECURE_REGISTRIES``)."""
    return frozenset(h.strip() for h in os.environ.get(INSECURE_ENV, "").split(",") if h.strip())


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


def _auths(path: str) -> dict[str, Any]:
    """The ``auths`` of a Docker config file ({} when it cannot be read or has none)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(1 << 20)
        doc = json.loads(data)
    except (OSError, ValueError, RecursionError):
        return {}
    auths = doc.get("auths") if isinstance(doc, dict) else None
    return auths if isinstance(auths, dict) else {}


def _entry_credentials(entry: object) -> tuple[str, str] | str | None:
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


def _login(ref: Reference, host: str, creds: tuple[str, str] | str | None) -> list[http.Credentials]:
    """Basic credentials of the user's login for ``host`` (the registry or its token realm)."""
    if isinstance(creds, tuple):
        return [http.basic(host, creds[0], creds[1], ref.text)]
    return []


class RegistryStore:
    """An image in a registry as the store ``oci.images`` and ``oci.ImageReader`` read: the
    reference is the layout's one ``index.json`` entry, tagged with it; manifests and configs are
    read whole (bounded), layers as streams. Every request goes through ``containers.http``
    (its policy: redirects, schemes, credentials only to their host, bounds)."""

    def __init__(self, ref: Reference, policy: http.Policy | None = None):
        self.ref = ref
        self.transport = http.Transport(policy or http.Policy(plain_http=insecure_hosts()))
        scheme = (
            "http" if self.transport.policy.allows_plain_http(http.parse_url(f"//{ref.host}")) else "https"
        )
        self.base = f"{scheme}://{ref.host}/v2/{ref.repo}"
        self.host = http.netloc(http.parse_url(self.base))
        self.auth: list[http.Credentials] = []
        self.docs: dict[str, bytes] = {}  # digest -> manifest bytes already fetched
        self.top: tuple[str, str, int] | None = None

    # -------------------------------------------------------------------- HTTP
    def _open(
        self, url: str, accept: str | None = None, retry: bool = True, deadline: float | None = None
    ) -> http.Response:
        """The 200 answer to GET ``url`` (after one login when the registry asks for it), whole
        within ``deadline`` seconds (None: the policy's, for a layer)."""
        headers = {"Accept": accept} if accept else {}
        resp = self.transport.request(
            url, self.ref.text, headers=headers, credentials=self.auth, deadline=deadline
        )
        if resp.status == 401 and retry:
            with resp:
                challenge = resp.header("WWW-Authenticate")
            self._authenticate(challenge or "", url)
            return self._open(url, accept, retry=False, deadline=deadline)
        try:
            resp.check_status(200)
        except InputError:
            resp.close()
            raise
        return resp

    def _token(self, realm: str, fields: dict[str, str], creds: tuple[str, str] | str | None) -> str:
        """The token the realm's server gives: an identity token's OAuth2 refresh-token grant
        (POST), else a GET with the user's login, if any, as Basic auth (sent to the realm's host
        only, never on to a redirect elsewhere)."""
        url = self.transport.policy.check_url(realm, self.ref.text, "token realm")
        host = http.netloc(url)
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
            kw: dict[str, Any] = dict(
                method="POST", body=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
            )
        else:
            sep = "&" if url.query else "?"
            realm = f"{realm}{sep}{urllib.parse.urlencode(fields)}"
            kw = dict(credentials=_login(self.ref, host, creds))
        with self.transport.request(realm, self.ref.text, deadline=http.TIMEOUT, **kw) as resp:
            resp.check_status(200)
            doc = oci.loads(
                resp.read(1 << 20), f"{self.ref.text}: token response from {http.show_url(realm)}"
            )
        token = (doc.get("token") or doc.get("access_token")) if isinstance(doc, dict) else None
        if not isinstance(token, str) or not token:
            raise UnreadableError(
                f"{self.ref.text}: the token server at {http.show_url(realm)} gave no token"
            )
        return token

    def _authenticate(self, header: str, url: str) -> None:
        if not header:
            raise UnreadableError(f"{self.ref.text}: GET {http.show_url(url)}: HTTP 401 without a challenge")
        challenge = http.parse_challenge(header, self.ref.text, url)
        creds = credentials(self.ref.host)
        if challenge.scheme == "basic":
            if not isinstance(creds, tuple):
                raise UnreadableError(
                    f"{self.ref.text}: the registry asks for a login (none in the Docker config)"
                )
            self.auth = _login(self.ref, self.host, creds)
            return
        if challenge.scheme != "bearer" or "realm" not in challenge.params:
            raise UnreadableError(f"{self.ref.text}: unsupported authentication {challenge.scheme!r}")
        fields = {k: v for k, v in challenge.params.items() if k in ("service", "scope")}
        fields.setdefault("scope", f"repository:{self.ref.repo}:pull")
        realm = challenge.params["realm"]
        token = self._token(realm, fields, creds)
        self.auth = [http.bearer(self.host, token, self.ref.text, realm)]

    def _manifest(self, ref: str) -> tuple[bytes, str]:
        """A manifest or index and the media type the registry says it is."""
        with self._open(f"{self.base}/manifests/{ref}", MANIFEST_TYPES, deadline=http.TIMEOUT) as resp:
            try:
                data = resp.read(oci.MAX_JSON_BYTES)
            except LimitExceeded:
                raise LimitExceeded(
                    f"{self.ref.text}: manifest {ref} over {oci.MAX_JSON_BYTES} bytes ({http.show_url(resp.url)})"
                ) from None
            ctype = resp.content_type
        return data, ctype

    # -------------------------------------------------------------- the store
    def _top(self) -> tuple[str, str, int]:
        if self.top is None:
            data, ctype = self._manifest(self.ref.ref)
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            if self.ref.ref.startswith("sha256:") and digest != self.ref.ref:
                raise CorruptError(f"{self.ref.text}: the manifest received hashes to {digest}")
            if not ctype or ctype == "application/json":
                doc = oci.loads(data, f"manifest {self.ref.text}")
                ctype = doc.get("mediaType", "") if isinstance(doc, dict) else ""
                if not ctype and isinstance(doc, dict) and "manifests" in doc:
                    ctype = "application/vnd.oci.image.index.v1+json"
            self.docs[digest] = data
            self.top = (digest, str(ctype), len(data))
        return self.top

    def get(self, name: str, kind: str = "layer") -> Blob | StreamBlob | None:
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
        resp = self._open(f"{self.base}/blobs/{digest}", deadline=http.TIMEOUT if kind == "config" else None)
        if kind == "config":
            with resp:
                return Blob(resp.read(oci.MAX_JSON_BYTES))
        return StreamBlob(resp)


class StreamBlob:
    """A layer coming over HTTP: read once, front to back (``stream``), at most
    ``MAX_LAYER_BYTES``; ``head`` peeks at its first bytes without consuming them. ``size``: what
    the response declares (0: not said)."""

    def __init__(self, resp: http.Response):
        self.resp = resp
        self.size = resp.content_length or 0
        self._buf = resp.reader(MAX_LAYER_BYTES)

    def head(self, n: int) -> bytes:
        return self._buf.peek(n)[:n]

    def stream(self) -> io.BufferedReader:
        return self._buf

    def read(self, off: int, n: int, what: str = "data") -> bytes:
        if off:
            raise InputError(f"{what}: a registry stream is read front to back")
        return self._buf.read(n)


def open_store(text: str) -> RegistryStore:
    return RegistryStore(parse(text))
