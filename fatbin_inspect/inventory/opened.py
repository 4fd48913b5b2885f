"""Inputs named on the command line that could not be opened at all: nothing was read from them,
so no answer about them is a success (the exit code of a missing path, 2)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

from fatbin_inspect.containers.index import is_purl
from fatbin_inspect.formats.model import FileError
from fatbin_inspect.inventory.walk import image_ref


class Record(Protocol):
    """A record or its summary (``FileReport``, ``scanning.coverage.FileSummary``)."""

    @property
    def path(self) -> str: ...
    @property
    def format(self) -> str: ...
    @property
    def error(self) -> FileError | None: ...
    @property
    def fatbins(self) -> Any: ...  # the fatbins, or their count


R = TypeVar("R", bound=Record)


def unopened(named: Iterable[str], errors: Iterable[R]) -> list[R]:
    """The records of ``errors`` that stand for a whole image input of ``named`` left unread: the
    input's own record (its path as named) with an error and no fatbins, the input being an
    image (a registry reference, ``DIR:TAG``, an image archive or layout, ``-``): an unreachable
    registry, an unknown repository or tag, a denied login, no image for ``--platform``, a
    manifest that does not parse, standard input closed, a device or empty; or a package on an
    index (``pkg:pypi/...``: no such project, release or wheel, the index unreachable). A file
    that opened but does not parse (a truncated ELF) was read: ``--strict``'s exit 3, not this."""
    names = set(named)
    return [
        r
        for r in errors
        if r.error is not None
        and r.path in names
        and not r.fatbins
        and (r.format == "oci" or image_ref(r.path) is not None or is_purl(r.path))
    ]
