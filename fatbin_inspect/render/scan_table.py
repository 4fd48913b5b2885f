"""Terminal view of a scan: the coverage matrix, one row per distribution, verdicts per target.

Cells read without colour too: ``SASS``, ``SASS+PTX``, ``PTX`` or ``-``, then the share
``n/m`` (n of the row's m fatbins with device code have it: ``SASS 4/3165`` is not coverage); a
cell whose cubins are all arch/family-specific shows the suffix (``SASS a``), since such code runs
on that exact GPU only. A legend follows the matrix. Columns that do not fit the width go to a
band of their own below; ``verdicts_only`` leaves the architectures out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from rich.text import Text

from fatbin_inspect.render import escape
from fatbin_inspect.render.console import Hanging, hang, human, render
from fatbin_inspect.render.wording import plural
from fatbin_inspect.scanning.coverage import NONE, PTX, SASS, Cell, Coverage, Row, Verdict, describe

_CELL_STYLE = {SASS: "green", PTX: "yellow", NONE: "dim"}
_VERDICT_STYLE = {"native": "green", "jit": "yellow", "fail": "bold red", "no-device-code": "dim"}


def _cell_text(cell: Cell | None) -> Text:
    if cell is None or cell.state == NONE:
        return Text("-", style=_CELL_STYLE[NONE])
    if cell.state == PTX:
        return Text("PTX", style=_CELL_STYLE[PTX])
    label = _sass_label([a for a in cell.arches if a.startswith("sm_")])
    if any(a.startswith("compute_") for a in cell.arches):
        label += "+PTX"
    return Text(label, style=_CELL_STYLE[SASS])


def _sass_label(sass: Sequence[str]) -> str:
    """``SASS``, or ``SASS a`` / ``SASS f`` when every cubin is arch- or family-specific."""
    suffixes = {a[-1] for a in sass if not a[-1].isdigit()}
    plain = any(a[-1].isdigit() for a in sass)
    return "SASS" if plain or not suffixes else "SASS " + "".join(sorted(suffixes))


def _verdict_text(v: Verdict | None) -> Text:
    if v is None:
        return Text("")
    word = v.verdict if not v.error else f"{v.verdict} {v.error.split()[0]}"
    if getattr(v, "coverage", None) == "partial":
        word += " ~"
    return Text(word, style=_VERDICT_STYLE.get(v.verdict, ""))


def _share(cell: Cell | None, label: Text) -> Text:
    """``SASS 4/3165``: fatbins of the row with this state for the SM, of all its fatbins."""
    if cell is None or cell.state == NONE or not cell.of:
        return label
    return label + Text(f" {cell.fatbins}/{cell.of}", style=label.style)


def _cells(cov: Coverage, row: Row, verdicts_only: bool) -> list[Text]:
    cells = (
        []
        if verdicts_only
        else [_share(row.cells.get(sm), _cell_text(row.cells.get(sm))) for sm in cov.columns]
    )
    return cells + [
        _verdict_text(row.verdicts[i] if i < len(row.verdicts) else None) for i in range(len(cov.targets))
    ]


def _matrix_rows(cov: Coverage, files: bool, verdicts_only: bool) -> list[tuple[Text, str, list[Text]]]:
    out = []
    for row in cov.rows:
        errs = f" ({row.errors} unreadable)" if row.errors else ""
        style = "bold" if row.kind == "distribution" else ""
        out.append((escape.text(row.name, style), f"{row.files}{errs}", _cells(cov, row, verdicts_only)))
        if files:
            cut = common_dir([c.name for c in row.children])
            for child in row.children:
                out.append(
                    (escape.text("  " + child.name[cut:], "dim"), "", _cells(cov, child, verdicts_only))
                )
    return out


def common_dir(names: Sequence[str]) -> int:
    """Length of the folder (or ``ARCHIVE!``) prefix the paths share, to show the rest."""
    prefix = os.path.commonprefix(list(names))  # noqa: RUF071 (paths inside archives too)
    return max(prefix.rfind("/"), prefix.rfind("!")) + 1


TITLE = "dist / folder"
NAME_MAX = 40  # a longer distribution or folder name goes on a line of its own above its cells


def _matrix(titles: list[str], rows: list, width: int | None) -> list:
    """The matrix as lines: name, files, then as many columns as the width holds; the rest in
    further bands below, each with its own header (no line is wider than ``width``)."""
    names = max([len(TITLE)] + [r[0].cell_len for r in rows])
    namew = names if width is None else min(names, NAME_MAX, max(12, width // 4))
    filew = max([len("files")] + [len(r[1]) for r in rows])
    colw = [max([len(t)] + [r[2][i].cell_len for r in rows]) for i, t in enumerate(titles)]
    out: list = []
    for n, band in enumerate(_bands(colw, namew + 2 + filew, width)):
        if n:
            out.append(Text(""))
        out.append(_band_head(titles, colw, band, namew, filew))
        for name, nfiles, cells in rows:
            line = Text("")
            if name.cell_len > namew:
                out.append(name)
                line += Text(" " * namew)
            else:
                line += name + Text(" " * (namew - name.cell_len))
            out.append(line + Text(f"  {nfiles:>{filew}}") + _band_cells(cells, colw, band))
    return out


def _bands(colw: Sequence[int], lead: int, width: int | None) -> list[list[int]]:
    """The columns of each band: as many as fit ``width`` after the name and files (``lead``)."""
    bands: list[list[int]] = [[]]
    used = lead
    for i, w in enumerate(colw):
        if width is not None and bands[-1] and used + 2 + w > width:
            bands.append([])
            used = lead
        bands[-1].append(i)
        used += 2 + w
    return bands


def _band_head(
    titles: Sequence[str], colw: Sequence[int], band: Sequence[int], namew: int, filew: int
) -> Text:
    head = Text(f"{TITLE:<{namew}}  {'files':>{filew}}", style="bold")
    for i in band:
        title = titles[i].center(colw[i])
        head += Text("  " + (title.rstrip() if i == band[-1] else title), style="bold")
    return head


def _band_cells(cells: Sequence[Text], colw: Sequence[int], band: Sequence[int]) -> Text:
    """A row's cells of one band, each centred in its column."""
    line = Text("")
    for i in band:
        c = cells[i]
        pad = colw[i] - c.cell_len
        line += Text("  " + " " * (pad // 2)) + c + Text(" " * (pad - pad // 2))
    return line


LEGEND = (
    "SASS: cubins for that SM (SASS a / SASS f: only arch- or family-specific ones, which run on that "
    "exact GPU or family only); +PTX: PTX for it too; PTX: only PTX, the driver must JIT it; -: none"
)
SHARE_LEGEND = "; n/m: n of the row's m fatbins with device code have it"
VERDICT_LEGEND = (
    "native / jit / fail N (the CUDA error) per target; ~: partial coverage (only some files or "
    "fatbins have code for it); link-time: objects and archives linked later"
)


def render_coverage(
    cov: Coverage,
    summary: str,
    color: bool = False,
    files: bool = False,
    target_sms: Sequence[int | None] = (),
    headers: Sequence[str] = (),
    width: int | None = None,
    verdicts_only: bool = False,
    images: Sequence[dict] = (),
    layers: bool = False,
) -> str:
    """``target_sms``: the SM number of each target, for the one-line explanations under the table;
    ``headers``: short column titles for the targets (default: their labels); ``verdicts_only``:
    distributions × targets, no architecture columns; ``images``: ``scanning.images.image_views``
    of the images scanned, one header line each; ``layers``: and under it each layer with the
    CUDA files it brought."""
    out: list = [Hanging(Text(summary, style="bold"), 2)]
    out += image_lines(images, layers)
    if not cov.rows:
        out.append(Text("no device code found", style="dim"))
    else:
        out += _table(cov, files, headers, width, verdicts_only)
    for i, label in enumerate(cov.targets):
        lines = _attention(cov, i, target_sms[i] if i < len(target_sms) else None)
        verdict = _target_verdict(cov, i, len(lines))
        out += [Text(""), Hanging(Text(f"{label}: {verdict}", style="bold"), 2), *lines]
    return render(out, color, width)


def _table(
    cov: Coverage, files: bool, headers: Sequence[str], width: int | None, verdicts_only: bool
) -> list:
    """The matrix and its legend."""
    out = _matrix(_titles(cov, headers, verdicts_only), _matrix_rows(cov, files, verdicts_only), width)
    shares = any(c.of for r in cov.rows for c in r.cells.values())
    legend = [] if verdicts_only else [LEGEND + (SHARE_LEGEND if shares else "")]
    legend += [VERDICT_LEGEND] if cov.targets else []
    if legend:
        out.append(hang("legend: ", "; ".join(legend) + ".", style="dim"))
    return out


def _titles(cov: Coverage, headers: Sequence[str], verdicts_only: bool) -> list[str]:
    """``sm_XY`` per architecture column (unless ``verdicts_only``), then a title per target."""
    titles = [headers[i] if i < len(headers) else label for i, label in enumerate(cov.targets)]
    return titles if verdicts_only else [f"sm_{sm}" for sm in cov.columns] + titles


def _target_verdict(cov: Coverage, i: int, attention: int) -> str:
    """The headline of target ``i``: "everything runs natively" only when every row was judged
    native (rows of no device code or link-time code say nothing about running)."""
    if attention:
        return f"{attention} of {len(cov.rows)} need attention"
    native = sum(
        1 for r in cov.rows if i < len(r.verdicts) and getattr(r.verdicts[i], "verdict", None) == "native"
    )
    if not native:
        return "nothing to judge: no device code that runs on a GPU was found"
    if native == len(cov.rows):
        return "everything runs natively"
    return f"{native} of {len(cov.rows)} run natively; the rest hold link-time code or no device code"


def image_head(im: dict) -> str:
    """``image NAME  DIGEST  PLATFORM`` (the config's digest, the image ID, where the manifest has
    none: a docker save)."""
    name = im["name"] or im["input"]
    if im["error"]:
        return f"image {name}: {im['error']}"
    digest = im["digest"][:19] if im["digest"] else f"id {(im['config'] or '?')[:19]}"
    return f"image {name}  {digest}  {im['platform']}"


def image_lines(images: Sequence[dict], layers: bool = False) -> list:
    """``image NAME  DIGEST  PLATFORM  N layers  SIZE`` per image (its error instead when it has
    one); with ``layers``, each layer (bottom first) and the CUDA files it brought."""
    out: list = []
    for im in images:
        if im["error"]:
            out.append(Hanging(escape.text(im["error"], "red"), 2))
            continue
        n = len(im["layers"])
        out.append(escape.text(f"{image_head(im)}  {n} layer{'s' * (n != 1)}  {human(im['size'])}", "bold"))
        if layers:
            for i, lay in enumerate(im["layers"], 1):
                out += _layer_lines(lay, i, n)
    return out


def _layer_lines(lay: dict, i: int, n: int) -> list:
    """``layer I/N  DIGEST  SIZE  K CUDA files``, then the files."""
    ident = (lay["digest"] or lay["diff_id"] or "?")[:19]
    size = human(lay["size"]) if lay["size"] is not None else "?"
    files = lay["files"]
    what = f"{len(files)} CUDA file{'s' * (len(files) != 1)}" if files else "no CUDA files"
    return [
        escape.text(f"  layer {i}/{n}  {ident}  {size}  {what}", "" if files else "dim"),
        *(escape.text(f"    {f}", "dim") for f in files),
    ]


def attention(row: Row, v: Verdict, sm: int | None) -> str:
    """Why a row needs attention, from the file that decided it (never a fact of the whole row
    that could contradict the verdict), with the variant picked and the files set aside."""
    err = f" ({v.error})" if v.error else ""
    who = f"{os.path.basename(v.path.rsplit('!', 1)[-1])}: " if v.path and v.path != row.name else ""
    text = f"{v.verdict}{err}: {who}{v.reason or (describe(row, sm) if sm is not None else '')}"
    if getattr(v, "variants", ()):
        text += f" [variant: {', '.join(os.path.basename(p.rsplit('!', 1)[-1]) for p in v.variants)}]"
    return text


def _attention(cov: Coverage, i: int, sm: int | None) -> list[Hanging]:
    """One line per row that does not run natively on target ``i``, with why."""
    lines = []
    for row in cov.rows:
        v = row.verdicts[i] if i < len(row.verdicts) else None
        if v is None or v.verdict in ("native", "no-device-code", "link-time"):
            continue
        lines.append(hang(f"  {row.name}: ", attention(row, v, sm), style=_VERDICT_STYLE.get(v.verdict, "")))
    return lines


def summary_line(
    n_files: int,
    n_rows: int,
    files_seen: int,
    nbytes: int,
    seconds: float,
    hits: int,
    inspected: int,
    unreadable: int = 0,
) -> str:
    """The scan's first line. ``n_files``: the records with device code; ``unreadable``: those
    that are an error and nothing else (counted apart: an unreachable image is not a file with
    device code)."""
    cache = f", {hits} of {inspected} binaries from cache" if hits else ""
    bad = f", {unreadable:,} unreadable" if unreadable else ""
    return (
        f"{plural(n_files, 'file')} with device code{bad} in {plural(n_rows, 'distribution/folder')} "
        f"(scanned {plural(files_seen, 'file')}, {human(nbytes)} in {seconds:.1f} s{cache})"
    )
