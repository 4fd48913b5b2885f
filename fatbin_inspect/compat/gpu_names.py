"""GPU names -> rows of ``gpus.json``, by words ("tokens"), as people and tools spell them.

A name is split into lower-case tokens at every character that is not a letter or digit, and
``nvidia`` is dropped: ``"H100-SXM5-80GB"`` -> ``h100 sxm5 80gb``, ``"NVIDIA H100 80GB HBM3"``
(what ``nvidia-smi`` prints for the SXM5 board) -> ``h100 80gb hbm3``. A row matches when its
name or one of its ``nvidia_smi_names`` has every token of the query; failing that, when it has
every *model* token (one with a digit that is not a memory size or a form factor, such as
``h100``, ``4090``, ``gb10``) and as many of the others as any row has. So ``"h100 sxm"`` and
``"H100-SXM5-80GB"`` resolve although no product in the data is called "SXM": the board names
people use carry words ``nvidia-smi`` does not print.

A query word that no known name has is split into words that names have, as people run them
together: ``RTX5090`` -> ``rtx 5090``, ``GeForceRTX4090`` -> ``geforce rtx 4090`` (the fewest known
words that spell it; failing that, its runs of letters and of digits). A row's names are its
``name``, its ``nvidia_smi_names`` and its ``also_known_as`` (``DGX Spark`` for GB10).

Ties between products of different compute capabilities go to the more specific name (the
fewest tokens the query did not ask for), then to the one the data is more confident about;
anything else is left ambiguous for the caller to report.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from fatbin_inspect.compat import data
from fatbin_inspect.compat.data import CC

_NOT_A_WORD = {"gb", "mb", "tb"}  # units: "gb100" is no "GB" product of a model "100"
_QUALIFIER = re.compile(r"\d+gb|sxm\d*|hbm\d*e?|pcie\d*|gen\d+|\d+w")
_CONFIDENCE = {"high": 0, "medium": 1, "low": 2}


@functools.lru_cache(maxsize=8192)  # every --gpu scores all ~500 rows' names: split each once
def tokens(text: str) -> tuple[str, ...]:
    return tuple(t for t in re.split(r"[^a-z0-9]+", text.lower()) if t and t != "nvidia")


def model_tokens(toks: Iterable[str]) -> tuple[str, ...]:
    return tuple(t for t in toks if any(c.isdigit() for c in t) and not _QUALIFIER.fullmatch(t))


def names_of(row: dict) -> tuple[str, ...]:
    return (row["name"], *row.get("nvidia_smi_names", ()), *row.get("also_known_as", ()))


def query_tokens(query: str, runs: bool = False) -> tuple[str, ...]:
    """The query's tokens, each word no known name has split into known words (see above); with
    ``runs``, split instead after each digit run that letters follow (``h100sxm5`` -> ``h100 sxm5``),
    the second reading ``match`` tries."""
    known = _token_index(data.gpus())
    out: list[str] = []
    for t in tokens(query):
        if t in known:
            out.append(t)
        else:
            out += _pieces(t, r"[a-z]*[0-9]+|[a-z]+") if runs else _split(t, known)
    return tuple(out)


def _pieces(word: str, pattern: str) -> list[str]:
    """``word`` cut by ``pattern`` when every piece is a word (two characters or more, no unit)."""
    parts = re.findall(pattern, word)
    return parts if all(len(x) >= 2 and x not in _NOT_A_WORD for x in parts) else [word]


def loose_tokens(query: str) -> tuple[str, ...]:
    """``query_tokens`` with every word still unknown cut into its letter and digit runs
    (``rtx5900`` -> ``rtx 5900``): what ``closest`` compares when nothing matched."""
    known = _token_index(data.gpus())
    out: list[str] = []
    for t in query_tokens(query):
        out += _pieces(t, r"[a-z]+|[0-9]+") if t not in known else [t]
    return tuple(out)


def _split(word: str, known: dict) -> tuple[str, ...]:
    """``word`` as the fewest known tokens that spell it (``geforcertx4090``), else itself. Pieces
    are two characters or more, never a unit, and never cut a run of digits (``40900`` stays)."""
    best: list[tuple[str, ...] | None] = [(), *([None] * len(word))]
    for end in range(2, len(word) + 1):
        if end < len(word) and word[end - 1].isdigit() and word[end].isdigit():
            continue
        for start in range(end - 1):
            _extend(best, start, end, word[start:end], known)
    return best[-1] or (word,)


def _extend(best: list[tuple[str, ...] | None], start: int, end: int, piece: str, known: dict) -> None:
    """``best[end]``: the spelling of the word's first ``end`` characters ending in ``piece``,
    when that takes fewer known tokens than the one found so far."""
    head = best[start]
    if head is None or piece not in known or piece in _NOT_A_WORD:
        return
    if (b := best[end]) is None or len(head) + 1 < len(b):
        best[end] = (*head, piece)


@dataclass(frozen=True)
class Match:
    row: dict
    exact: bool  # some name has exactly the query's tokens
    hits: int  # query tokens found in the best name
    extra: int  # tokens of that name the query did not give

    @property
    def cc(self) -> CC:
        return data.parse_cc(self.row["compute_capability"])


def _best(row: dict, qt: tuple[str, ...]) -> Match:
    best = None
    for name in names_of(row):
        nt = tokens(name)
        hits = sum(1 for q in qt if q in nt)
        m = Match(row, nt == qt, hits, len(nt) - hits)
        if best is None or (m.exact, m.hits, -m.extra) > (best.exact, best.hits, -best.extra):
            best = m
    assert best is not None
    return best


def match(query: str, rows: Iterable[dict] | None = None, listing: bool = False) -> list[Match]:
    """Every row the query names: exact names, else rows with all tokens, else the relaxed rule
    (``listing``: rows with all tokens even when some name is exact, as ``gpus QUERY`` lists);
    a query of run-together words is read both ways ``query_tokens`` splits it."""
    rows = None if rows is None else list(rows)
    readings = dict.fromkeys((query_tokens(query), query_tokens(query, runs=True)))
    for qt in readings:
        found = _match(qt, rows, listing)
        if found:
            return found
    return []


def _match(qt: tuple[str, ...], rows: list[dict] | None, listing: bool) -> list[Match]:
    if not qt:
        return []
    scored = [_best(r, qt) for r in (_candidates(qt) if rows is None else rows)]
    exact = [] if listing else [m for m in scored if m.exact]
    return exact or _with_every_token(scored, qt) or _relaxed(scored, qt)


def _with_every_token(scored: list[Match], qt: tuple[str, ...]) -> list[Match]:
    return [m for m in scored if m.hits == len(qt)]


def _candidates(qt: tuple[str, ...]) -> list[dict]:
    """The rows sharing a token with the query (rows with none match by no rule: not scored)."""
    every = data.gpus()
    index = _token_index(every)
    return [every[i] for i in sorted({i for t in qt for i in index.get(t, ())})]


def _relaxed(scored: list[Match], qt: tuple[str, ...]) -> list[Match]:
    """The relaxed rule: rows whose names have every model number of the query, most hits first."""
    models = set(model_tokens(qt))
    if not models:
        return []
    relaxed = [m for m in scored if models <= set(_name_tokens(m.row))]
    top = max((m.hits for m in relaxed), default=0)
    return [m for m in relaxed if m.hits == top]


_INDEX: list = [None, {}]  # (the rows indexed, token -> positions of the rows one of whose names has it)


def _token_index(rows: list[dict]) -> dict[str, tuple[int, ...]]:
    if _INDEX[0] is not rows:
        out: dict[str, list[int]] = {}
        for i, row in enumerate(rows):
            for t in _name_tokens(row):
                out.setdefault(t, []).append(i)
        _INDEX[:] = [rows, {t: tuple(v) for t, v in out.items()}]
    return _INDEX[1]


def _name_tokens(row: dict) -> set[str]:
    return {t for n in names_of(row) for t in tokens(n)}


def narrow(matches: list[Match]) -> list[Match]:
    """Keep the matches of one (compute capability, Tegra) group when the more specific name or,
    failing that, the data's confidence singles it out; otherwise return them all."""
    groups: dict[tuple[CC, bool], list[Match]] = {}
    for m in matches:
        groups.setdefault((m.cc, bool(m.row["tegra_igpu"])), []).append(m)
    if len(groups) <= 1:
        return matches
    for key in (
        lambda ms: min(m.extra for m in ms),
        lambda ms: min(_CONFIDENCE.get(m.row.get("confidence"), 3) for m in ms),
    ):
        ranked = sorted(groups.values(), key=key)
        if key(ranked[0]) < key(ranked[1]):
            return ranked[0]
    return matches


def sort_key(row: dict) -> tuple:
    """Compute capability, then name: the order of ``gpus``."""
    return (data.parse_cc(row["compute_capability"]), row["name"].lower())
