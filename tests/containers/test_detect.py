"""containers.detect: the format of a file from its first bytes."""

from hypothesis import given, settings
from hypothesis import strategies as st

from fatbin_inspect.containers import signatures

_PREFIXES = [
    b"",
    b"MZ",
    b"!<arch>\n",
    b"!<thin>\n",
    b"PK\x03\x04",
    b"PK\x05\x06",
    b"\x50\xed\x55\xba",
    b"\x1f\x8b",
    b"BZh91AY&SY",
    b"\x64\x86",
    b"\x64\xaa",
    b"\x7fELF",
    b".version 9.0\n.target sm_80\n",
]


@settings(max_examples=400, deadline=None)
@given(prefix=st.sampled_from(_PREFIXES), rest=st.binary(max_size=300), ustar=st.booleans())
def test_detect_tries_by_first_byte_what_the_ordered_tests_give(prefix, rest, ustar):
    """``detect`` tries only the signatures that can start with the head's first byte; the
    answer is the first of all signatures, in order, that matches (each signature's first byte
    is what its test requires)."""
    from fatbin_inspect import containers

    head = prefix + rest
    if ustar:
        head = head.ljust(262, b"\0")[:257] + b"ustar" + head[262:]
    if head[:4] == b"\x7fELF":
        return
    want = next((fmt for fmt, _first, test in signatures._signatures()[0] if test(head)), "unknown")
    assert containers.detect(head) == want
