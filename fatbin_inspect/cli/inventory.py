"""``fatbin-inspect [list] PATH...``: every fat binary and entry, as a table or JSON."""

from __future__ import annotations

import click

from fatbin_inspect.cli.common import (
    EXIT_OK,
    EXIT_STRICT,
    format_option,
    look,
    note_error,
    open_output,
    output_option,
    progress_for,
    write_output,
)
from fatbin_inspect.cli.index_options import index_options
from fatbin_inspect.cli.options import driver_option, examples, gpu_option, ui_options
from fatbin_inspect.cli.sbom import digests_for, list_sbom
from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.judging.inputs import iter_reports

# The judging step (judging.verdicts, and with it the compatibility engine and its data) is
# imported only when there are targets: a plain listing does not pay ~20 ms for it.
PRETTY_MAX_ENTRIES = 2000  # larger inventories are written compact (same document, no indentation)


@examples(
    "fatbin-inspect app.so                      # every fatbin and entry",
    "fatbin-inspect torch-*.whl --entries summary",
    "fatbin-inspect lib.so --kernels            # every kernel, with registers and shared memory",
    "fatbin-inspect build/ --gpu H100 --format json -o inventory.json",
)
@click.command("list")
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=True))  # (image references, pkg:pypi/... too)
@click.option("--kernels", is_flag=True, help="Decode payloads: every kernel, with per-kernel resources.")
@click.option("--details", is_flag=True, help="Decode cubins: ELF ABI, type, toolkit, device-link.")
@click.option(
    "--sections-only",
    "--no-scan",
    "no_scan",
    is_flag=True,
    help="Only read fatbin sections; skip the magic scan of other bytes (--no-scan: old name).",
)
@click.option(
    "--entries",
    type=click.Choice(["auto", "all", "summary"]),
    default="auto",
    show_default=True,
    help="Table: list every entry, or a per-arch summary per file (auto: entries for small files).",
)
@click.option(
    "--all-members", is_flag=True, help="Report every candidate archive member, even without device code."
)
@click.option("--strict", is_flag=True, help="Exit 3 when any input could not be read.")
@gpu_option("Also give a verdict for this GPU (name, 8.9, sm_89, auto); `check` explains more.")
@driver_option(help="Driver for --gpu (550.54.14, 550, auto; default: newest known).")
@format_option(["table", "json", "jsonl", "cyclonedx"])
@output_option
@ui_options
@index_options()
def list_cmd(paths, kernels, details, no_scan, entries, all_members, strict, gpus, driver, fmt, output):
    """List every CUDA fat binary and entry in PATHS (files, archives, wheels, directories).

    With --gpu, add the verdict per file and target: native, jit or fail (CUDA error, rule).
    Images as skopeo names them too: DIR:TAG, oci-archive:FILE:TAG, docker-archive:FILE:NAME,
    docker://HOST/REPO:TAG, and - (a docker save on standard input)."""
    if not paths:
        raise click.UsageError("give a PATH, a pkg:pypi/NAME[@VERSION] or -r FILE")
    _check_paths(paths)
    targets = _targets(gpus, driver)
    opts = Options(
        kernels=kernels,
        details=details or kernels,
        scan_hidden=not no_scan,
        members="all" if all_members else "device",
        probe_small=bool(targets),
        digests=digests_for(fmt),
    )
    if fmt == "cyclonedx":
        raise SystemExit(list_sbom(paths, opts, targets, output, strict))
    seen: list = list(paths)  # inputs and record paths: the output may be none of them
    if fmt in ("json", "jsonl"):
        with open_output(output, seen) as out:
            failed = _JSON_VIEWS[fmt](out, paths, opts, targets, seen)
    else:
        failed = _table(paths, opts, targets, entries, output, seen)
    raise SystemExit(EXIT_STRICT if strict and failed else EXIT_OK)


def _check_paths(paths) -> None:
    """Each path exists, each image reference is well formed (else exit 2); WHEEL!MEMBER is read
    in place."""
    from fatbin_inspect.inventory.roots import resolve_roots
    from fatbin_inspect.judging.index_inputs import is_index_input
    from fatbin_inspect.judging.inputs import check_roots, is_member_root

    check_roots([p for p in paths if is_index_input(p)])
    on_disk = [p for p in paths if not is_member_root(p) and not is_index_input(p)]
    if on_disk:
        resolve_roots(on_disk)


def _targets(gpus, driver) -> tuple:
    if not gpus:
        return ()
    from fatbin_inspect.compat.targets import resolve_targets
    from fatbin_inspect.system.stack import local_devices

    return tuple(resolve_targets(list(gpus), driver, local=local_devices(gpus, driver)))


def _table(paths, opts: Options, targets, entries: str, output, seen: list) -> bool:
    """The inventory table (and the check table with --gpu); True when a file was unreadable."""
    reports = []
    with progress_for("table", "reading") as progress:
        for r in iter_reports(paths, opts, progress):
            note_error(r)
            reports.append(r)
    from fatbin_inspect.render import view

    text = view("list", "table")(reports, entries=entries, kernels=opts.kernels, **look(output))
    if targets:
        from fatbin_inspect.judging.verdicts import WheelRuntimes, judge

        wheels = WheelRuntimes()
        verdicts = [v for r in reports for v in judge(r, targets, wheels)]
        text += view("check", "long")(targets, verdicts, **look(output))
    write_output(text, output, [*seen, *(r.path for r in reports)])
    return any(r.error for r in reports)


def _json(out, paths, opts: Options, targets, seen: list) -> bool:
    if opts.kernels and not targets:  # the large case: encode where decoded
        return _write_json_by_pieces(out, paths, opts, seen)
    return _write_json(out, paths, opts, targets, seen)


class _Errors:
    """Records passed on as they come, each unreadable one told on stderr and remembered."""

    def __init__(self, reports, seen: list):
        self.reports, self.failed, self.seen = reports, False, seen

    def __iter__(self):
        for r in self.reports:
            self.see(r)
            yield r

    def see(self, r: FileReport) -> None:
        self.seen.append(r.path)
        if r.error is not None:
            note_error(r)
            self.failed = True


def _write_jsonl(out, paths, opts: Options, targets, seen: list) -> bool:
    from fatbin_inspect.render import inventory_json, jsondump

    recs = _Errors(iter_reports(paths, opts), seen)
    v = inventory_json.SCHEMA_VERSION
    jsondump.write_lines(out, ({"schema_version": v, **inventory_json.file_dict(r)} for r in recs))
    return recs.failed


def _write_json(out, paths, opts: Options, targets, seen: list) -> bool:
    """The inventory document, streamed: records are held only until the document is known to
    be large (more than ``PRETTY_MAX_ENTRIES`` entries: written compact), then written as they
    come; with targets, the verdicts (not the records) are kept for the ``results`` at the end."""
    from collections import deque

    from fatbin_inspect.render import inventory_json, jsondump

    recs = _Errors(iter_reports(paths, opts), seen)
    verdicts: list = []

    def judged():
        if not targets:
            yield from recs
            return
        from fatbin_inspect.judging.verdicts import WheelRuntimes, judge

        wheels = WheelRuntimes()
        for r in recs:
            verdicts.extend(judge(r, targets, wheels))
            yield r

    it = judged()
    held: deque[FileReport] = deque()
    entries = 0
    for r in it:
        held.append(r)
        entries += sum(len(fb.entries) for fb in r.fatbins)
        if entries > PRETTY_MAX_ENTRIES:
            break

    pretty = entries <= PRETTY_MAX_ENTRIES

    def encoded(r: FileReport):
        return (jsondump.file_pretty(r, 2).encode(),) if pretty else jsondump.file_pieces(r)

    def files():
        while held:
            yield encoded(held.popleft())
        for r in it:
            yield encoded(r)

    doc = {
        "schema_version": inventory_json.SCHEMA_VERSION,
        "tool": inventory_json.tool(),
        "files": jsondump.Items(files(), encoded=True),
    }
    if targets:
        from fatbin_inspect.render.check_json import result_dict, target_dict

        index = {t: i for i, t in enumerate(targets)}
        doc["targets"] = [target_dict(t) for t in targets]
        doc["results"] = jsondump.Items(result_dict(v, index[v.target]) for v in verdicts)
    jsondump.write(out, doc, pretty=pretty)
    return recs.failed


def _write_json_by_pieces(out, paths, opts: Options, seen: list) -> bool:
    """``--kernels --format json``: each piece written as it arrives (``inputs.iter_pieces``:
    memory does not grow with the kernels). Same document as
    ``inventory_json.inventory_document``, compact."""
    from fatbin_inspect.judging.inputs import iter_pieces
    from fatbin_inspect.render import inventory_json, jsondump

    recs = _Errors((), seen)  # (told of each record by iter_pieces)
    pieces = iter_pieces(paths, opts, jsondump.file_pieces, jsondump.fatbins_fragment, recs.see)
    doc = {
        "schema_version": inventory_json.SCHEMA_VERSION,
        "tool": inventory_json.tool(),
        "files": jsondump.Items(pieces, encoded=True),
    }
    jsondump.write(out, doc, pretty=False)
    return recs.failed


# --format json / jsonl: (out, paths, options, targets, seen) -> a file was unreadable
_JSON_VIEWS = {"json": _json, "jsonl": _write_jsonl}
