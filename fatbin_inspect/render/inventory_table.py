"""Terminal table for the inventory: a summary per file, and every entry for small files."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rich.text import Text

from fatbin_inspect.formats.model import ARCHIVE_FORMATS, CubinInfo, Entry, FileReport, Kernel
from fatbin_inspect.render import escape
from fatbin_inspect.render.console import (
    Hanging,
    drop_empty_columns,
    grid,
    hang,
    human,
    natural_width,
    render,
)
from fatbin_inspect.render.wording import plural

ENTRY_ROWS_AUTO = 40  # files with at most this many entries are listed entry by entry


def _arch_key(e: Entry) -> tuple[int, int, str]:
    order = {"sass": 0, "ptx": 1, "ltoir": 2}.get(e.kind, 3)
    return (order, e.sm, e.variant)


def _file_header(r: FileReport) -> Text:
    t = Text()
    t.append(r.path, style="bold")
    t.append(f"  {r.format}, {human(r.size)}")
    if r.distribution:
        t.append(f"  [{r.distribution}]", style="cyan")
    if r.fatbins:
        secs = sorted({fb.section or "-" for fb in r.fatbins})
        t.append(
            f"  {plural(len(r.fatbins), 'fatbin')}, {plural(sum(len(fb.entries) for fb in r.fatbins), 'entry')} in {', '.join(secs)}"
        )
    elif r.format in ARCHIVE_FORMATS and not r.error:
        t.append("  archive: members with device code follow", style="dim")
    elif not r.error:
        t.append("  no device code", style="dim")
    if r.needs:
        t.append(f"  needs {', '.join(r.needs)}", style="dim")
    return t


ENTRY_COLUMNS = ("fatbin", "kind", "arch", "compression", "stored", "size", "PTX ISA", "details")
SUMMARY_COLUMNS = ("kind", "arch", "entries", "compression", "stored", "size", "PTX ISA", "kernels")
_RIGHT = ("entries", "stored", "size", "kernels")
HEADERS = {"compression": "compr", "PTX ISA": "ISA"}  # short titles: 80 columns hold the row


def _table(headers: tuple[str, ...], rows: list, keep: tuple[str, ...], width: int | None) -> list:
    """The columns that hold something (``keep``: always shown); Text rows are notes (kernels).
    When the rows do not fit ``width`` and the first column is ``fatbin``, each fatbin becomes a
    line of its own above its entries instead of a column."""
    cols, _ = drop_empty_columns(headers, [r for r in rows if not isinstance(r, Text)], keep)
    shown = _only_columns(rows, [headers.index(c) for c in cols])
    titles = [HEADERS.get(c, c) for c in cols]
    right = [HEADERS.get(c, c) for c in _RIGHT]
    if cols[0] == "fatbin" and width is not None and natural_width(titles, shown) > width:
        return grid(titles[1:], _fatbin_lines(shown), width, right=right, indent=2)
    return grid(titles, shown, width, right=right)


def _only_columns(rows: list, idx: list[int]) -> list:
    return [r if isinstance(r, Text) else [r[i] for i in idx] for r in rows]


def _fatbin_lines(shown: list) -> list:
    """Rows without the fatbin column: each fatbin a bold line above its entries."""
    grouped: list = []
    for r in shown:
        if not isinstance(r, Text) and r[0]:
            grouped.append(escape.text(r[0], "bold"))
        grouped.append(r if isinstance(r, Text) else r[1:])
    return grouped


# the details column: (shown when, the words) per fact of an entry, in this order
_DETAILS = (
    (lambda e: e.relocatable_ptx, lambda e: "relocatable"),
    (lambda e: e.tile_ir_version, lambda e: f"Tile IR {e.tile_ir_version}"),
    (lambda e: e.debug, lambda e: "debug"),
    (lambda e: e.host and e.host != "linux", lambda e: f"host={e.host}"),
    (lambda e: e.identifier, lambda e: f"id={e.identifier}"),
    (lambda e: e.cubin, lambda e: _cubin_details(e.cubin)),
    (lambda e: e.kernels is not None, lambda e: plural(len(e.kernels), "kernel")),
    (lambda e: e.decode_error, lambda e: f"undecodable: {e.decode_error}"),
)


def _details(e: Entry) -> str:
    return " ".join(words(e) for shown, words in _DETAILS if shown(e))


def _cubin_details(c: CubinInfo) -> str:
    return " ".join(
        [
            f"abi{c.elf_abi} {c.elf_type}",
            *(["device-link"] if c.device_link else []),
            *([c.toolkit] if c.toolkit else []),
        ]
    )


def _kernel_line(k: Kernel) -> Text:
    res = []
    if k.registers is not None:
        res.append(f"REG:{k.registers}")
    if k.shared is not None:
        res.append(f"SHARED:{k.shared}")
    if k.constant0 is not None:
        res.append(f"CONSTANT[0]:{k.constant0}")
    if k.max_threads:
        res.append(f"MAXTHREADS:{k.max_threads[0]}")
    return escape.text(f"    {k.demangled or k.name}  {' '.join(res)}", "dim")


def _entries_table(r: FileReport, kernels: bool, width: int | None) -> list:
    rows: list[list | Text] = []
    for fb in r.fatbins:
        where = f"{fb.section or '-'}@{fb.offset:#x}"
        if not fb.entries:
            rows.append([where, "(empty)", "", "", "", "", "", ""])
        for e in fb.entries:
            rows.append(
                [
                    where,
                    e.kind,
                    e.arch,
                    e.compression,
                    human(e.stored_size),
                    human(e.size),
                    e.ptx_isa or "",
                    _details(e),
                ]
            )
            where = ""
            if kernels and e.kernels:  # --kernels: every kernel, nothing left out
                rows += [_kernel_line(k) for k in e.kernels]
    return _table(ENTRY_COLUMNS, rows, ENTRY_COLUMNS[:6], width)


def _summary_table(r: FileReport, width: int | None) -> list:
    groups = defaultdict(list)
    for e in r.entries:
        groups[(e.kind, e.arch)].append(e)
    rows = []
    rows = [
        _summary_row(kind, arch, es)
        for (kind, arch), es in sorted(groups.items(), key=lambda kv: _arch_key(kv[1][0]))
    ]
    return _table(SUMMARY_COLUMNS, rows, SUMMARY_COLUMNS[:6], width)


def _summary_row(kind: str, arch: str, es: list[Entry]) -> list[str]:
    """One row of ``SUMMARY_COLUMNS`` for the entries of one kind and arch."""
    return [
        kind,
        arch,
        str(len(es)),
        ",".join(sorted({e.compression for e in es})),
        human(sum(e.stored_size for e in es)),
        human(sum(e.size for e in es)),
        ",".join(sorted({e.ptx_isa for e in es if e.ptx_isa})),
        _kernel_count(es),
    ]


def _kernel_count(es: list[Entry]) -> str:
    """Distinct kernels of the entries, "" when none was decoded."""
    if not any(e.kernels is not None for e in es):
        return ""
    return str(len({k.name for e in es if e.kernels for k in e.kernels}))


def render_inventory(
    reports: Iterable[FileReport],
    color: bool = False,
    entries: str = "auto",
    kernels: bool = False,
    width: int | None = None,
) -> str:
    """``entries``: "auto" (list entries of small files), "all", or "summary"."""
    out: list = []
    for r in reports:
        out.append(Hanging(_file_header(r), 4))
        if r.error:
            where = f" at offset {r.error.offset:#x}" if r.error.offset is not None else ""
            out.append(hang(f"  error{where}: ", r.error.message, style="red"))
        for note in r.notes:
            out.append(hang("  note: ", note, style="yellow"))
        n = len(r.entries)
        if not n:
            continue
        show_all = entries == "all" or (entries == "auto" and (n <= ENTRY_ROWS_AUTO or kernels))
        out += _entries_table(r, kernels, width) if show_all else _summary_table(r, width)
        out.append(Text(""))
    return render(out, color, width)
