"""Shared test helpers: the repository's paths, ``cli()`` (the command line run in-process as a
user runs it), cuobjdump, device-only targets, the ``slow`` marker for heavy tests."""

import dataclasses
import gc
import json
import os
import shutil
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
FIXTURES = os.path.join(ROOT, "fixtures")
BIN = os.path.join(FIXTURES, "bin")  # inventory fixtures (fixtures/README.md, bin/)
COMPAT = os.path.join(FIXTURES, "compat")  # prediction cases (fixtures/README.md, compat/)
GOLDEN = os.path.join(TESTS, "golden")
CORPUS = os.path.join(ROOT, ".cache", "corpus")
sys.path.insert(0, TESTS)  # tests/builders.py


def fixture_path(*parts):
    return os.path.join(FIXTURES, *parts)


def read_file(path) -> bytes:
    """The bytes of the file at ``path``."""
    with open(path, "rb") as fh:
        return fh.read()


@dataclasses.dataclass(frozen=True)
class Ran:
    """One run of the command line: its exit code and what it wrote to stdout and stderr."""

    code: int
    out: str
    err: str
    out_bytes: bytes

    def json(self):
        return json.loads(self.out_bytes)


def cli(*args, env=None, stdin=None, codes=None) -> Ran:
    """Run ``fatbin-inspect ARGS...`` in-process through the real entry point
    (``cli.main.main``: usage errors exit 2 with one line on stderr, as for a user) inside
    click's ``CliRunner().isolation``: ``stdin`` (str or bytes) is its standard input, ``env``
    overrides variables for the run (None unsets one). Args may be str or Path.

    An internal error (main's last resort: exit 2, "internal error: ..." on stderr) fails the
    test, as ``catch_exceptions=False`` did. ``codes`` (an int or a tuple) asserts the exit code,
    showing stdout and stderr when it differs. What ``main`` changes for the process (the gc
    thresholds, ``FATBIN_INSPECT_DEBUG`` under ``--debug``) is put back."""
    from click.testing import CliRunner

    from fatbin_inspect.cli.main import main

    argv = [str(a) for a in args]
    thresholds, environ = gc.get_threshold(), dict(os.environ)
    code = 0
    try:
        with CliRunner().isolation(input=stdin, env=env) as (out, err, _mixed):
            try:
                main(argv)
            except SystemExit as exc:
                code = 0 if exc.code is None else exc.code
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            ran = Ran(
                code,
                out.getvalue().decode("utf-8", "replace"),
                err.getvalue().decode("utf-8", "replace"),
                out.getvalue(),
            )
    finally:
        gc.set_threshold(*thresholds)
        if dict(os.environ) != environ:
            os.environ.clear()
            os.environ.update(environ)
    assert "fatbin-inspect: internal error: " not in ran.err, ran.err
    if codes is not None:
        assert ran.code in ((codes,) if isinstance(codes, int) else tuple(codes)), (
            f"exit {ran.code}\n--- stdout\n{ran.out}\n--- stderr\n{ran.err}"
        )
    return ran


def cli_json(*args, codes=(0, 1), **kw):
    """``cli(*args, "--format", "json")``, exit 0 or 1 asserted, stdout parsed."""
    return cli(*args, "--format", "json", codes=codes, **kw).json()


def find_cuobjdump():
    exe = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if exe:
        return exe
    try:
        import nvidia.cuda_cuobjdump as pkg  # pip install nvidia-cuda-cuobjdump
    except ImportError:
        pkg = None
    roots = list(getattr(pkg, "__path__", [])) if pkg else []
    try:
        import nvidia

        roots += [os.path.join(p, d) for p in nvidia.__path__ for d in os.listdir(p)]
    except (ImportError, OSError):
        pass
    for r in roots:
        cand = os.path.join(r, "bin", "cuobjdump")
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


@pytest.fixture(scope="session")
def cuobjdump():
    exe = find_cuobjdump()
    if not exe:
        pytest.skip("cuobjdump not found (pip install nvidia-cuda-cuobjdump==13.5.37, or set CUOBJDUMP)")
    return exe


def device_only(targets):
    """Targets judged on their device code alone (``host="any"``: no R-HOST): the tests of the
    device-code rules run x86_64 fixtures and wheels on Jetson and DGX Spark GPUs."""
    import dataclasses

    from fatbin_inspect.compat.targets import ANY_HOST

    return tuple(dataclasses.replace(t, host=ANY_HOST) for t in targets)


def pytest_collection_modifyitems(config, items):
    """Tests of real downloaded wheels, browsers and clusters are slow too: ``pytest -m "not
    slow"`` is the quick loop (under 2 minutes on 2 cores); CI (``.ci/run``) runs everything."""
    import pytest

    for item in items:
        if any(item.get_closest_marker(m) for m in ("corpus", "browser", "dask")):
            item.add_marker(pytest.mark.slow)
