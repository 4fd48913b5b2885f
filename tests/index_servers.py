"""Package indexes on 127.0.0.1 for the index tests, as separate processes stopped by PID:
pypiserver (a real PEP 503 index that answers ``Range``), and the standard library's
``http.server`` over a static index (it ignores ``Range``: a server without ranges), whose
``/private/`` prefix serves the same files to the login alice:s3cret only (401 otherwise)."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

STATIC_SERVER = r"""
import http.server, sys
class H(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/private/"):
            if self.headers.get("Authorization") != "Basic YWxpY2U6czNjcmV0":  # alice:s3cret
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="x"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.path = self.path[len("/private"):]
        super().do_GET()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (bound, then let go: nothing listens there)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, seconds: float = 20.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


class Server:
    def __init__(self, argv: list[str], port: int, cwd: str | None = None):
        self.port = port
        self.proc = subprocess.Popen(
            argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            wait_port(port, self.proc)
        except RuntimeError:
            self.stop()
            raise

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def pypiserver(folder: str) -> Server:
    exe = shutil.which("pypi-server")
    if exe is None:
        raise FileNotFoundError("pypi-server")
    port = free_port()
    return Server([exe, "run", "-i", "127.0.0.1", "-p", str(port), "--disable-fallback", folder], port)


def static_server(folder: str) -> Server:
    port = free_port()
    return Server([sys.executable, "-c", STATIC_SERVER, str(port)], port, cwd=folder)


def static_index(
    root: str, wheels: list[str], sha: dict[str, str] | None = None, metadata: dict[str, bytes] | None = None
) -> None:
    """A PEP 503 tree under ``root/simple`` for ``wheels`` (copied to ``root/files``), each link
    with its sha256 (or the one ``sha`` gives for its file name); ``metadata``: file name ->
    the METADATA served beside it (PEP 658: ``NAME.metadata``, ``data-core-metadata``)."""
    from packaging.utils import canonicalize_name, parse_wheel_filename

    os.makedirs(os.path.join(root, "files"), exist_ok=True)
    by_project: dict[str, list[str]] = {}
    for w in wheels:
        base = os.path.basename(w)
        shutil.copy(w, os.path.join(root, "files", base))
        name = canonicalize_name(parse_wheel_filename(base)[0])
        with open(w, "rb") as fh:
            digest = (sha or {}).get(base) or hashlib.sha256(fh.read()).hexdigest()
        core = ""
        if metadata and base in metadata:
            with open(os.path.join(root, "files", base + ".metadata"), "wb") as fh:
                fh.write(metadata[base])
            core = f' data-core-metadata="sha256={hashlib.sha256(metadata[base]).hexdigest()}"'
        link = f'<a href="../../files/{base}#sha256={digest}"{core}>{base}</a>'
        by_project.setdefault(name, []).append(link)
    for name, links in by_project.items():
        os.makedirs(os.path.join(root, "simple", name), exist_ok=True)
        with open(os.path.join(root, "simple", name, "index.html"), "w") as fh:
            fh.write("<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n")


def build_wheel(
    folder: str, name: str, version: str, tag: str, binaries: dict[str, bytes], requires: tuple[str, ...] = ()
) -> str:
    """A wheel of ``binaries`` (member name -> bytes) beside Python files and a header."""
    from builders import wheel_file

    dist = name.replace("-", "_")
    members = {
        f"{dist}/__init__.py": b"# a package\n" * 400,
        f"{dist}/include/kernels.h": b"// header\n" * 300,
    }
    return wheel_file(folder, name, version, {**members, **binaries}, tag, requires, wheel_tag=tag)


def build_sdist(folder: str, name: str, version: str) -> str:
    import io
    import tarfile

    dist = name.replace("-", "_")
    path = os.path.join(folder, f"{dist}-{version}.tar.gz")
    with tarfile.open(path, "w:gz") as tf:
        data = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
        ti = tarfile.TarInfo(f"{dist}-{version}/PKG-INFO")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    return path
