"""What every command shares: output destination, colour, the one-line error handler."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import IO

import click

from fatbin_inspect.formats.model import FileReport

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_STRICT = 0, 1, 2, 3
EXIT_NO_DEVICE = 4  # doctor/verify: no NVIDIA driver, GPU or cuda-python where one is needed


def note_error(report: FileReport) -> None:
    """One line on stderr per unreadable input, naming the file and offset."""
    if report.error is None:
        return
    where = f" at offset {report.error.offset:#x}" if report.error.offset is not None else ""
    click.echo(f"fatbin-inspect: {report.path}{where}: {report.error.message}", err=True)


@contextlib.contextmanager
def open_output(output: str | None) -> Iterator[IO[bytes]]:
    """The report's destination as a binary stream a streaming writer writes to as it goes."""
    if output and output != "-":
        with open(output, "wb") as fh:
            yield fh
    else:
        out = sys.stdout.buffer
        try:
            yield out
        finally:
            out.flush()


def write_output(text: str, output: str | None) -> None:
    if output and output != "-":
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def color_for(output: str | None) -> bool:
    from fatbin_inspect.render.console import want_color

    if output and output != "-":
        return False
    return want_color(sys.stdout.isatty())


def format_option(choices, default="table"):
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=default,
        show_default=True,
        envvar="FATBIN_INSPECT_FORMAT",
        help="Output format (env FATBIN_INSPECT_FORMAT).",
    )


output_option = click.option(
    "--output",
    "-o",
    "output",
    default=None,
    envvar="FATBIN_INSPECT_OUTPUT",
    help="Write the report to FILE instead of stdout (env FATBIN_INSPECT_OUTPUT).",
)
