"""Real wheel: torch 2.14.1's libtorch_cuda.so (cu130: sm_75/80/86/90/100/120 cubins, no PTX, cudart 13).

Runs when ``.cache/corpus/x/torch/lib/libtorch_cuda.so`` was extracted (scripts/fetch_corpus.sh).
"""

import os

import pytest
from conftest import CORPUS, device_only

from fatbin_inspect.compat import runtime
from fatbin_inspect.compat.engine import evaluate
from fatbin_inspect.compat.targets import resolve_targets
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path

pytestmark = pytest.mark.corpus
LIB = os.path.join(CORPUS, "x", "torch", "lib", "libtorch_cuda.so")


@pytest.fixture(scope="module")
def torch_report():
    if not os.path.exists(LIB):
        pytest.skip(f"{LIB} not extracted (scripts/fetch_corpus.sh)")
    return next(inspect_path(LIB, Options(kernels=True)))


@pytest.mark.parametrize(
    "gpu,driver,verdict,error,chosen,rule",
    [
        ("RTX 5090", "580", "native", None, "sm_120", "R-SASS-1"),
        ("GTX 1080", "580", "fail", 209, None, "R-SASS-1"),
        ("Jetson AGX Orin", "580", "fail", 209, None, "R-SASS-TEGRA"),
        ("B300", "580", "native", None, "sm_100", "R-SASS-1"),
        ("GB10", "580", "native", None, "sm_120", "R-SASS-1"),
        ("H100", "570", "fail", 35, None, "R-DRV"),
    ],
)
def test_torch_on_the_issue_targets(torch_report, gpu, driver, verdict, error, chosen, rule):
    (t,) = device_only(resolve_targets([gpu], driver))
    v = evaluate(torch_report, t, runtime.for_file(torch_report))
    assert (v.verdict, v.error.code if v.error else None, v.chosen.arch if v.chosen else None, v.rule) == (
        verdict,
        error,
        chosen,
        rule,
    ), v.reason
    assert v.runtime.version == "13"


def test_torch_has_15_kernels_without_an_sm75_image(torch_report):
    (t,) = resolve_targets(["sm_75"], "580")
    v = evaluate(torch_report, t)
    assert v.verdict == "native" and len(v.missing_kernels) == 15
    assert all("m16n8k16" in k for k in v.missing_kernels)  # tensor-core int4 kernels built for sm_80+ only
