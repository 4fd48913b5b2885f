"""Findings formats: one module per ``--format``, each with the same ``render(report, fail_on, color)``.

``FORMATS`` is the registry: the ``--format`` choices of ``gate``, ``check`` and ``diff`` derive from
it (``check`` and ``diff`` draw their own ``table``/``json``/``markdown`` and fall back here for the
rest). Modules are imported on first use, so a command pays only for the format it writes. A format
that also writes a CI job summary (``github``) has ``job_summary(report, fail_on)``.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Protocol

from fatbin_inspect.release.findings import FindingsReport

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
