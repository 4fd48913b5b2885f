import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures")
CORPUS = os.path.join(ROOT, ".cache", "corpus")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/builders.py


def fixture_path(*parts):
    return os.path.join(FIXTURES, *parts)


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
