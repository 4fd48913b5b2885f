"""The views of ``list`` over a ``judging.list_run.ListRun``: the inventory table (with the check
table under it for targets), the inventory document (streamed) and its lines."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from fatbin_inspect.formats.model import FileReport
    from fatbin_inspect.judging.list_run import ListRun
    from fatbin_inspect.render.sink import Sink

PRETTY_MAX_ENTRIES = 2000  # larger inventories are written compact (same document, no indentation)


class Shown(NamedTuple):
    """What the table is asked for besides the records."""

    entries: str = "auto"  # "all", "summary" or "auto" (entries for small files)


def write_table(run: ListRun, sink: Sink, shown: Shown | None) -> None:
    """The inventory table, and with targets the check table of their verdicts."""
    from fatbin_inspect.render.inventory_table import render_inventory

    color, width = sink.look
    reports = list(run.judged())
    entries = (shown or Shown()).entries
    text = render_inventory(reports, entries=entries, kernels=run.opts.kernels, color=color, width=width)
    if run.targets:
        from fatbin_inspect.render.check_table import render_check

        text += render_check(run.targets, run.verdicts, color=color, width=width)
    sink.text(text)


def write_jsonl(run: ListRun, sink: Sink, shown: Any = None) -> None:
    """One record a line, written as it is read."""
    from fatbin_inspect.render import inventory_json, jsondump, record_json

    v = inventory_json.SCHEMA_VERSION
    with sink.stream() as out:
        jsondump.write_lines(out, ({"schema_version": v, **record_json.file_dict(r)} for r in run.reports()))


def write_json(run: ListRun, sink: Sink, shown: Any = None) -> None:
    """The inventory document; ``--kernels`` without targets in pieces encoded where decoded."""
    if run.opts.kernels and not run.targets:  # the large case
        _write_json_by_pieces(run, sink)
    else:
        _write_json(run, sink)


def _write_json(run: ListRun, sink: Sink) -> None:
    """The inventory document, streamed: records are held only until the document is known to
    be large (more than ``PRETTY_MAX_ENTRIES`` entries: written compact), then written as they
    come; with targets, the verdicts (not the records) are kept for the ``results`` at the end."""
    from fatbin_inspect.render import inventory_json, jsondump, record_pieces

    with sink.stream() as out:
        it = run.judged()
        held: deque[FileReport] = deque()
        entries = 0
        for r in it:
            held.append(r)
            entries += sum(len(fb.entries) for fb in r.fatbins)
            if entries > PRETTY_MAX_ENTRIES:
                break

        pretty = entries <= PRETTY_MAX_ENTRIES

        def encoded(r: FileReport) -> Any:
            return (record_pieces.file_pretty(r, 2).encode(),) if pretty else record_pieces.file_pieces(r)

        def files() -> Iterator[Any]:
            while held:
                yield encoded(held.popleft())
            for r in it:
                yield encoded(r)

        doc: dict[str, Any] = {
            "schema_version": inventory_json.SCHEMA_VERSION,
            "tool": inventory_json.tool(),
            "files": jsondump.Items(files(), encoded=True),
        }
        if run.targets:
            from fatbin_inspect.render.check_json import result_dict, target_dict

            index = {t: i for i, t in enumerate(run.targets)}
            doc["targets"] = [target_dict(t) for t in run.targets]
            doc["results"] = jsondump.Items(result_dict(v, index[v.target]) for v in run.verdicts)
        jsondump.write(out, doc, pretty=pretty)


def _write_json_by_pieces(run: ListRun, sink: Sink) -> None:
    """``--kernels --format json``: each piece written as it arrives (memory does not grow with
    the kernels). Same document as ``inventory_json.inventory_document``, compact."""
    from fatbin_inspect.render import inventory_json, jsondump, record_pieces

    with sink.stream() as out:
        doc = {
            "schema_version": inventory_json.SCHEMA_VERSION,
            "tool": inventory_json.tool(),
            "files": jsondump.Items(
                run.pieces(record_pieces.file_pieces, record_pieces.fatbins_fragment), encoded=True
            ),
        }
        jsondump.write(out, doc, pretty=False)
