"""The one place that draws progress: on stderr, only when it is a terminal, only after a moment.

Library code never draws; it calls a ``(done, seen, bytes)`` callback. ``Progress`` is that
callback for the CLI. It stays silent for the first ``DELAY`` seconds (a warm scan finishes before
anything is drawn), redraws at most ``REFRESH`` times a second from the calling thread (no thread
of its own, so a forked worker pool is never started beside a running thread), and erases itself
when closed. ``FATBIN_INSPECT_PROGRESS=0`` turns it off, ``=1`` on even without a terminal.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

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


class Progress:
    def __init__(
        self,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        delay: float = DELAY,
        label: str = "scanning",
    ):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = wanted(self.stream) if enabled is None else enabled
        self.delay = delay
        self.label = label
        self.start = time.monotonic()
        self._last = 0.0
        self._progress: Any = None  # a rich Progress once drawing starts (rich imported then)
        self._task: Any = None

    def __call__(self, done: int, seen: int, nbytes: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.delay or now - self._last < 1 / REFRESH:
            return
        self._last = now
        if self._progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            console = Console(file=self.stream, force_terminal=True, highlight=False)
            self._progress = RichProgress(
                TextColumn(self.label),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[size]}"),
                TimeElapsedColumn(),
                console=console,
                transient=True,
                auto_refresh=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=seen, size="")
        from fatbin_inspect.render.console import human  # rich is imported only once drawing starts

        self._progress.update(self._task, completed=done, total=max(seen, done), size=human(nbytes))
        self._progress.refresh()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
