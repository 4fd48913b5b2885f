"""The path form of archive members: ``CONTAINER!MEMBER[!MEMBER...]``, unambiguous.

A ``!`` that belongs to a name (a real file ``a!b.whl``, a member ``x!y.so``) is written ``\\!``,
and a run of backslashes right before a ``!`` or at the end of a name is doubled, as Windows
command lines quote ``"``: a ``!`` after an even number of backslashes (none included) separates
two names, after an odd number it is part of the name. Names with neither a ``!`` nor a trailing
backslash (all real ones) are written unchanged, so ``dist/x.whl!pkg/lib.so`` reads as before.
"""

from __future__ import annotations

import re

_BEFORE_BANG = re.compile(r"(\\*)!")
_TRAILING = re.compile(r"(\\+)$")


def escape(name: str) -> str:
    """One name (a real path or a member name) in path form."""
    if "!" not in name and not name.endswith("\\"):
        return name
    name = _BEFORE_BANG.sub(lambda m: m.group(1) * 2 + "\\!", name)
    return _TRAILING.sub(lambda m: m.group(1) * 2, name)


def join(parent: str, member: str) -> str:
    """The path of ``member`` (a raw member name) inside ``parent`` (already in path form)."""
    return f"{parent}!{escape(member)}"


def split(path: str) -> list[str]:
    """``path`` in path form -> the raw names: ``[container, member, member-in-member, ...]``."""
    if "!" not in path and not path.endswith("\\"):
        return [path]
    parts, cur, i, n = [], [], 0, len(path)
    while i < n:
        j = i
        while j < n and path[j] == "\\":
            j += 1
        run = j - i
        if j < n and path[j] == "!":
            cur.append("\\" * (run // 2))
            if run % 2:
                cur.append("!")
            else:
                parts.append("".join(cur))
                cur = []
            i = j + 1
        elif j == n:
            cur.append("\\" * (run // 2))
            i = j
        else:
            cur.append(path[i : j + 1])
            i = j + 1
    parts.append("".join(cur))
    return parts


def container(path: str) -> str:
    """The file on disk a record path names (its outermost container)."""
    return split(path)[0]


def is_member(path: str) -> bool:
    """Whether ``path`` names an archive member rather than a file on disk."""
    return "!" in path and len(split(path)) > 1


def outermost(path: str) -> str:
    """The outermost container of ``path``, still in path form (``a\\!b.whl!m.so`` -> ``a\\!b.whl``)."""
    return escape(container(path))
