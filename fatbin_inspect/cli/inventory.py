"""``fatbin-inspect [list] PATH...``: every fat binary and entry, as a table or JSON."""

from __future__ import annotations

from collections.abc import Iterator

import click

from fatbin_inspect.cli.common import (
    EXIT_OK,
    EXIT_STRICT,
    color_for,
    format_option,
    note_error,
    output_option,
    write_output,
)
from fatbin_inspect.formats.model import FileError, FileReport
from fatbin_inspect.inventory.core import Options, inspect_path
from fatbin_inspect.inventory.walk import iter_files

PRETTY_MAX_ENTRIES = 2000  # larger inventories are written compact (same document, no indentation)


def iter_reports(paths, opts: Options) -> Iterator[FileReport]:
    for root in paths:
        for path, skip in iter_files(root):
            if skip:
                yield FileReport(path=path, format="unknown", size=0, error=FileError(skip))
                continue
            yield from inspect_path(path, opts)


@click.command("list")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=True))
@click.option("--kernels", is_flag=True, help="Decode payloads: kernel names and per-kernel resources.")
@click.option("--details", is_flag=True, help="Decode cubins: ELF ABI, type, toolkit, device-link.")
@click.option(
    "--no-scan", is_flag=True, help="Only walk fatbin sections; skip the magic scan of other bytes."
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
@click.option(
    "--gpu",
    "gpus",
    multiple=True,
    help="Also give a verdict for this GPU (name, 8.9, sm_89, auto); repeatable. `check` explains more.",
)
@click.option(
    "--driver", default=None, help="Driver for --gpu (550.54.14, 550, auto; default: newest known)."
)
@format_option(["table", "json", "jsonl"])
@output_option
def list_cmd(paths, kernels, details, no_scan, entries, all_members, strict, gpus, driver, fmt, output):
    """List every CUDA fat binary and entry in PATHS (files, archives, wheels, directories).

    With --gpu, add the verdict per file and target: native, jit or fail (CUDA error, rule)."""
    from fatbin_inspect.render import inventory_json, jsondump

    targets = ()
    if gpus:
        from fatbin_inspect.compat.targets import resolve_targets
        from fatbin_inspect.system.stack import local_devices

        targets = resolve_targets(list(gpus), driver, local=local_devices(gpus, driver))
    opts = Options(
        kernels=kernels,
        details=details or kernels,
        scan_hidden=not no_scan,
        members="all" if all_members else "device",
        probe_small=bool(targets),
    )
    if fmt == "json" and opts.kernels and not targets:  # the large case: encode where decoded
        text, failed = _json_by_pieces(paths, opts)
        write_output(text, output)
        raise SystemExit(EXIT_STRICT if strict and failed else EXIT_OK)
    reports = []
    for r in iter_reports(paths, opts):
        note_error(r)
        reports.append(r)
    verdicts = _verdicts(paths, reports, targets) if targets else []
    if fmt == "json":
        big = sum(len(fb.entries) for r in reports for fb in r.fatbins) > PRETTY_MAX_ENTRIES
        doc = inventory_json.inventory_document(reports)
        if targets:
            from fatbin_inspect.render.check_json import check_document

            check = check_document(targets, verdicts, False, [])
            doc.update(targets=check["targets"], results=check["results"])
        text = jsondump.dumps(doc, pretty=not big)
    elif fmt == "jsonl":
        text = "".join(
            jsondump.dumps_line(
                {"schema_version": inventory_json.SCHEMA_VERSION, **inventory_json.file_dict(r)}
            )
            for r in reports
        )
    else:
        from fatbin_inspect.render.inventory_table import render_inventory

        text = render_inventory(reports, color=color_for(output), entries=entries, kernels=kernels)
        if targets:
            from fatbin_inspect.render.check_table import render_check

            text += render_check(targets, verdicts, color=color_for(output))
    write_output(text, output)
    if strict and any(r.error for r in reports):
        raise SystemExit(EXIT_STRICT)
    raise SystemExit(EXIT_OK)


def _verdicts(paths, reports, targets):
    """Engine verdicts per (file, target), as ``check`` gives them (archives: per member)."""
    import os
    import zipfile

    from fatbin_inspect.compat import runtime
    from fatbin_inspect.compat.engine import evaluate

    wheels = {p: runtime.from_wheel(p) for p in paths if os.path.isfile(p) and zipfile.is_zipfile(p)}
    out = []
    for r in reports:
        if (r.error is not None and not r.fatbins) or (
            r.format in ("zip", "ar", "tar", "conda") and not r.fatbins
        ):
            continue
        rt = runtime.for_file(r, wheels.get(r.path.split("!", 1)[0]))
        out += [evaluate(r, t, rt) for t in targets]
    return out


def _json_by_pieces(paths, opts: Options):
    """``--kernels --format json``: a large binary's fatbins are decoded *and encoded* by worker
    processes (inventory.map_decoded), so 150k kernel records never cross a process boundary and
    the encoding runs in parallel too. Same document as ``inventory_json.inventory_document``, compact."""
    import dataclasses
    import os

    from fatbin_inspect.errors import InputError
    from fatbin_inspect.formats.binio import open_blob
    from fatbin_inspect.inventory import core as inventory
    from fatbin_inspect.render import jsondump

    light = dataclasses.replace(opts, kernels=False, details=False)
    pieces, failed = [], False
    for root in paths:
        for path, skip in iter_files(root):
            if skip:
                r = FileReport(path=path, format="unknown", size=0, error=FileError(skip))
                note_error(r)
                pieces.append(jsondump.file_text(r))
                failed = True
                continue
            if os.path.getsize(path) >= inventory.PARALLEL_MIN_BYTES and _is_binary(path):
                reports = list(inspect_path(path, light))
                r = reports[0]
                if len(reports) == 1 and r.fatbins and r.format not in ("zip", "ar", "tar", "conda"):
                    try:
                        blob = open_blob(path)
                    except InputError:
                        blob = None
                    if blob is not None and inventory.parallel_worthwhile(blob, r.fatbins, opts, path):
                        note_error(r)
                        failed |= r.error is not None
                        frags = inventory.map_decoded(blob, r.fatbins, opts, path, jsondump.fatbins_fragment)
                        pieces.append(jsondump.file_text(r, frags))
                        continue
            for r in inspect_path(path, opts):
                note_error(r)
                failed |= r.error is not None
                pieces.append(jsondump.file_text(r))
    return jsondump.inventory_text(pieces), failed


def _is_binary(path: str) -> bool:
    """A host binary or raw fatbin (not an archive, whose members would be inflated twice)."""
    from fatbin_inspect.containers import detect

    try:
        with open(path, "rb") as fh:
            return detect(fh.read(512)) in ("elf", "pe", "coff", "fatbin")
    except OSError:
        return False
