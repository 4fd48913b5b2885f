"""``fatbin-inspect extract PATH -o DIR``: write selected entries as .cubin / .ptx files."""

from __future__ import annotations

import hashlib
import os
import re

import click

from fatbin_inspect.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    format_option,
    note_error,
    output_option,
    say,
    write_output,
)
from fatbin_inspect.cli.options import examples, note, ui_options
from fatbin_inspect.cli.outfile import OutputFolder
from fatbin_inspect.errors import InputError
from fatbin_inspect.formats.binio import open_blob
from fatbin_inspect.formats.decompress import Budget
from fatbin_inspect.inventory.core import Options, inspect_pairs, payload
from fatbin_inspect.inventory.walk import iter_files

_SUFFIX = {"sass": ".cubin", "ptx": ".ptx", "ltoir": ".ltoir", "tile": ".tileir", "unknown": ".bin"}


MAX_STEM = 160  # bytes of a base name kept in output names (NAME_MAX is 255 with the suffixes)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", name).strip("._") or "file"


def _wanted(arches) -> tuple[set[str], set[tuple[int, str]]]:
    """``--arch`` values: named targets (``SM_90A`` -> ``sm_90a``, ``compute_120f``) match that
    image only; a bare number (``90``, ``9.0``, ``100a``) matches the cubin and the PTX of that SM."""
    from fatbin_inspect.checks.policy import normalize_arch, split_arch

    names, numbers = set(), set()
    for a in arches:
        arch = normalize_arch(a, "--arch")
        if a.strip().lower().startswith(("sm_", "compute_")):
            names.add(arch)
        else:
            _kind, sm, variant = split_arch(arch)
            numbers.add((sm, variant))
    return names, numbers


@examples(
    "fatbin-inspect extract app -d out/",
    "fatbin-inspect extract lib.so --arch sm_90 --kind sass -d cubins/",
    "fatbin-inspect extract torch-*.whl --kind ptx -d ptx/ --format json -o written.json",
)
@click.command("extract")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--arch", "arches", multiple=True, help="Only these archs (sm_90, sm_90a, compute_120f, 90...)."
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(["sass", "ptx", "ltoir", "unknown"]),
    help="Only these kinds.",
)
@click.option(
    "--output-dir",
    "-d",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory for the extracted images (created).",
)
@click.option("--force", is_flag=True, help="Replace files of the same name in the output directory.")
@format_option(["table", "json"])
@output_option
@ui_options
def extract_cmd(paths, arches, kinds, out_dir, force, fmt, output):
    """Write entries, decompressed, as files (what cuobjdump -xelf/-xptx does).

    Names: <file>.<fatbin#>.<entry#>.<arch>.cubin|.ptx, where <file> is the input's base name,
    plus a hash of its whole path when another input of this run has the same base name; LTO-IR
    is written as stored (opaque). Existing files are never overwritten without --force, and
    never written through a symlink. The report (-o, --format) lists the files written, one a
    line, or as JSON. Exit 2 when nothing was written because no input could be read or no
    image could be written.
    """
    names, numbers = _wanted(arches)
    folder = OutputFolder(out_dir, force=force, inputs=paths)
    written: list[dict] = []
    failed = inputs = unwritten = 0
    stems: dict[str, str] = {}  # output stem -> the record path that owns it in this run
    seen: list[str] = list(paths)  # the inputs read: the report may be none of them
    for root in paths:
        for path, skip in iter_files(root):
            if skip:
                continue
            inputs += 1
            seen.append(path)
            try:
                blob = open_blob(path)
            except InputError as exc:
                say(f"{path}: {exc}")
                failed += 1
                continue
            bad = False
            for rec, b in inspect_pairs(path, blob, Options(), 0):
                note_error(rec)
                bad |= rec.error is not None and not rec.fatbins
                budget = Budget(b.size) if b is not None else None  # bounds decompression bombs
                stem = _stem(rec.path, stems)
                for fi, fb in enumerate(rec.fatbins):
                    for ei, e in enumerate(fb.entries):
                        if kinds and e.kind not in kinds:
                            continue
                        if (names or numbers) and e.arch not in names and (e.sm, e.variant) not in numbers:
                            continue
                        try:
                            data = payload(b, e, budget)
                        except InputError as exc:
                            say(f"{rec.path} at offset {e.offset:#x}: {exc.message}")
                            continue
                        if e.kind == "ptx":
                            data = data.split(b"\0", 1)[0]
                        name = f"{stem}.{fi}.{ei}.{_safe(e.arch)}{_SUFFIX[e.kind]}"
                        try:
                            folder.write(name, data)
                        except OSError as exc:  # per entry: the others are still written
                            say(f"{rec.path}: cannot write {name}: {exc.strerror or exc}")
                            unwritten += 1
                            continue
                        written.append(
                            {
                                "file": name,
                                "path": rec.path,
                                "fatbin": fi,
                                "entry": ei,
                                "arch": e.arch,
                                "kind": e.kind,
                            }
                        )
            failed += bad
    if fmt == "json":
        from fatbin_inspect.render import jsondump

        text = jsondump.dumps({"schema_version": 1, "output_dir": out_dir, "written": written})
    else:
        text = "".join(w["file"] + "\n" for w in written)
    write_output(text, output, seen)
    note(None, f"{len(written)} images written to {out_dir}")
    nothing = not written and (unwritten or (inputs and failed == inputs))
    raise SystemExit(EXIT_USAGE if nothing else EXIT_OK)


def _stem(record_path: str, stems: dict[str, str]) -> str:
    """The base name of a record (file or member), made safe; unique among this run's records."""
    stem = _safe(os.path.basename(record_path.replace("!", "/")))[:MAX_STEM]
    owner = stems.setdefault(stem, record_path)
    if owner != record_path:
        digest = hashlib.sha256(record_path.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        stem = f"{stem}-{digest}"
        stems.setdefault(stem, record_path)
    return stem
