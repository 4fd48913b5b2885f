"""Package URLs of PyPI releases: ``pkg:pypi/NAME`` (the newest) and ``pkg:pypi/NAME@VERSION``.

The purl form (github.com/package-url/purl-spec) CycloneDX components already carry. The name
and version are percent-decoded; qualifiers (``?...``) and a subpath (``#...``) name nothing a
release choice uses and are refused rather than ignored.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fatbin_inspect.containers.index import PREFIX, REQUIREMENT_PREFIX, is_index_input, is_purl
from fatbin_inspect.containers.wheel import canonicalize_name
from fatbin_inspect.errors import UsageError

if TYPE_CHECKING:
    from fatbin_inspect.containers.index.pages import DistFile

__all__ = ["PREFIX", "REQUIREMENT_PREFIX", "Release", "is_index_input", "is_purl", "parse"]

_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.I)  # PEP 508 names


@dataclass(frozen=True)
class Release:
    """A release asked for: the project (canonical name) and an exact version, else the newest
    that ``specifier`` allows; ``hashes``: the sha256 digests a requirements file allows (empty:
    any); ``marker``: its PEP 508 environment marker (judged per target); ``files``: the exact
    files a lock file names (then the index is not asked); ``origin``: where it was asked for
    (the purl, ``FILE:LINE``), for messages."""

    name: str
    version: str | None
    origin: str
    hashes: frozenset[str] = frozenset()
    specifier: str = ""
    marker: str | None = None
    files: tuple[DistFile, ...] = ()


def parse(text: str) -> Release:
    """``pkg:pypi/NAME[@VERSION]`` as a ``Release``; a malformed one is a usage error naming it."""
    if not is_purl(text):
        raise UsageError(f"{text}: not a PyPI package URL (expected pkg:pypi/NAME or pkg:pypi/NAME@VERSION)")
    body = text[len(PREFIX) :]
    if "?" in body or "#" in body:
        raise UsageError(f"{text}: qualifiers and subpaths are not taken (use pkg:pypi/NAME@VERSION)")
    name, at, version = body.partition("@")
    name, version = urllib.parse.unquote(name), urllib.parse.unquote(version)
    if not _NAME.match(name) or "/" in name:
        raise UsageError(f"{text}: {name!r} is no valid package name")
    if at and not version.strip():
        raise UsageError(f"{text}: the version after @ is empty")
    return Release(canonicalize_name(name), version.strip() or None, text)
