"""scan --executor dask over TLS (issue 24 item 1): a real ``dask scheduler --protocol tls`` and
``dask worker`` on 127.0.0.1 with certificates signed by a CA the test makes (``cryptography``),
reached with ``--scheduler tls://... --tls-ca-file --tls-cert --tls-key``: the same JSON as the
local scan; a client without a certificate the CA signed gets no answer."""

from __future__ import annotations

import datetime

import pytest
from dask_cluster import BINS, Cluster, cli_cache_at, doc_untimed, fixture_tree, free_port

pytestmark = [pytest.mark.dask, pytest.mark.slow]
distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (extra 'dask')")
x509 = pytest.importorskip("cryptography.x509", reason="needs the cryptography package")


def _pem_pair(base, name, issuer=None, ca=False):
    """A key and a certificate ``name`` (signed by ``issuer``: (cert, key); self-signed without)."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    issuer_cert, issuer_key = issuer or (None, key)
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_cert.subject if issuer_cert is not None else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        import ipaddress

        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
    cert = builder.sign(issuer_key, hashes.SHA256())
    (base / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (base / f"{name}.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert, key


class TlsCluster(Cluster):
    """A scheduler and a worker that speak TLS only, with certificates of the test's CA."""

    def __init__(self, tmp):
        self.tmp, self.procs = tmp, []
        ca = _pem_pair(tmp, "ca", ca=True)
        for name in ("scheduler", "worker", "client"):
            _pem_pair(tmp, name, issuer=ca)
        _pem_pair(tmp, "stranger", issuer=_pem_pair(tmp, "other-ca", ca=True))
        self.port = free_port()
        self.address = f"tls://127.0.0.1:{self.port}"
        self.scheduler = self._start(
            ["dask", "scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--protocol", "tls"]
            + ["--no-dashboard", *self.tls("scheduler")]
        )

    def tls(self, name):
        t = self.tmp
        return [
            "--tls-ca-file",
            str(t / "ca.pem"),
            "--tls-cert",
            str(t / f"{name}.pem"),
            "--tls-key",
            str(t / f"{name}.key"),
        ]

    def worker(self, hide=(), preload=None):
        argv = ["dask", "worker", self.address, "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1"]
        return self._start(argv + self.tls("worker"), hide)

    def wait_workers(self, n: int):
        from distributed.security import Security

        t = self.tmp
        sec = Security(
            tls_ca_file=str(t / "ca.pem"),
            tls_client_cert=str(t / "client.pem"),
            tls_client_key=str(t / "client.key"),
            require_encryption=True,
        )
        with distributed.Client(self.address, timeout=60, security=sec) as c:
            c.wait_for_workers(n, timeout=120)
            return sorted(c.nthreads())


def test_a_tls_cluster_gives_the_local_json(tmp_path):
    tree = fixture_tree(tmp_path)
    c = TlsCluster(tmp_path)
    try:
        c.worker()
        c.worker()
        assert all(w.startswith("tls://") for w in c.wait_workers(2))
        args = ["scan", str(tree / "lib"), "--format", "json", "--no-cache"]
        local = cli_cache_at([*args, "-j", "2"])
        dask = cli_cache_at([*args, "--executor", "dask", "--scheduler", c.address, *c.tls("client")])
        assert local.code == 0, local.err
        assert dask.code == 0, dask.err
        assert doc_untimed(dask) == doc_untimed(local)
        assert len(doc_untimed(dask)["files"]) == len(BINS)
        # a certificate another CA signed: the scheduler refuses it; one line, exit 2
        stranger = [
            *("--tls-ca-file", str(tmp_path / "ca.pem")),
            *("--tls-cert", str(tmp_path / "stranger.pem"), "--tls-key", str(tmp_path / "stranger.key")),
        ]
        bad = cli_cache_at(
            [*args, "--executor", "dask", "--scheduler", c.address, "--connect-timeout", "5", *stranger]
        )
        assert bad.code == 2 and "cannot reach the Dask scheduler" in bad.err, bad.err
        assert "Traceback" not in bad.err
    finally:
        c.stop()


def test_tls_options_are_checked_before_anything_is_read(tmp_path):
    root = str(tmp_path)
    res = cli_cache_at(
        ["scan", root, "--executor", "dask", "--scheduler", "tls://127.0.0.1:1", "--tls-cert", "x.pem"]
    )
    assert res.code == 2 and "go together" in res.err
    res = cli_cache_at(
        ["scan", root, "--executor", "dask", "--scheduler", "tls://127.0.0.1:1"]
        + ["--tls-ca-file", str(tmp_path / "none.pem"), "--tls-cert", str(tmp_path / "none.pem")]
    )
    assert res.code == 2 and "--tls-ca-file" in res.err and "not a readable file" in res.err
    (tmp_path / "a.pem").write_text("x")
    res = cli_cache_at(
        ["scan", root, "--executor", "dask", "--scheduler", "tcp://127.0.0.1:1"]
        + ["--tls-ca-file", str(tmp_path / "a.pem"), "--tls-cert", str(tmp_path / "a.pem")]
    )
    assert res.code == 2 and "not a tls:// address" in res.err, res.err
    assert "Traceback" not in res.err
