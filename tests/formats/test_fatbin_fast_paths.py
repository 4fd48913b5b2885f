"""``model.fast_entry`` (issue 26, row 2) makes the record ``Entry(...)`` makes: every field the
parser sets, and the decoded fields at their declared defaults, so a field added to ``Entry`` and
not to ``fast_entry`` fails here."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from fatbin_inspect.formats.model import Entry, fast_entry

_PARSED = [
    f for f in dataclasses.fields(Entry) if f.default is dataclasses.MISSING or f.name == "relocatable_ptx"
]
_STRATEGY = {  # by annotation (model.py's are strings: ``from __future__ import annotations``)
    "int": st.integers(0, 2**64),
    "str": st.sampled_from(["sass", "ptx", "", "a", "zstd"]),
    "str | None": st.none() | st.text(max_size=8),
    "bool": st.booleans(),
    "tuple[int, int]": st.tuples(st.integers(0, 255), st.integers(0, 255)),
}


@settings(max_examples=100, deadline=None)
@given(st.fixed_dictionaries({f.name: _STRATEGY[f.type] for f in _PARSED}))
def test_fast_entry_is_the_record_the_constructor_makes(values):
    e = fast_entry(**values)
    plain = Entry(**values)
    assert e == plain and hash(e) == hash(plain)
    assert [getattr(e, f.name) for f in dataclasses.fields(Entry)] == [
        getattr(plain, f.name) for f in dataclasses.fields(Entry)
    ]
    assert dataclasses.replace(e, sm=1).sm == 1 and dataclasses.asdict(e) == dataclasses.asdict(plain)


def test_fast_entry_takes_every_field_without_a_default():
    code = fast_entry.__code__
    assert list(code.co_varnames[: code.co_argcount]) == [f.name for f in _PARSED]
