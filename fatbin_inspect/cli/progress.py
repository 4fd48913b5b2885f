"""The one place that draws progress: on stderr, only when it is a terminal, only after a moment.

Library code never draws; it calls a ``(done, seen, bytes)`` callback. ``Progress`` is that
callback for the CLI. It stays silent for the first ``DELAY`` seconds (a warm scan finishes before
anything is drawn), redraws at most ``REFRESH`` times a second from the calling thread (no thread
of its own, so a forked worker pool is never started beside a running thread), and erases itself
when closed. ``FATBIN_INSPECT_PROGRESS=0`` turns it off, ``=1`` on even without a terminal.

``Progress`` counts files (a scan's ``(done, seen, bytes)``); ``Transfer`` counts the bytes of a
download (an index's wheel ranges, a registry's layers): ``(done, total)``, total None when the
server did not say, drawn as bytes, rate and time left.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO, TypeVar

DELAY = 0.5
REFRESH = 10


def wanted(stream: TextIO) -> bool:
    env = os.environ.get("FATBIN_INSPECT_PROGRESS")
    if env in ("0", "1"):
        return env == "1"
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


_B = TypeVar("_B", bound="_Bar")  # (typing.Self is 3.11+)


class _Bar:
    """What both bars share: the gate (enabled, after ``delay``, at most ``REFRESH`` draws a
    second) and a rich ``Progress`` made on the first draw (rich is imported only then)."""

    def __init__(self, stream: TextIO | None, enabled: bool | None, delay: float, label: str):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = wanted(self.stream) if enabled is None else enabled
        self.delay = delay
        self.label = label
        self.start = time.monotonic()
        self._last = 0.0
        self._progress: Any = None  # a rich Progress once drawing starts
        self._task: Any = None

    def _due(self) -> bool:
        if not self.enabled:
            return False
        now = time.monotonic()
        if now - self.start < self.delay or now - self._last < 1 / REFRESH:
            return False
        self._last = now
        return True

    def _columns(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def _draw(self, completed: int, total: int | None, **fields: str) -> None:
        if self._progress is None:
            from rich.console import Console
            from rich.progress import Progress as RichProgress

            console = Console(file=self.stream, force_terminal=True, highlight=False)
            self._progress = RichProgress(
                *self._columns(), console=console, transient=True, auto_refresh=False
            )
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=total, **fields)
        self._progress.update(self._task, completed=completed, total=total, **fields)
        self._progress.refresh()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self: _B) -> _B:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Progress(_Bar):
    """Files of a scan: ``(done, seen, bytes)``."""

    def __init__(
        self,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        delay: float = DELAY,
        label: str = "scanning",
    ):
        super().__init__(stream, enabled, delay, label)

    def _columns(self) -> tuple[Any, ...]:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

        return (
            TextColumn(self.label),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[size]}"),
            TimeElapsedColumn(),
        )

    def __call__(self, done: int, seen: int, nbytes: int) -> None:
        if self._due():
            from fatbin_inspect.render.console import human

            self._draw(done, max(seen, done), size=human(nbytes))


class Transfer(_Bar):
    """Bytes of a download: ``(done, total)``, drawn with the rate and the time left."""

    def __init__(
        self, label: str, stream: TextIO | None = None, enabled: bool | None = None, delay: float = DELAY
    ):
        super().__init__(stream, enabled, delay, label)

    def _columns(self) -> tuple[Any, ...]:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        return (
            TextColumn(self.label),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
        )

    def __call__(self, done: int, total: int | None) -> None:
        if self._due():
            self._draw(done, total)
