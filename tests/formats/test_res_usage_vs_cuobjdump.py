"""Per-kernel resources from `--kernels` equal `cuobjdump -res-usage` (REG, SHARED, LOCAL, CONSTANT[0])."""

from collections import Counter

import pytest
from conftest import fixture_path
from oracle import cuobjdump_resources

from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path

pytestmark = pytest.mark.cuobjdump

FIXTURES = [
    "bin/t07_exe_no_compress",
    "bin/t02_exe_sm75_sm80_sm90_c90",
    "bin/t05_exe_af_targets",
    "bin/t14_sm90a.cubin",
    "bin/t16_exe_debug_G_sm80",
    "bin/t12_lib_sm86_c89.so",
    "bin/o3_sm100a_ptxas129.cubin",
    "bin/t13_raw_sm75_c75_sm120.fatbin",
]


@pytest.mark.parametrize("rel", FIXTURES)
def test_kernel_resources_equal_cuobjdump(cuobjdump, rel):
    path = fixture_path(*rel.split("/"))
    theirs = cuobjdump_resources(cuobjdump, path)
    assert theirs is not None
    (report,) = inspect_path(path, Options(kernels=True))
    ours = Counter(
        (k.name, k.registers, k.shared, k.local, k.constant0)
        for fb in report.fatbins
        if fb.section in (".nv_fatbin", None)
        for e in fb.entries
        if e.kind == "sass"
        for k in e.kernels
    )
    assert ours and ours == theirs
