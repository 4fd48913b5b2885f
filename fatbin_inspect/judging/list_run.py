"""The listing run (``list``): the records under the inputs, read as the view takes them or all
at once, each unreadable one told and remembered, and with targets their verdicts."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.judging.inputs import iter_pieces, iter_reports
from fatbin_inspect.judging.needs import Needs

if TYPE_CHECKING:  # the engine is imported only when there are targets (not by a plain listing)
    from fatbin_inspect.compat.engine import FileVerdict
    from fatbin_inspect.compat.targets import Target


def _quiet(report: FileReport) -> None:
    pass


class ListRun:
    """A listing under way. A plain class, not a dataclass: it is made by every listing, and
    creating a dataclass compiles each of its generated methods at start-up."""

    __slots__ = ("errors", "note", "opts", "paths", "read", "seen", "targets", "verdicts")

    def __init__(
        self,
        paths: tuple[str, ...],
        opts: Options,
        targets: tuple[Target, ...] = (),
        note: Callable[[FileReport], None] = _quiet,
        seen: list[str] | None = None,
    ) -> None:
        self.paths, self.opts, self.targets = paths, opts, targets
        self.note = note  # told of every unreadable record (stderr)
        self.seen: list[str] = [] if seen is None else seen  # every record's path, as read
        self.read: list[FileReport] | None = None  # every record, when read at once (no streamed view)
        self.errors: list[FileReport] = []  # the records of inputs that could not be read (exit code)
        self.verdicts: list[FileVerdict] = []  # ``judged``'s

    def see(self, r: FileReport) -> None:
        """Count ``r`` in: its path, and an error told and remembered."""
        self.seen.append(r.path)
        if r.error is not None:
            self.note(r)
            self.errors.append(r)

    def _seen(self, reports: Iterable[FileReport]) -> Iterator[FileReport]:
        for r in reports:
            self.see(r)
            yield r

    def reports(self) -> Iterator[FileReport]:
        """Every record, in order (read now, unless read already)."""
        if self.read is not None:
            return iter(self.read)
        return self._seen(iter_reports(self.paths, self.opts))

    def judged(self) -> Iterator[FileReport]:
        """``reports()``, each record's verdicts on ``targets`` added to ``verdicts`` as it passes."""
        if not self.targets:
            yield from self.reports()
            return
        from fatbin_inspect.judging.verdicts import WheelRuntimes, judge

        wheels = WheelRuntimes()
        for r in self.reports():
            self.verdicts.extend(judge(r, self.targets, wheels))
            yield r

    def pieces(
        self, file_pieces: Callable[..., Iterator[bytes]], fatbins_fragment: Callable[..., Any]
    ) -> Iterator[Iterator[bytes]]:
        """The encoded records, in pieces made where they are decoded (``inputs.iter_pieces``)."""
        return iter_pieces(self.paths, self.opts, file_pieces, fatbins_fragment, self.see)


def run_list(
    paths: Sequence[str],
    opts: Options,
    targets: Sequence[Target],
    needs: Needs,
    note: Callable[[FileReport], None] = _quiet,
    progress: Any = None,
    seen: list[str] | None = None,
) -> ListRun:
    """The listing of ``paths`` for a view with ``needs``: read now unless the view streams the
    records (then they are read as it writes); ``progress`` only where the view shows one (with a
    callback the trees are walked first, to count the files); ``seen`` gets every record's path."""
    opts = dataclasses.replace(opts, digests=needs.digests)
    run = ListRun(tuple(paths), opts, tuple(targets), note, seen)
    if not needs.streamed:
        run.read = list(run._seen(iter_reports(paths, opts, progress if needs.progress else None)))
    return run
