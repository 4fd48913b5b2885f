"""Renderers: pure functions from records to text. Only they (and the CLI that calls them) produce
user-facing text; machine formats write nothing but their document to stdout.

``VIEWS`` is the one table of outputs: a ``views.View`` per command and ``--format``, findings
formats and CycloneDX included. A command's ``--format`` choices are its keys (``formats``), in
order; the command does ``view = render.view(command, fmt)``, hands ``view.needs`` to its library
call, then ``view.write(run, sink, shown)``. Adding a format is its module and one line here.

One naming scheme: ``<command>_<format>.py`` (``check_table``, ``check_json``, ``scan_table`` ...)
for the drawing of one command's format, ``<command>_views.py`` for the writers that run a
command's views over its run record (``list_views``, ``check_views``, ``scan_views``,
``cyclonedx_views``), ``findings/<format>.py`` for the findings formats that ``gate``, ``check``,
``diff`` and ``scan --format html`` share (``findings.FORMATS``). Helpers that are no view:
``console`` (rich to text), ``json_encode`` (JSON text), ``jsondump`` (streamed documents) and
``record_json`` (records as JSON).
"""

from __future__ import annotations

from fatbin_inspect.judging.needs import Needs
from fatbin_inspect.render.findings import FORMATS as FINDINGS
from fatbin_inspect.render.views import View

_SHOWN = Needs(progress=True)  # a table (or the HTML report): progress while the run reads
_SBOM_LIB = (
    "cyclonedx.output.json",
    "--format cyclonedx needs cyclonedx-python-lib: pip install 'fatbin-inspect[sbom]'",
)


def _sbom(command: str) -> View:
    return View(
        command, "cyclonedx", f"cyclonedx_views:write_{command}", Needs(digests=True), requires=_SBOM_LIB
    )


def _text(command: str, fmt: str, writer: str, needs: Needs = Needs()) -> View:
    return View(command, fmt, writer, needs, kind="text")


def _findings(command: str, writer: str, *own: View) -> dict[str, View]:
    """A view of every findings format (in ``findings.FORMATS`` order); ``own``: the ones the
    command draws itself."""
    mine = {v.name: v for v in own}
    return {
        fmt: mine.get(fmt)
        or View(
            command,
            fmt,
            writer,
            Needs(kept=fmt == "html", progress=fmt in ("table", "html")),
            kind="findings",
        )
        for fmt in FINDINGS
    }


def _table(*views: View) -> dict[str, View]:
    return {v.name: v for v in views}


def _table_json(command: str, table: str, json: str) -> dict[str, View]:
    """A table and a JSON document, each a pure drawing of the same fields."""
    return _table(_text(command, "table", table), _text(command, "json", json))


# command -> --format -> its View; each command's comment: the run its writers take (then the
# sink and, for the command's own views, what the table is asked to show besides)
VIEWS: dict[str, dict[str, View]] = {
    # judging.list_run.ListRun, list_views.Shown
    "list": _table(
        View("list", "table", "list_views:write_table", _SHOWN),
        View("list", "json", "list_views:write_json", Needs(streamed=True)),
        View("list", "jsonl", "list_views:write_jsonl", Needs(streamed=True)),
        _sbom("list"),
    ),
    # judging.check_run.CheckRun, check_views.Shown
    "check": _findings(
        "check",
        "check_views:findings_report",
        View("check", "table", "check_views:write_table", _SHOWN),
        View("check", "json", "check_views:write_json", Needs(streamed=True)),
    ),
    # judging.scan_run.ScanRun, scan_views.Shown
    "scan": _table(
        View("scan", "table", "scan_views:write_table", Needs(records=False, progress=True)),
        View("scan", "json", "scan_views:write_json", Needs(records=False), encoder="scan_json:file_rest"),
        View("scan", "html", "scan_views:write_html", Needs(kept=True, progress=True)),
        _sbom("scan"),
    ),
    # judging.gate_run.GateRun
    "gate": {**_findings("gate", "findings_views:gate_report"), "cyclonedx": _sbom("gate")},
    # {d, report, fail_on} (release.diff): its own table, json and markdown, the rest as findings
    "diff": _findings(
        "diff",
        "findings_views:diff_report",
        _text("diff", "table", "diff_table:render_diff_table", _SHOWN),
        _text("diff", "json", "diff_json:render_diff_json"),
        _text("diff", "markdown", "diff_markdown:render_diff_markdown"),
    ),
    # {stack, diag}
    "doctor": _table_json("doctor", "doctor_table:render_doctor", "doctor_json:render_doctor_json"),
    # {rows} (GPU rows of the data)
    "gpus": _table_json("gpus", "gpus_table:render_gpus", "gpus_json:render_gpus_json"),
    # {e} (compat.explain.Explanation)
    "explain": _table_json(
        "explain", "explain_text:explanation_text", "explain_json:render_explanation_json"
    ),
    # {report} (judging.releases.ReleasesReport): each release judged per target
    "releases": _table(
        _text("releases", "table", "releases_table:render_releases"),
        _text("releases", "json", "releases_json:render_releases_json"),
        _text("releases", "markdown", "releases_markdown:render_releases_markdown"),
        _text("releases", "html", "releases_html:render_releases_html"),
    ),
    # {target, checks, findings, images, files}
    "verify": _table_json("verify", "verify_table:render_verify", "verify_json:render_verify_json"),
    # {output_dir, written} (the images extract wrote)
    "extract": _table_json("extract", "extract_table:render_written", "extract_json:render_written_json"),
}


def formats(command: str) -> tuple[str, ...]:
    """``command``'s ``--format`` choices, in order (the first is the default)."""
    return tuple(VIEWS[command])


def view(command: str, fmt: str) -> View:
    """``command``'s view of ``fmt``; a UsageError when the module its writer needs is missing (a
    pair not in ``VIEWS`` is a programming error: KeyError)."""
    v = VIEWS[command][fmt]
    v.check()
    return v
