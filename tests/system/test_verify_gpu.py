"""On a machine with an NVIDIA GPU: every committed fixture is loaded by the driver and the engine's
prediction for this GPU and driver must agree with what the driver did (scripts/gpu_check.sh)."""

import glob
import importlib.util
import os

import pytest
from conftest import FIXTURES

pytestmark = pytest.mark.gpu

FILES = sorted(
    p
    for d in ("bin", "compat", "units")
    for p in glob.glob(os.path.join(FIXTURES, d, "*"))
    if os.path.isfile(p)
)


@pytest.fixture(scope="module")
def sessions():
    if not os.path.exists("/proc/driver/nvidia/version"):
        pytest.skip("no NVIDIA driver (/proc/driver/nvidia/version is absent)")
    if not (
        importlib.util.find_spec("cuda")
        and (importlib.util.find_spec("cuda.bindings") or importlib.util.find_spec("cuda.cuda"))
    ):
        pytest.skip("cuda-python is not installed (pip install 'fatbin-inspect[gpu]')")
    from fatbin_inspect.cli.verify import _target
    from fatbin_inspect.verify.compare import engine_predictor
    from fatbin_inspect.verify.runner import ChildSession, child_env

    env = child_env(os.environ, disable_jit=False)
    target, why = _target(env)
    if target is None:
        pytest.skip(f"no local target for the engine: {why}")
    with ChildSession(env, 120.0) as normal, ChildSession(child_env(os.environ, True), 120.0) as nojit:
        yield normal, nojit, engine_predictor(target), target


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_prediction_matches_the_driver(sessions, path):
    from fatbin_inspect.verify import compare

    normal, nojit, predict, target = sessions
    reports: list = []
    checks = list(compare.check_file(path, normal.load, nojit.load, predict, reports=reports))
    errors = [(c.what, compare.describe_actual(c)) for c in checks if c.actual == compare.ERROR]
    assert not errors, errors
    found = compare.findings(checks) + compare.file_findings(compare.file_checks(reports, checks, target))
    assert not found, "\n".join(
        f"{f.what} @ {f.fatbin_offset or 0:#x}: predicted {f.predicted}, driver {f.actual} ({f.reason})"
        for f in found
    )
