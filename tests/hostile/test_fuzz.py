"""Bounded fuzz run of every parser (issue 7), seeded from the fixtures.

Each target (``tests/fuzz_targets.py``) may refuse an input with ``errors.InputError``; any other
exception, or an "internal error" record, fails the test and must become a file in
``tests/regressions/``. The whole module stays well under 60 s (``max_examples`` below);
``scripts/fuzz.py`` runs the same targets for longer.
"""

import fuzz_targets as T
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutate import mutate

from fatbin_inspect.errors import InputError

EXAMPLES = {"inventory": 600, "pe": 150}  # per target; 300 elsewhere (~25 s in all)
_SEEDS = {}


def seeds(name):
    if name not in _SEEDS:
        _SEEDS[name] = T.seeds(name)
    return _SEEDS[name]


def run_target(name, data):
    try:
        T.TARGETS[name](data)
    except InputError:
        pass


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(T.TARGETS))
def test_fuzz_target(name):
    pool = seeds(name)
    assert pool, f"no seeds for {name}"

    @settings(
        max_examples=EXAMPLES.get(name, 300),
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def check(data):
        seed = pool[data.draw(st.integers(0, len(pool) - 1))]
        draw = lambda lo, hi: data.draw(st.integers(lo, hi))
        run_target(name, mutate(seed, draw, data.draw(st.integers(1, 8))))

    check()


@pytest.mark.parametrize("name", sorted(T.TARGETS))
def test_seeds_parse_cleanly(name):
    """The unmutated seeds are valid inputs: a target refusing them would fuzz nothing."""
    refused = []
    for s in seeds(name):
        try:
            T.TARGETS[name](s)
        except InputError as exc:
            refused.append(str(exc))
    assert not refused, refused
