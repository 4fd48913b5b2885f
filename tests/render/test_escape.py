"""render/escape.py: the fast path for plain ASCII gives what the full classes give."""

import random
import re

from fatbin_inspect.render import escape

# what the module's docstring says is escaped, written out here independently
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _expected_shown(s: str) -> str:
    def one(m: re.Match[str]) -> str:
        c = ord(m.group(0))
        if 0xDC80 <= c <= 0xDCFF:
            return f"\\x{c - 0xDC00:02x}"
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"

    return _UNSAFE.sub(one, s)


def _samples() -> list[str]:
    special = [chr(c) for c in [*range(0xA1), 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F)]]
    special += [
        chr(c) for c in [*range(0x2066, 0x206A), 0xD800, 0xDBFF, 0xDC7F, 0xDC80, 0xDCFF, 0xDD00, 0xDFFF]
    ]
    special += ["é", "カ", "\U0001f600", "\ufffd", "\u2067x", " ", "~"]
    rng = random.Random(52)
    texts = ["", "libtorch_cuda.so", "a b/c!d.whl", "line\nbreak", "tab\there", "\x1b]52;c;x\x07"]
    texts += [c for c in special] + [f"lib{c}x.so" for c in special]
    texts += [
        "".join(rng.choice(special + list("abc ./!")) for _ in range(rng.randrange(1, 12)))
        for _ in range(3000)
    ]
    return texts


def test_shown_escapes_exactly_the_unsafe_characters():
    for s in _samples():
        assert escape.shown(s) == _expected_shown(s), repr(s)


def test_utf8_and_hex_replace_only_lone_surrogates():
    for s in _samples():
        assert escape.utf8(s) == _SURROGATE.sub("\ufffd", s), repr(s)
        has = _SURROGATE.search(s) is not None
        assert (escape.hex_if_not_utf8(s) is not None) == has, repr(s)


def test_rich_cells_keep_line_feeds_and_escape_the_rest():
    for s in _samples():
        assert escape._shown_in_rich(s) == "\n".join(_expected_shown(part) for part in s.split("\n")), repr(s)
