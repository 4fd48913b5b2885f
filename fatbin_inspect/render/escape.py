"""The one escaping of input-derived text: what a file, member, kernel, identifier or option
name says is shown, never obeyed.

``shown`` is for terminals and logs (tables, stderr lines): every C0/C1 control character (ESC,
CR, LF, BEL, DEL, ...), every bidirectional override or isolate (U+202A-U+202E, U+2066-U+2069,
U+200E/U+200F) and the line/paragraph separators U+2028/U+2029 become a visible ``\\x1b`` /
``\\u202e`` escape, so an input can neither set the window title, clear the screen, write the
clipboard (OSC 52) nor forge a line. A byte of a file name that is not UTF-8 (Python keeps it
as a lone surrogate, ``surrogateescape``) is shown as ``\\xff``. ``utf8`` is for documents
(JSON, SARIF, JUnit, Markdown): the same undecodable bytes become U+FFFD, so no encoder fails;
``hex_if_not_utf8`` gives the exact bytes for the records that carry them.

Rich markup is never parsed from input: ``render.console`` prints with ``markup=False`` and
passes every string and ``Text`` of a renderable through ``shown`` first (``safe``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich is imported by the renderers that use it, not by every error line
    from rich.console import RenderableType
    from rich.text import Text

# The classes below are pattern text, compiled by ``re`` at their first use (its cache keeps
# them): compiling a class that spans the surrogates walks each of its code points in Python, a
# cost every start of the command line paid at import. ASCII text without control characters,
# what most runs only ever show, never needs them (``_plain``).
_UNSAFE = "[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
# the same but LF, which rich lays out as a line break inside its cell
_UNSAFE_IN_RICH = (
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_SURROGATE = "[\ud800-\udfff]"


def _plain(s: str) -> bool:
    """``s`` is ASCII without a control character: none of the classes above matches it."""
    return s.isascii() and s.isprintable()


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    if 0xDC80 <= c <= 0xDCFF:  # an undecodable byte of a file name (surrogateescape)
        return f"\\x{c - 0xDC00:02x}"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def shown(s: object) -> str:
    """``s`` as text safe for a terminal: control, bidi and undecodable characters escaped."""
    s = s if isinstance(s, str) else str(s)
    return s if _plain(s) or re.search(_UNSAFE, s) is None else re.sub(_UNSAFE, _escape, s)


def utf8(s: str) -> str:
    """``s`` with undecodable bytes (lone surrogates) replaced by U+FFFD: encodable as UTF-8."""
    return s if s.isascii() or re.search(_SURROGATE, s) is None else re.sub(_SURROGATE, "\ufffd", s)


# an escaped low surrogate of an undecodable byte (U+DC80-U+DCFF) in ``json.dumps`` output (which
# escapes every non-ASCII character), after an even number of backslashes and not the second half
# of a surrogate pair
_JSON_LONE = re.compile(r"(?<!\\ud[89ab][0-9a-f]{2})(?<!\\)((?:\\\\)*)\\udc[89a-f][0-9a-f]")


def utf8_json(text: str) -> str:
    """JSON text (``ensure_ascii``) with every undecodable-byte escape replaced by U+FFFD: no
    strict decoder meets a lone surrogate. Costs one substring search when there is none."""
    if "\\udc" not in text:
        return text
    return _JSON_LONE.sub(lambda m: m.group(1) + "\\ufffd", text)


def hex_if_not_utf8(s: str) -> str | None:
    """The bytes of a file name that is not valid UTF-8, as hex; None when it is valid."""
    if s.isascii() or re.search(_SURROGATE, s) is None:
        return None
    try:
        return s.encode("utf-8", "surrogateescape").hex()  # the bytes os.fsdecode made the name from
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass").hex()


def _shown_in_rich(s: str) -> str:
    if _plain(s.replace("\n", " ")) or re.search(_UNSAFE_IN_RICH, s) is None:
        return s
    return re.sub(_UNSAFE_IN_RICH, _escape, s)


def safe_text(t: Text, keep_lf: bool = False) -> Text:
    """A copy of ``t`` whose plain text went through ``shown``, its styles kept on the same
    characters; ``keep_lf``: LF stays a line break (a column header the renderer wrapped)."""
    from rich.text import Span, Text

    plain = t.plain
    esc = _shown_in_rich if keep_lf else shown
    if esc(plain) == plain:  # (the same string when nothing is escaped)
        return t
    where = [0]  # where each old character starts in the new text
    out = []
    for ch in plain:
        e = esc(ch)
        out.append(e)
        where.append(where[-1] + len(e))
    new = Text(
        "".join(out), style=t.style, justify=t.justify, overflow=t.overflow, no_wrap=t.no_wrap, end=t.end
    )
    new.spans[:] = [Span(where[s.start], where[min(s.end, len(plain))], s.style) for s in t.spans]
    return new


def safe(renderable: RenderableType) -> RenderableType:
    """``renderable`` with every string and ``Text`` in it (table cells too) escaped by ``shown``;
    column headers keep their LF (the renderers wrap them, e.g. the check matrix's targets)."""
    from rich.table import Table
    from rich.text import Text

    if isinstance(renderable, str):
        return shown(renderable)
    if _Shown is not None and type(renderable) is _Shown:  # (``text``: escaped when made)
        return renderable
    if isinstance(renderable, Text):
        return safe_text(renderable)
    if isinstance(renderable, Table):
        for col in renderable.columns:
            col._cells[:] = [safe(c) for c in col._cells]
            h = col.header
            col.header = (
                _shown_in_rich(h) if isinstance(h, str) else safe_text(h, True) if isinstance(h, Text) else h
            )
        return renderable
    laid_out = getattr(renderable, "text", None)
    if isinstance(laid_out, Text):  # console.Hanging (not imported: console imports this module)
        setattr(renderable, "text", safe_text(laid_out))  # noqa: B010 (an attribute mypy cannot see)
    return renderable


def text(s: str, style: str = "") -> Text:
    """A rich ``Text`` of input-derived ``s`` (a name, a path, a message), escaped by ``shown``
    first: ``Text`` itself drops BEL, BS, VT, FF and CR, which every other format shows
    (``\\x07``), and ``safe`` cannot give back what it dropped. ``safe`` passes it as it is
    (its text was escaped here: not searched twice per kernel line)."""
    global _Shown
    if _Shown is None:
        from rich.text import Text

        class Shown(Text):
            """A ``Text`` made by ``text``: escaped already."""

        _Shown = Shown
    return _Shown(shown(s), style=style)


_Shown: type[Text] | None = None  # (made at the first ``text``: rich is not imported before)
