"""Same entries, kind and arch as NVIDIA's cuobjdump on every fixture (quirks in oracle.py)."""

import os
from collections import Counter

import pytest
from conftest import FIXTURES, fixture_path
from oracle import cuobjdump_entries, our_entries

from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path

pytestmark = pytest.mark.cuobjdump


def _fixtures():
    for d in ("bin", "compat"):
        for name in sorted(os.listdir(os.path.join(FIXTURES, d))):
            if not name.endswith((".json", ".md")):
                yield f"{d}/{name}"


@pytest.mark.parametrize("rel", list(_fixtures()))
def test_same_entries_as_cuobjdump(cuobjdump, rel):
    path = fixture_path(*rel.split("/"))
    # cuobjdump reads no standalone PTX text ("does not contain device code")
    # details: cubins decoded, so an `a` kept only in .nv.compat counts as cuobjdump counts it
    reports = [r for r in inspect_path(path, Options(details=True)) if r.format not in ("ar", "ptx")]
    theirs, why = cuobjdump_entries(cuobjdump, path)
    ours = sum((our_entries(r) for r in reports), Counter())
    if theirs is None and not ours:
        assert "does not contain device code" in why  # both see nothing in the two fatbin sections
        return
    if theirs is None:
        has_sm35 = any(e.sm in (35, 37) for r in reports for e in r.entries)
        is_pe = any(r.format == "pe" for r in reports)
        assert has_sm35 or is_pe, f"cuobjdump refused {rel}: {why}"
        pytest.skip(f"cuobjdump refuses this file (documented quirk): {why}")
    if any(r.format == "pe" for r in reports):
        pytest.skip("cuobjdump on Linux does not read PE DLLs")
    assert ours == theirs
