"""Renderers: pure functions from records to text. Only they (and the CLI that calls them) produce
user-facing text; machine formats write nothing but their document to stdout.

One naming scheme: ``<command>_<format>.py`` (``check_table``, ``check_json``, ``scan_table``,
``scan_json``, ``inventory_table``, ``inventory_json``, ``diff_markdown``, ``explain_text`` ...) for
the views of one command, and ``findings/<format>.py`` for the findings formats that ``gate``,
``check`` and ``diff`` share, behind the registry in ``findings/__init__.py``. Two helpers are no
view of their own: ``console`` (rich to text, colour, widths) and ``jsondump`` (JSON serialisation).

``VIEWS`` is the one table a command asks for its renderer (``view(command, format)``); the views
of one command take the same arguments (the command's records, then ``color`` and ``width``,
which documents ignore). A format a command draws as findings (``gate``; ``check`` and ``diff``
for everything but their own views) is not in it (``has_view`` is False): the command hands its
``FindingsReport`` to ``render.findings``. The JSON of ``list``, ``check`` and ``scan`` is not a
view either: the commands stream it record by record (``jsondump.write`` of ``Items``), with the
documents of ``inventory_json``, ``check_json`` and ``scan_json``. Modules are imported on first
use, so a command pays only for the format it writes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

# command -> --format (or view name) -> "module:function" under render/
VIEWS: dict[str, dict[str, str]] = {
    # (reports, entries="auto", kernels=False, color, width)
    "list": {"table": "inventory_table:render_inventory"},
    # (targets, verdicts, kernels=False, cache=..., color, width); "long": one block per file and target
    "check": {"table": "check_matrix:render_matrix", "long": "check_table:render_check"},
    # (coverage, summary, color, files, target_sms, headers, width, verdicts_only, images, layers)
    "scan": {"table": "scan_table:render_coverage"},
    # (diff, findings report, fail_on, color, width)
    "diff": {
        "table": "diff_table:render_diff_table",
        "markdown": "diff_markdown:render_diff_markdown",
        "json": "diff_json:render_diff_json",
    },
    # (stack, diagnosis, color, width)
    "doctor": {"table": "doctor_table:render_doctor", "json": "doctor_json:render_doctor_json"},
    # (GPU rows of the data, color, width)
    "gpus": {"table": "gpus_table:render_gpus", "json": "gpus_json:render_gpus_json"},
    # (explanation, color, width)
    "explain": {"table": "explain_text:explanation_text", "json": "explain_json:render_explanation_json"},
    # (releases report, color, width)
    "releases": {
        "table": "releases_table:render_releases",
        "json": "releases_json:render_releases_json",
        "markdown": "releases_markdown:render_releases_markdown",
        "html": "releases_html:render_releases_html",
    },
    # (target label, image checks, findings, color, images=True, width, files=None)
    "verify": {"table": "verify_table:render_verify", "json": "verify_json:render_verify_json"},
}


def has_view(command: str, fmt: str) -> bool:
    """``command`` draws ``fmt`` itself (False: as findings, ``render.findings.render``)."""
    return fmt in VIEWS.get(command, {})


def view(command: str, fmt: str) -> Callable[..., str]:
    """The function that draws ``command``'s ``fmt`` (a pair not in ``VIEWS`` is a programming
    error: a findings format, or none at all)."""
    spec = VIEWS.get(command, {}).get(fmt)
    if spec is None:
        raise ValueError(f"no view {fmt!r} of {command!r} (findings formats: render.findings)")
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
