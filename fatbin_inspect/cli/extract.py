"""``fatbin-inspect extract PATH -o DIR``: write selected entries as .cubin / .ptx files."""

from __future__ import annotations

import os
import re

import click

from fatbin_inspect.cli.common import EXIT_OK, format_option, note_error, output_option, write_output
from fatbin_inspect.cli.options import examples, note, ui_options
from fatbin_inspect.errors import InputError
from fatbin_inspect.formats.binio import open_blob
from fatbin_inspect.formats.decompress import Budget
from fatbin_inspect.inventory.core import Options, inspect_pairs, payload
from fatbin_inspect.inventory.walk import iter_files

_SUFFIX = {"sass": ".cubin", "ptx": ".ptx", "ltoir": ".ltoir", "tile": ".tileir", "unknown": ".bin"}


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
@format_option(["table", "json"])
@output_option
@ui_options
def extract_cmd(paths, arches, kinds, out_dir, fmt, output):
    """Write entries, decompressed, as files (what cuobjdump -xelf/-xptx does).

    Names: <file>.<fatbin#>.<entry#>.<arch>.cubin|.ptx; LTO-IR is written as stored (opaque).
    The report (-o, --format) lists the files written, one a line, or as JSON.
    """
    names, numbers = _wanted(arches)
    os.makedirs(out_dir, exist_ok=True)
    written: list[dict] = []
    for root in paths:
        for path, skip in iter_files(root):
            if skip:
                continue
            try:
                blob = open_blob(path)
            except InputError as exc:
                click.echo(f"fatbin-inspect: {path}: {exc}", err=True)
                continue
            for rec, b in inspect_pairs(path, blob, Options(), 0):
                note_error(rec)
                budget = Budget(b.size) if b is not None else None  # bounds decompression bombs
                for fi, fb in enumerate(rec.fatbins):
                    for ei, e in enumerate(fb.entries):
                        if kinds and e.kind not in kinds:
                            continue
                        if (names or numbers) and e.arch not in names and (e.sm, e.variant) not in numbers:
                            continue
                        try:
                            data = payload(b, e, budget)
                        except InputError as exc:
                            click.echo(
                                f"fatbin-inspect: {rec.path} at offset {e.offset:#x}: {exc.message}", err=True
                            )
                            continue
                        if e.kind == "ptx":
                            data = data.split(b"\0", 1)[0]
                        name = f"{_safe(os.path.basename(rec.path))}.{fi}.{ei}.{e.arch}{_SUFFIX[e.kind]}"
                        with open(os.path.join(out_dir, name), "wb") as fh:
                            fh.write(data)
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
    if fmt == "json":
        from fatbin_inspect.render import jsondump

        text = jsondump.dumps({"schema_version": 1, "output_dir": out_dir, "written": written})
    else:
        text = "".join(w["file"] + "\n" for w in written)
    write_output(text, output)
    note(None, f"{len(written)} images written to {out_dir}")
    raise SystemExit(EXIT_OK)
