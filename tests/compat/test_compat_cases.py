"""Every case of fixtures/compat/cases.json (COMPAT_CASES.md), evaluated from its real fixture file.

A case names its driver by branch, or by CUDA level for Jetson (JetPack 6 = 12.6, JetPack 7 = 13.0),
and "built with" a toolkit, which is the runtime it needs when the file itself does not name one
(a bare .fatbin). ``expected.rule`` and ``expected.rules`` must all be among the rules the engine
reports; its deciding rule may be another of them.
"""

import json
import os

import pytest
from conftest import fixture_path

from fatbin_inspect.compat import data, runtime
from fatbin_inspect.compat.engine import evaluate
from fatbin_inspect.compat.runtime import RuntimeNeed
from fatbin_inspect.compat.targets import resolve_targets
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path

LISTING = fixture_path("compat", "cases.json")


def load_cases():
    if not os.path.exists(LISTING):
        return []
    with open(LISTING) as fh:
        return json.load(fh)


def driver_of(case):
    if case.get("driver_branch"):
        return case["driver_branch"]
    return next(b["branch"] for b in data.branches() if b["max_cuda_version"] == case["driver_cuda"])


@pytest.mark.parametrize("case", load_cases(), ids=lambda c: f"case{c['case']}")
def test_case(case):
    path = fixture_path(case["file"])
    report = next(inspect_path(path, Options(kernels=True)))
    assert report.error is None and report.fatbins
    (target,) = resolve_targets([case["gpu"]], driver_of(case), case["env"])
    assert f"{target.cc[0]}.{target.cc[1]}" == case["cc"]
    rt = runtime.for_file(report) or RuntimeNeed(case["built_with"], "case built_with")
    v = evaluate(report, target, rt)
    want = case["expected"]
    assert v.verdict == want["verdict"], v.reason
    assert (v.error.code if v.error else None) == want["error"], v.reason
    assert (v.chosen.arch if v.chosen else None) == want["chosen"], v.reason
    assert {want["rule"], *want["rules"]} <= set(v.rules), (v.rule, v.rules)
    assert v.reason


def test_the_listing_covers_every_fixture():
    cases = load_cases()
    assert cases, "fixtures/compat/cases.json missing (scripts/build_fixtures.sh)"
    listed = {os.path.basename(c["file"]) for c in cases}
    assert listed == {
        f for f in os.listdir(fixture_path("compat")) if f.startswith("case") and f != "cases.json"
    }
