"""``fatbin-inspect extract PATH -o DIR``: write selected entries as .cubin / .ptx files."""

from __future__ import annotations

import click

from fatbin_inspect.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    Output,
    format_option,
    note_error,
    output_option,
    say,
)
from fatbin_inspect.cli.options import examples, note, ui_options
from fatbin_inspect.cli.outfile import OutputFolder
from fatbin_inspect.judging.extract_plan import Tally, images


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
@format_option("extract")
@output_option
@ui_options
def extract_cmd(
    paths: tuple[str, ...],
    arches: tuple[str, ...],
    kinds: tuple[str, ...],
    out_dir: str,
    force: bool,
    fmt: str,
    output: str | None,
) -> None:
    """Write entries, decompressed, as files (what cuobjdump -xelf/-xptx does).

    Names: <file>.<fatbin#>.<entry#>.<arch>.cubin|.ptx, where <file> is the input's base name,
    plus a hash of its whole path when another input of this run has the same base name; LTO-IR
    is written as stored (opaque). Existing files are never overwritten without --force, and
    never written through a symlink. The report (-o, --format) lists the files written, one a
    line, or as JSON. Exit 2 when nothing was written because no input could be read or no
    image could be written.
    """
    from fatbin_inspect import render

    view = render.view("extract", fmt)
    folder = OutputFolder(out_dir, force=force, inputs=paths)
    written: list[dict] = []
    unwritten = 0
    tally = Tally()
    seen: list[str] = list(paths)  # the inputs read: the report may be none of them
    for image in images(paths, arches, kinds, tally, seen, say, note_error):
        try:
            folder.write(image.name, image.data)
        except OSError as exc:  # per entry: the others are still written
            say(f"{image.path}: cannot write {image.name}: {exc.strerror or exc}")
            unwritten += 1
            continue
        written.append(
            {
                "file": image.name,
                "path": image.path,
                "fatbin": image.fatbin,
                "entry": image.entry,
                "arch": image.arch,
                "kind": image.kind,
            }
        )
    view.write({"output_dir": out_dir, "written": written}, Output(output, seen))
    note(None, f"{len(written)} images written to {out_dir}")
    nothing = not written and (unwritten or (tally.inputs and tally.failed == tally.inputs))
    raise SystemExit(EXIT_USAGE if nothing else EXIT_OK)
