"""What every command shares: output destination, colour, the one-line error handler."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING

import click

from fatbin_inspect.cli.options import format_option as format_option  # the shared options
from fatbin_inspect.cli.options import output_option as output_option
from fatbin_inspect.cli.options import settings
from fatbin_inspect.formats.model import FileReport

if TYPE_CHECKING:
    from fatbin_inspect.cli.progress import Progress
    from fatbin_inspect.inventory.opened import Record
    from fatbin_inspect.render.sink import Look
    from fatbin_inspect.render.views import View

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_STRICT = 0, 1, 2, 3
MAX_COLUMNS = 1000  # the widest report COLUMNS asks for
EXIT_NO_DEVICE = 4  # doctor/verify: no NVIDIA driver, GPU or cuda-python where one is needed


def say(line: str) -> None:
    """One line on stderr, input-derived text escaped (``render.escape.shown``): never a
    terminal escape, never a second line forged with CR/LF."""
    from fatbin_inspect.render.escape import shown

    click.echo(f"fatbin-inspect: {shown(line)}", err=True)


def read_exit(named: Iterable[str], errors: Iterable[Record], strict: bool) -> int:
    """The exit code of what was read: 2 (a missing path's) when an input named on the command
    line could not be opened at all (``inventory.opened.unopened``), 3 under ``strict`` when any
    record is an error, else 0."""
    errors = [r for r in errors if r.error is not None]
    if not errors:  # (a clean run imports nothing more)
        return EXIT_OK
    from fatbin_inspect.inventory.opened import unopened

    if unopened(named, errors):
        return EXIT_USAGE
    return EXIT_STRICT if strict and errors else EXIT_OK


def note_error(report: FileReport) -> None:
    """One line on stderr per unreadable input, naming the file and offset."""
    if report.error is None:
        return
    where = f" at offset {report.error.offset:#x}" if report.error.offset is not None else ""
    say(f"{report.path}{where}: {report.error.message}")


def open_output(
    output: str | None, inputs: Iterable[str] = ()
) -> contextlib.AbstractContextManager[IO[bytes]]:
    """The report's destination as a binary stream a streaming writer writes to as it goes;
    never one of ``inputs``, renamed into place when complete (``cli.outfile``)."""
    from fatbin_inspect.cli.outfile import open_report

    return open_report(output, inputs)


def write_output(text: str, output: str | None, inputs: Iterable[str] = ()) -> None:
    """The report to ``output`` (stdout when None or ``-``); refused when ``output`` is one of
    ``inputs`` (paths given and record paths), written atomically (``cli.outfile``)."""
    from fatbin_inspect.cli.outfile import write_report

    write_report(text, output, inputs)


def color_for(output: str | None) -> bool:
    """Colour for the report: never into a file; --color, NO_COLOR, FORCE_COLOR, then the terminal."""
    from fatbin_inspect.render.console import want_color

    if output and output != "-":
        return False
    return want_color(sys.stdout.isatty(), settings()["color"])


def width_for(output: str | None) -> int | None:
    """Columns for the report: ``COLUMNS`` when set, else the terminal's; ``None`` (no wrapping:
    one record a line) into a pipe or a file. There is no floor: 60 columns get 60."""
    if output and output != "-":
        return None
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and 0 < len(cols) <= 6 and int(cols) > 0:  # a count from the environment:
        return min(int(cols), MAX_COLUMNS)  # bounded (a 5,000-digit value is no integer for int())
    try:
        if sys.stdout.isatty():
            return os.get_terminal_size(sys.stdout.fileno()).columns or None
    except (OSError, ValueError, AttributeError):
        pass
    return None


def progress_for(view: View, label: str) -> Progress:
    """A ``Progress`` callback for a view that shows one (a table, the HTML report: machine
    formats never draw one), honouring -q and --no-progress; it still draws only on a terminal
    (``cli.progress``)."""
    from fatbin_inspect.cli.progress import Progress

    ui = settings()
    on = None if (view.needs.progress and ui["progress"] and not ui["quiet"]) else False
    return Progress(enabled=on, label=label)


class Output:
    """Where a view writes (``render.views.Sink``): ``-o FILE`` (stdout when None or ``-``),
    never one of ``inputs`` (a list the command may still be filling as it reads: checked when
    the output is opened and again before it is renamed into place)."""

    def __init__(self, path: str | None, inputs: list[str] | None = None):
        self.path = path
        self.inputs: list[str] = inputs if inputs is not None else []

    @property
    def look(self) -> Look:
        from fatbin_inspect.render.sink import Look

        return Look(color_for(self.path), width_for(self.path))

    def text(self, text: str) -> None:
        write_output(text, self.path, self.inputs)

    def stream(self) -> contextlib.AbstractContextManager[IO[bytes]]:
        return open_output(self.path, self.inputs)

    def refuse(self, paths: Iterable[str]) -> None:
        self.inputs.extend(paths)

    def summary(self, text: str) -> None:
        """Appended to ``$GITHUB_STEP_SUMMARY`` when it is set (``cli.outfile.append_summary``)."""
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary:
            from fatbin_inspect.cli.outfile import append_summary

            append_summary(step_summary, text)
