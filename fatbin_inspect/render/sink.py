"""Where a view writes (``Sink``, the CLI's ``cli.common.Output``) and what a table knows of it
(``Look``): below the views and the findings formats, which both write to one."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import IO, NamedTuple, Protocol


class Look(NamedTuple):
    """What a table needs to know of its destination (documents ignore it)."""

    color: bool
    width: int | None


class Sink(Protocol):
    """Where a view writes (``cli.common.Output``)."""

    @property
    def look(self) -> Look: ...

    def text(self, text: str) -> None:
        """The whole report, written at once (atomically into a file)."""

    def stream(self) -> contextlib.AbstractContextManager[IO[bytes]]:
        """A binary stream the report is written to as it comes."""

    def refuse(self, paths: Iterable[str]) -> None:
        """More paths the output may not be (files named in the report)."""

    def summary(self, text: str) -> None:
        """The CI job summary (``$GITHUB_STEP_SUMMARY``), where one is kept."""
