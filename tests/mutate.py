"""Structure-blind byte mutations for fuzzing, driven by a ``draw(lo, hi) -> int`` source so that
hypothesis (``st.integers``) and the plain-random long run (``random.randint``) share them."""

from __future__ import annotations

from collections.abc import Callable

# Values that break size arithmetic: zero, one, sign bits, all-ones, just past 32/64 bits.
INTERESTING = (
    0,
    1,
    7,
    8,
    0x40,
    0x7F,
    0x80,
    0xFF,
    0x7FFF,
    0xFFFF,
    0x7FFFFFFF,
    0xFFFFFFFF,
    1 << 32,
    1 << 40,
    (1 << 63) - 1,
    1 << 63,
    (1 << 64) - 1,
)

Draw = Callable[[int, int], int]


def mutate(seed: bytes, draw: Draw, rounds: int) -> bytes:
    d = bytearray(seed)
    for _ in range(rounds):
        if not d:
            d.append(0)
        op = draw(0, 5)
        p = draw(0, len(d) - 1)
        if op == 0:  # one byte
            d[p] = draw(0, 255)
        elif op == 1:  # an aligned size-like field
            w = (2, 4, 8)[draw(0, 2)]
            p -= p % w
            v = INTERESTING[draw(0, len(INTERESTING) - 1)] % (1 << (8 * w))
            d[p : p + w] = v.to_bytes(w, "little")[: len(d[p : p + w])]
        elif op == 2:  # truncate
            del d[p:]
        elif op == 3:  # delete a run
            del d[p : p + draw(1, 64)]
        elif op == 4:  # duplicate a run from elsewhere (repeats headers)
            q = draw(0, len(d) - 1)
            d[p:p] = d[q : q + draw(1, 256)]
        else:  # bit flip
            d[p] ^= 1 << draw(0, 7)
    return bytes(d)
