"""The guard of clause (i) for statically linked components (docs/compatibility.md §4, issue 56
item 2): a component's older code for the GPU's generation does not make the library's own broad
fatbins "specialised for other GPUs".

fixtures/units/f7_static_component.so (nvcc 13.0, scripts/build_fixtures.sh): two TUs of the
library's own code (own_c, own_d) built for sm_86, sm_90, sm_100 and sm_120 + compute_120, and a
static archive (``nvcc -lib``: five ncclDevKernel_* kernels for sm_75 + sm_80) linked whole. On
CC 7.5 and 8.0 only the component loads: the library's own kernels fail with 209.
"""

import pytest
from conftest import cli_json, fixture_path

from fatbin_inspect.compat.engine import evaluate
from fatbin_inspect.compat.targets import resolve_targets
from fatbin_inspect.inventory.reader import Options, inspect_path

F7 = fixture_path("units", "f7_static_component.so")
EXPECTED = {  # verdict, coverage, error, gaps, set aside
    "RTX 2080 Ti": ("fail", "partial", 209, 2, 0),
    "A100": ("fail", "partial", 209, 2, 0),
    "H100": ("native", "partial", None, 0, 1),
    "RTX 5090": ("native", "partial", None, 0, 1),
}


def _report():
    return next(inspect_path(F7, Options(probe_small=True)))


def test_the_fixture_holds_a_static_component_beside_the_library_own_code():
    r = _report()
    archs = sorted(tuple(sorted(e.arch for e in fb.entries)) for fb in r.fatbins)
    own = ("compute_120", "sm_100", "sm_120", "sm_86", "sm_90")
    assert archs == [own, own, ("sm_75", "sm_80")]


@pytest.mark.parametrize("gpu", EXPECTED)
def test_the_library_own_kernels_are_gaps_where_only_the_component_loads(gpu):
    (t,) = resolve_targets([gpu], "580")
    v = evaluate(_report(), t)
    gaps = v.gaps.count if v.gaps else 0
    aside = v.specialised.count if v.specialised else 0
    assert (v.verdict, v.coverage, v.error.code if v.error else None, gaps, aside) == EXPECTED[gpu]
    noted = [n for n in v.notes if "statically linked component" in n]
    if gaps:
        assert len(noted) == 1 and "2 fatbins of code for CC 8.6 and newer are gaps" in noted[0]
    else:
        assert not noted


def test_check_json_says_so():
    doc = cli_json("check", F7, "--gpu", "A100", "--gpu", "H100", "--driver", "580", codes=(1,))
    a100, h100 = doc["results"]
    assert (a100["verdict"], a100["error"]["code"], a100["coverage"]) == ("fail", 209, "partial")
    assert a100["gaps"]["count"] == 2 and a100["specialised"] is None
    assert any("statically linked component" in n for n in a100["notes"])
    assert a100["reason"].endswith("they hold 2 kernels: own_c_kernel, own_d_kernel")  # the gaps, decoded
    assert (h100["verdict"], h100["coverage"], h100["specialised"]["count"]) == ("native", "partial", 1)
