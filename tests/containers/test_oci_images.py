"""Images built by real tools in the test (umoci, skopeo), a real registry (Debian's
docker-registry, the CNCF distribution server) on 127.0.0.1, and docker save streams on stdin
(issue 24 items 2-4; issue 23 class 6 lives in hostile/test_package_metadata.py)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import tarfile
import time

import pytest
from conftest import ROOT, cli, fixture_path
from image_tools import (
    LIB,
    NO_CACHE,
    child_cli,
    inside,
    layer_tar,
    manifest_of,
    need,
    read_file,
    registry,
    run,
    scan_json,
    umoci_layout,
)

__all__ = ["registry"]  # the fixture, used here
EXE = fixture_path("bin", "t01_exe_sm80")


# ------------------------------------------------------------------------------ tags, images
@pytest.mark.slow
def test_every_image_of_a_umoci_layout_is_scanned_named_and_selectable(tmp_path):
    lay = umoci_layout(tmp_path)
    rc, doc, _ = scan_json(lay)
    assert rc == 0
    files = sorted(f["path"][len(lay) + 1 :].split("!")[0] + ":" + inside(f["path"]) for f in doc["files"])
    # each image named; t holds both names of the hard-linked library, t2 keeps liby.so only
    assert files == ["t2:usr/lib/liby.so", "t:usr/lib/libx.so", "t:usr/lib/liby.so"], files
    names = [i["name"] for i in doc["images"]]
    assert names == ["base", "t", "t2"]
    digest, manifest = manifest_of(lay, "t2")
    t2 = doc["images"][2]
    assert t2["digest"] == digest and t2["platform"] == "linux/amd64" and t2["error"] is None
    assert [lay_["digest"] for lay_ in t2["layers"]] == [x["digest"] for x in manifest["layers"]]
    assert [lay_["files"] for lay_ in t2["layers"]] == [[], ["usr/lib/liby.so"]]  # which layer brought it
    assert doc["stats"]["bytes"] > 20_000  # the image's blobs, not index.json's 400 bytes
    # skopeo's forms select one image; its records carry no image level
    need("skopeo")
    run("skopeo", "copy", f"oci:{lay}:t2", f"oci-archive:{tmp_path}/x.tar:t2")
    run("skopeo", "copy", f"oci:{lay}:t2", f"docker-archive:{tmp_path}/d.tar:repo:t2")
    for form in (
        f"{lay}:t2",
        f"oci:{lay}:t2",
        f"oci-archive:{tmp_path}/x.tar:t2",
        f"docker-archive:{tmp_path}/d.tar:repo:t2",
        f"docker-archive:{tmp_path}/d.tar:@0",
    ):
        rc, doc, err = scan_json(form)
        assert rc == 0, (form, err)
        assert [inside(f["path"]) for f in doc["files"]] == ["usr/lib/liby.so"], form
        assert all(f["path"].startswith(form + "!") and f["path"].count("!") == 2 for f in doc["files"])
        assert [i["name"] for i in doc["images"]] in (["t2"], ["repo:t2"]), form
    r = cli("list", f"{lay}:nope", env=NO_CACHE)
    assert "no image named 'nope' (it holds: base, t, t2)" in r.err and "Traceback" not in r.err
    r = cli("scan", "--no-cache", f"{lay}:t", "--layers", env=NO_CACHE)
    assert r.code == 0 and "image t  sha256:" in r.out and "linux/amd64  1 layer" in r.out
    assert "  layer 1/1  sha256:" in r.out and "2 CUDA files" in r.out and "    usr/lib/liby.so" in r.out


@pytest.mark.slow
def test_a_docker_save_of_two_images_names_each(tmp_path):
    """Two images in one docker save tar (as ``docker save a b`` writes it), from skopeo's
    docker-archives of two real images: each image's files under its own name."""
    need("umoci", "skopeo")
    lay = umoci_layout(tmp_path)
    members: dict[str, bytes] = {}
    manifest = []
    for tag in ("t", "t2"):
        run("skopeo", "copy", f"oci:{lay}:{tag}", f"docker-archive:{tmp_path}/{tag}.tar:app:{tag}")
        with tarfile.open(tmp_path / f"{tag}.tar") as tf:
            for ti in tf:
                if ti.isreg() and ti.name != "manifest.json":
                    members[ti.name] = tf.extractfile(ti).read()
            manifest += json.loads(tf.extractfile("manifest.json").read())
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in [*members.items(), ("manifest.json", json.dumps(manifest).encode())]:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    (tmp_path / "two.tar").write_bytes(buf.getvalue())
    rc, doc, _ = scan_json(str(tmp_path / "two.tar"))
    got = sorted((f["path"].split("!")[1], inside(f["path"])) for f in doc["files"])
    assert got == [("app:t", "usr/lib/libx.so"), ("app:t", "usr/lib/liby.so"), ("app:t2", "usr/lib/liby.so")]
    assert [i["name"] for i in doc["images"]] == ["app:t", "app:t2"]
    assert all(i["config"] and i["layers"][0]["diff_id"] for i in doc["images"])


# ------------------------------------------------------------------------------ hard links
@pytest.mark.slow
@pytest.mark.parametrize("compress", ["gzip", "zstd", "none"])
def test_a_hard_link_whose_target_an_upper_layer_deletes_keeps_the_library(tmp_path, compress):
    need("umoci", "skopeo")
    lay = str(tmp_path / "L")
    run("umoci", "init", "--layout", lay)
    run("umoci", "new", "--image", f"{lay}:base")
    low = tmp_path / "low.tar"
    low.write_bytes(
        layer_tar([("usr/lib/libx.so", read_file(LIB)), ("usr/lib/liby.so", ("hardlink", "usr/lib/libx.so"))])
    )
    up = tmp_path / "up.tar"
    up.write_bytes(layer_tar([("usr/lib/.wh.libx.so", b"")]))
    run("umoci", "raw", "add-layer", "--image", f"{lay}:base", "--tag", "one", str(low))
    run("umoci", "raw", "add-layer", "--image", f"{lay}:one", "--tag", "two", str(up))
    flags = {"gzip": [], "zstd": ["--dest-compress-format", "zstd"], "none": ["--dest-compress=false"]}
    out = str(tmp_path / "C")
    run("skopeo", "copy", *flags[compress], f"oci:{lay}:two", f"oci:{out}:two")
    rc, doc, _ = scan_json(f"{out}:two")
    assert [inside(f["path"]) for f in doc["files"]] == ["usr/lib/liby.so"]
    (f,) = doc["files"]
    assert {e["arch"] for fb in f["fatbins"] for e in fb["entries"]} == {"sm_86", "compute_89"}
    out_ = cli("list", f"{out}:two", env=NO_CACHE).out
    assert "1 hard links followed" in out_ and "1 files replaced or deleted" in out_


# ------------------------------------------------------------------------------ platforms
@pytest.mark.slow
def test_platform_is_checked_against_the_config_and_a_nested_index_names_its_platforms(tmp_path):
    lay = umoci_layout(tmp_path)
    run("umoci", "config", "--image", f"{lay}:t", "--architecture", "arm64", "--tag", "arm")
    rc, doc, err = scan_json(f"{lay}:arm", "--platform", "linux/amd64")
    assert doc["files"] == [] or all(f["error"] for f in doc["files"])
    assert "image arm is linux/arm64 (its config), not linux/amd64 (--platform)" in err
    rc, doc, err = scan_json(f"{lay}:arm")  # asked for nothing: a single-platform image as it is
    assert doc["images"][0]["platform"] == "linux/arm64" and len(doc["files"]) == 2, err
    # a nested index (multi-platform image under one tag) without the platform asked
    digest, _m = manifest_of(lay, "t")
    size = os.path.getsize(os.path.join(lay, "blobs", "sha256", digest[7:]))
    sub = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": digest,
                    "size": size,
                    "platform": {"os": "linux", "architecture": a},
                }
                for a in ("amd64", "s390x")
            ],
        }
    ).encode()
    h = hashlib.sha256(sub).hexdigest()
    (tmp_path / "L" / "blobs" / "sha256" / h).write_bytes(sub)
    index = json.loads((tmp_path / "L" / "index.json").read_text())
    index["manifests"].append(
        {
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "digest": f"sha256:{h}",
            "size": len(sub),
            "annotations": {"org.opencontainers.image.ref.name": "multi"},
        }
    )
    (tmp_path / "L" / "index.json").write_text(json.dumps(index))
    rc, doc, err = scan_json(f"{lay}:multi", "--platform", "linux/arm64")
    assert "no linux/arm64 image in the index (it has linux/amd64, linux/s390x)" in err, err
    rc, doc, err = scan_json(f"{lay}:multi", "--platform", "linux/s390x")
    assert "image multi: its config says linux/amd64, its index entry linux/s390x" in err, err
    rc, doc, err = scan_json(f"{lay}:multi")
    assert len(doc["files"]) == 2 and doc["images"][0]["digest"] == digest


# --------------------------------------------------------------------------------- stdin
@pytest.mark.slow
def test_docker_save_on_stdin(tmp_path):
    need("umoci", "skopeo")
    lay = umoci_layout(tmp_path)
    run("skopeo", "copy", f"oci:{lay}:t2", f"docker-archive:{tmp_path}/d.tar:app:t2")
    with open(tmp_path / "d.tar", "rb") as fh:  # a pipe, as docker save | fatbin-inspect scan -
        cat = subprocess.Popen(["cat"], stdin=fh, stdout=subprocess.PIPE)
        rc, doc, err = scan_json("-", stdin=cat.stdout)
        cat.wait()
    assert rc == 0, err
    assert [f["path"].split("!")[0] + "|" + inside(f["path"]) for f in doc["files"]] == ["-|usr/lib/liby.so"]
    assert doc["roots"] == [{"path": "-", "kind": "stdin"}] and doc["stats"]["bytes"] == os.path.getsize(
        tmp_path / "d.tar"
    )
    with open(tmp_path / "d.tar", "rb") as fh:  # a file redirected: mapped where it is
        rc, out, err = child_cli("list", "-", stdin=fh)
    assert rc == 0 and "-!" in out and "usr/lib/liby.so" in out, err
    assert not [
        n for n in os.listdir(os.environ.get("TMPDIR", "/tmp")) if n.startswith("fatbin-inspect-stdin-")
    ]


# ------------------------------------------------------------------------------ registries
@pytest.mark.slow
def test_scan_straight_from_a_registry_matches_the_layout(tmp_path, registry):
    lay = umoci_layout(tmp_path)
    port = registry()
    for tag in ("t", "t2"):
        run(
            "skopeo",
            "copy",
            "--dest-tls-verify=false",
            f"oci:{lay}:{tag}",
            f"docker://127.0.0.1:{port}/gpu/app:{tag}",
        )
    local = scan_json(f"{lay}:t2")[1]
    for scheme in ("docker", "registry"):
        rc, remote, err = scan_json(f"{scheme}://127.0.0.1:{port}/gpu/app:t2")
        assert rc == 0, err
        strip = [dict(f, path=f["path"].split("!", 1)[1]) for f in local["files"]]
        assert [dict(f, path=f["path"].split("!", 1)[1]) for f in remote["files"]] == strip
        (img,) = remote["images"]
        assert img["digest"] == local["images"][0]["digest"] and img["platform"] == "linux/amd64"
        assert img["name"] == f"127.0.0.1:{port}/gpu/app:t2"
        assert [x["files"] for x in img["layers"]] == [[], ["usr/lib/liby.so"]]
    digest = local["images"][0]["digest"]
    rc, doc, err = scan_json(f"docker://127.0.0.1:{port}/gpu/app@{digest}")
    assert [inside(f["path"]) for f in doc["files"]] == ["usr/lib/liby.so"], err
    r = cli("list", f"docker://127.0.0.1:{port}/gpu/app:nope", env=NO_CACHE)
    url = f"GET http://127.0.0.1:{port}/v2/gpu/app/manifests/nope: HTTP 404 Not Found"
    assert url in r.out + r.err and "Traceback" not in r.err
    r = cli("scan", f"docker://127.0.0.1:{port}", env=NO_CACHE)
    assert r.code == 2 and "give the registry host" in r.err
    # a layer the registry serves changed on its disk: the digest check names it
    _d, manifest = manifest_of(lay, "t2")
    top = manifest["layers"][-1]["digest"][7:]
    (data_file,) = [
        os.path.join(d, f)
        for d, _s, fs in os.walk(tmp_path / f"store{port}")
        for f in fs
        if f == "data" and os.path.basename(d) == top
    ]
    raw = bytearray(gzip.decompress(read_file(data_file)))
    raw[raw.find(b"\x7fELF") + 300] ^= 0xFF
    with open(data_file, "wb") as fh:
        fh.write(gzip.compress(bytes(raw)))
    rc, doc, err = scan_json(f"docker://127.0.0.1:{port}/gpu/app:t2")
    assert f"layer sha256:{top}: its bytes hash to" in err, err
    assert not [f for f in doc["files"] if f["fatbins"]]


def _token_server(key, user: str, password: str):
    """A token server of the test's own (distribution's token auth): Basic credentials in,
    an RS256 JWT with ``kid`` (libtrust's key ID of the public key) out."""
    import http.server
    import threading

    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding

    der = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    kid32 = base64.b32encode(hashlib.sha256(der).digest()[:30]).decode().rstrip("=")
    kid = ":".join(kid32[i : i + 4] for i in range(0, len(kid32), 4))
    asked = []

    def b64(b: bytes) -> str:
        return base64.urlsafe_b64encode(b).decode().rstrip("=")

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            from urllib.parse import parse_qs, urlparse

            q = parse_qs(urlparse(self.path).query)
            good = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
            asked.append(self.headers.get("Authorization"))
            if self.headers.get("Authorization") != good:
                self.send_response(401)
                self.end_headers()
                return
            access = []
            for scope in q.get("scope", []):
                kind, name, actions = scope.split(":")
                access.append({"type": kind, "name": name, "actions": actions.split(",")})
            now = int(time.time())
            claims = {
                "iss": "test-issuer",
                "sub": user,
                "aud": q["service"][0],
                "exp": now + 600,
                "nbf": now - 10,
                "iat": now,
                "jti": str(now),
                "access": access,
            }
            head = b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": kid}).encode())
            body = b64(json.dumps(claims).encode())
            sig = key.sign(f"{head}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
            data = json.dumps({"token": f"{head}.{body}.{b64(sig)}"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(data)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, asked


@pytest.mark.slow
def test_bearer_token_auth_from_the_docker_config(tmp_path, registry):
    pytest.importorskip("cryptography")
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "token")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    srv, asked = _token_server(key, "alice", "s3cret")
    try:
        port = registry(
            f"auth: {{token: {{realm: 'http://127.0.0.1:{srv.server_address[1]}/token', service: test-registry, "
            f"issuer: test-issuer, rootcertbundle: {tmp_path}/cert.pem}}}}\n"
        )
        lay = umoci_layout(tmp_path)
        run(
            "skopeo",
            "copy",
            "--dest-tls-verify=false",
            "--dest-creds",
            "alice:s3cret",
            f"oci:{lay}:t2",
            f"docker://127.0.0.1:{port}/app:t2",
        )
        ref = f"docker://127.0.0.1:{port}/app:t2"
        r = cli(
            "list", ref, env={**NO_CACHE, "REGISTRY_AUTH_FILE": os.devnull, "DOCKER_CONFIG": str(tmp_path)}
        )
        assert "token" in r.out + r.err and "liby.so" not in r.out  # anonymous: the token server refuses
        auth = {"auths": {f"127.0.0.1:{port}": {"auth": base64.b64encode(b"alice:s3cret").decode()}}}
        (tmp_path / "auth.json").write_text(json.dumps(auth))
        rc, doc, err = scan_json(ref, env={"REGISTRY_AUTH_FILE": str(tmp_path / "auth.json")})
        assert [inside(f["path"]) for f in doc["files"]] == ["usr/lib/liby.so"], err
        assert asked.count("Basic " + base64.b64encode(b"alice:s3cret").decode()) >= 1
        (tmp_path / "config.json").write_text(json.dumps(auth))  # $DOCKER_CONFIG/config.json
        rc, doc, err = scan_json(ref, env={"DOCKER_CONFIG": str(tmp_path), "REGISTRY_AUTH_FILE": ""})
        assert [inside(f["path"]) for f in doc["files"]] == ["usr/lib/liby.so"], err
    finally:
        srv.shutdown()


def test_plain_http_only_for_loopback_or_when_asked(monkeypatch):
    from fatbin_inspect.containers import registry as reg

    monkeypatch.delenv(reg.INSECURE_ENV, raising=False)
    assert reg.RegistryStore(reg.parse("127.0.0.1:5000/a/b:t")).base == "http://127.0.0.1:5000/v2/a/b"
    assert reg.RegistryStore(reg.parse("localhost:5000/a:t")).base.startswith("http://")
    assert reg.RegistryStore(reg.parse("ghcr.io/a/b:t")).base == "https://ghcr.io/v2/a/b"
    monkeypatch.setenv(reg.INSECURE_ENV, "reg.lan:5000")
    assert reg.RegistryStore(reg.parse("reg.lan:5000/a:t")).base.startswith("http://")
    assert reg.RegistryStore(reg.parse("reg.lan:6000/a:t")).base.startswith("https://")
    assert reg.parse("ghcr.io/a/b").ref == "latest"
    assert reg.parse("ghcr.io/a/b@sha256:" + "0" * 64).ref == "sha256:" + "0" * 64
    for bad in ("ubuntu:22.04", "ghcr.io/A/b:t", "ghcr.io/a@sha256:12", "ghcr.io/a:b:c"):
        with pytest.raises(reg.UsageError):
            reg.parse(bad)


def test_input_forms(tmp_path):
    from fatbin_inspect.inventory.walk import ImageRef, image_ref

    (tmp_path / "L").mkdir()
    (tmp_path / "x.tar").write_bytes(b"")
    (tmp_path / "odd:name").write_bytes(b"")
    assert image_ref("-") == ImageRef("stdin", "-")
    assert image_ref("docker://h:5/r:t") == ImageRef("docker", "h:5/r:t")
    assert image_ref(f"{tmp_path}/L:t") == ImageRef("path", f"{tmp_path}/L", "t")
    assert image_ref(f"oci:{tmp_path}/L:t") == ImageRef("oci", f"{tmp_path}/L", "t")
    assert image_ref(f"oci-archive:{tmp_path}/x.tar") == ImageRef("oci-archive", f"{tmp_path}/x.tar", None)
    assert image_ref(f"docker-archive:{tmp_path}/x.tar:a/b:t") == ImageRef(
        "docker-archive", f"{tmp_path}/x.tar", "a/b:t"
    )
    assert (
        image_ref(f"{tmp_path}/L") is None and image_ref(f"{tmp_path}/odd:name") is None
    )  # paths stay paths
    assert image_ref(f"{tmp_path}/nothing:t") is None


# ------------------------------------------------------------------------------ stats
def _unpacked_files(layout, tag, tmp_path):
    """(regular files, bytes) of the image's final filesystem, as ``umoci unpack`` makes it."""
    bundle = str(tmp_path / f"unpacked-{tag}")
    run("umoci", "unpack", "--rootless", "--image", f"{layout}:{tag}", bundle)
    files = size = 0
    for d, _dirs, names in os.walk(os.path.join(bundle, "rootfs")):
        for n in names:
            st = os.lstat(os.path.join(d, n))
            if stat.S_ISREG(st.st_mode):
                files, size = files + 1, size + st.st_size
    return files, size


@pytest.mark.slow
def test_stats_count_the_files_of_the_image(tmp_path):
    """Issue 24's "1 files" for a 540 MB image: the stats count the image's final filesystem
    (every regular file, hard links too, as unpacked), in the table and the JSON, cold and warm
    (from the cache), from a layout, a docker-archive and stdin; bytes stay what is stored (the
    layout's blobs, the archive's size)."""
    need("umoci", "skopeo")
    lay = umoci_layout(tmp_path)
    bundle = str(tmp_path / "b")
    run("umoci", "unpack", "--rootless", "--image", f"{lay}:t2", bundle)
    rootfs = os.path.join(bundle, "rootfs")
    shutil.copytree(os.path.join(ROOT, "fixtures", "units"), os.path.join(rootfs, "opt", "units"))
    for i in range(40):  # files without device code count too
        with open(os.path.join(rootfs, "opt", f"note{i}.txt"), "w") as fh:
            fh.write("x" * i)
    os.symlink("units", os.path.join(rootfs, "opt", "link"))  # a symlink is no file
    run("umoci", "repack", "--image", f"{lay}:big", bundle)
    files, _size = _unpacked_files(lay, "big", tmp_path)
    assert files > 50
    run("skopeo", "copy", f"oci:{lay}:big", f"docker-archive:{tmp_path}/d.tar:app:big")
    cache = tmp_path / "cache"
    for form in (f"{lay}:big", f"docker-archive:{tmp_path}/d.tar:app:big"):
        for _warm in (0, 1):
            doc = cli(
                "scan", "--format", "json", form, env={"FATBIN_INSPECT_CACHE_DIR": str(cache)}, codes=0
            ).json()
            assert doc["stats"]["files"] == files, (form, _warm)
            stored = (
                sum(i["size"] for i in doc["images"])
                if form.startswith(lay)
                else os.path.getsize(tmp_path / "d.tar")
            )
            assert doc["stats"]["bytes"] == stored
        out = cli("scan", form, env={"FATBIN_INSPECT_CACHE_DIR": str(cache)}).out
        assert f"(scanned {files} files," in out, out
    with open(tmp_path / "d.tar", "rb") as fh:
        rc, doc, err = scan_json("-", stdin=fh)
    assert doc["stats"]["files"] == files and doc["stats"]["bytes"] == os.path.getsize(tmp_path / "d.tar")
    # several images of one layout: the files of each (base: none; t: libx.so and its hard link)
    rc, doc, _ = scan_json(lay)
    counts = [_unpacked_files(lay, tag, tmp_path / tag)[0] for tag in ("base", "t", "t2", "big")]
    assert doc["stats"]["files"] == sum(counts) and counts[:3] == [0, 2, 1]
    out = cli("list", f"{lay}:big", env=NO_CACHE).out
    assert f"{files} files of " in out and " bytes in its filesystem" in out


def test_check_gate_and_diff_take_image_references(tmp_path):
    """``check``, ``gate`` and ``diff`` read an image named as skopeo names it (``DIR:TAG``,
    ``oci-archive:FILE:TAG``), as ``list`` and ``scan`` do; a missing archive is one line, exit 2."""
    need("skopeo")
    lay = umoci_layout(tmp_path)
    arch = str(tmp_path / "img.tar")
    run("skopeo", "copy", "-q", f"oci:{lay}:t", f"oci-archive:{arch}:t")
    ran = cli("check", f"{lay}:t2", "--gpu", "RTX 3090", "--driver", "580", "--format", "json", codes=0)
    assert [(inside(r["path"]), r["verdict"]) for r in ran.json()["results"]] == [
        ("usr/lib/liby.so", "native")
    ]
    gate = cli("gate", f"oci-archive:{arch}:t", "--require", "sm_86", "--format", "json", codes=0).json()
    assert gate["summary"]["artifacts"] == 2, gate["summary"]
    cli("diff", f"{lay}:t", f"{lay}:t2", "--format", "json", codes=0)
    err = cli("check", f"oci-archive:{tmp_path}/none.tar:t", "--gpu", "H100", codes=2).err
    assert (
        err.strip()
        == f"fatbin-inspect: oci-archive:{tmp_path}/none.tar:t: {tmp_path}/none.tar: no such file or directory"
    )
