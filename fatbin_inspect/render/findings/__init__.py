"""Findings formats: one module per ``--format``, each with the same ``render(report, fail_on, color)``.

``FORMATS`` is the registry: ``render.VIEWS`` gives ``gate``, ``check`` and ``diff`` a findings view
of each (``check`` and ``diff`` draw their own ``table``/``json``/``markdown``). Modules are
imported on first use, so a command pays only for the format it writes. A format that can stream
has ``write(report, fail_on, out)``; one that also writes a CI job summary (``github``) has
``job_summary(report, fail_on)``.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # (the registry is read by every command's --format; the records only here)
    from fatbin_inspect.release.findings import FindingsReport
    from fatbin_inspect.render.sink import Sink

# name -> module under render/findings; the order is the order of the --format choices
FORMATS: dict[str, str] = {
    "table": "table",
    "json": "json",
    "jsonl": "jsonl",
    "sarif": "sarif",
    "junit": "junit",
    "github": "github",
    "markdown": "markdown",
    "gitlab": "gitlab",
    "html": "html",
}


class Renderer(Protocol):
    def __call__(
        self, report: FindingsReport, fail_on: str = "error", color: bool = False, width: int | None = None
    ) -> str: ...


def module(fmt: str) -> ModuleType:
    """The module that renders ``fmt`` (a key of ``FORMATS``)."""
    return importlib.import_module(f"{__name__}.{FORMATS[fmt]}")


def render(
    report: FindingsReport, fmt: str, fail_on: str = "error", color: bool = False, width: int | None = None
) -> tuple[str, str | None]:
    """(the document for the output, the job summary or None). ``width`` reaches the formats
    drawn for a terminal (``TERMINAL = True`` in their module); documents ignore it."""
    mod = module(fmt)
    draw: Renderer = mod.render
    summary = getattr(mod, "job_summary", None)
    text = (
        draw(report, fail_on, color, width=width)
        if getattr(mod, "TERMINAL", False)
        else draw(report, fail_on, color)
    )
    return text, summary(report, fail_on) if summary else None


def write(report: FindingsReport, fmt: str, fail_on: str, sink: Sink) -> None:
    """``report`` in ``fmt`` to ``sink`` (never one of the report's artifacts), streamed where the
    format can, and its job summary (``github``) to ``sink.summary``."""
    sink.refuse(c.path for c in report.checks)
    mod = module(fmt)
    stream = getattr(mod, "write", None)
    if stream is not None:
        with sink.stream() as out:
            stream(report, fail_on, out)
        job = getattr(mod, "job_summary", None)
        summary = job(report, fail_on) if job else None
    else:
        text, summary = render(report, fmt, fail_on, *sink.look)
        sink.text(text)
    if summary is not None:
        sink.summary(summary + "\n")
