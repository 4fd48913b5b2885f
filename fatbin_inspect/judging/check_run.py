"""The check run: verdicts per file and target as the records are judged (``judge_paths``),
taken as the view writes them or all at once, and whether one fails at the ``--fail-on`` level."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from fatbin_inspect.compat import jit
from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.judging import FAILING
from fatbin_inspect.judging.needs import Needs
from fatbin_inspect.judging.verdicts import judge_paths

if TYPE_CHECKING:
    from fatbin_inspect.compat.engine import FileVerdict
    from fatbin_inspect.compat.targets import Target


@dataclasses.dataclass
class CheckRun:
    paths: tuple[str, ...]
    targets: tuple[Target, ...]
    judged: Iterable[FileVerdict]  # as judged (a streamed view), else all of them
    fail_on: str
    cache: jit.CacheSettings = jit.DEFAULT_CACHE  # the deployment's JIT cache (does the JIT repeat?)
    unreadable: list[FileReport] = dataclasses.field(default_factory=list)  # filled as read
    kept: list[FileReport] | None = None  # the judged records (``Needs.kept``), filled as read
    failed: bool = False  # a verdict taken so far fails at ``fail_on``

    def verdicts(self) -> Iterator[FileVerdict]:
        """The verdicts, each noted in ``failed`` as it is taken."""
        bad = FAILING[self.fail_on]
        for v in self.judged:
            if v.verdict in bad:
                self.failed = True
            yield v


def run_check(
    paths: Sequence[str],
    targets: Sequence[Target],
    opts: Options,
    needs: Needs,
    fail_on: str,
    cache: jit.CacheSettings = jit.DEFAULT_CACHE,
    note: Callable[[FileReport], None] | None = None,
    progress: Any = None,
    seen: list[str] | None = None,
) -> CheckRun:
    """Judge ``paths`` on ``targets`` for a view with ``needs``: now (with ``progress``), unless
    the view streams the verdicts (then they are judged as it writes them)."""
    unreadable: list[FileReport] = []
    kept: list[FileReport] | None = [] if needs.kept else None
    judged: Iterable[FileVerdict] = judge_paths(
        paths, targets, unreadable, opts, kept, note=note, progress=progress, seen=seen
    )
    if not needs.streamed:
        judged = list(judged)
    return CheckRun(tuple(paths), tuple(targets), judged, fail_on, cache, unreadable, kept)
