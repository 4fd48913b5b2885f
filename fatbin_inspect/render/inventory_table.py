"""Terminal table for the inventory: a summary per file, and every entry for small files."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rich.table import Table
from rich.text import Text

from fatbin_inspect.formats.model import Entry, FileReport, Kernel
from fatbin_inspect.render.console import human, render

ENTRY_ROWS_AUTO = 40  # files with at most this many entries are listed entry by entry


def _arch_key(e: Entry):
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
            f"  {len(r.fatbins)} fatbins, {sum(len(fb.entries) for fb in r.fatbins)} entries in {', '.join(secs)}"
        )
    elif r.format in ("zip", "ar", "tar", "conda", "oci") and not r.error:
        t.append("  archive: members with device code follow", style="dim")
    elif not r.error:
        t.append("  no device code", style="dim")
    if r.needs:
        t.append(f"  needs {', '.join(r.needs)}", style="dim")
    return t


def _entries_table(r: FileReport, kernels: bool) -> Table:
    tab = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    for col in ("fatbin", "kind", "arch", "compression", "stored", "size", "PTX ISA", "details"):
        tab.add_column(col, justify="right" if col in ("stored", "size") else "left")
    for fb in r.fatbins:
        where = f"{fb.section or '-'}@{fb.offset:#x}"
        if not fb.entries:
            tab.add_row(where, "(empty)", "", "", "", "", "", "")
        for e in fb.entries:
            tab.add_row(
                where,
                e.kind,
                e.arch,
                e.compression,
                human(e.stored_size),
                human(e.size),
                e.ptx_isa or "",
                " ".join(_entry_details(e)),
            )
            where = ""
            if kernels and e.kernels:
                for k in e.kernels:
                    line = f"  {k.demangled or k.name}  {' '.join(_kernel_resources(k))}"
                    tab.add_row("", "", "", "", "", "", "", Text(line, style="dim"))
    return tab


def _entry_details(e: Entry) -> list[str]:
    """The ``details`` column: flags, the cubin's ELF ABI and toolkit, the kernel count."""
    details: list[str] = []
    if e.relocatable_ptx:
        details.append("relocatable")
    if e.tile_ir_version:
        details.append(f"Tile IR {e.tile_ir_version}")
    if e.debug:
        details.append("debug")
    if e.host and e.host != "linux":
        details.append(f"host={e.host}")
    if e.identifier:
        details.append(f"id={e.identifier}")
    if e.cubin:
        c = e.cubin
        details.append(f"abi{c.elf_abi} {c.elf_type}")
        details += ["device-link"] if c.device_link else []
        details += [c.toolkit] if c.toolkit else []
    if e.kernels is not None:
        details.append(f"{len(e.kernels)} kernels")
    if e.decode_error:
        details.append(f"undecodable: {e.decode_error}")
    return details


def _kernel_resources(k: Kernel) -> list[str]:
    """cuobjdump -res-usage spellings: REG, SHARED, CONSTANT[0], MAXTHREADS."""
    res = []
    if k.registers is not None:
        res.append(f"REG:{k.registers}")
    if k.shared is not None:
        res.append(f"SHARED:{k.shared}")
    if k.constant0 is not None:
        res.append(f"CONSTANT[0]:{k.constant0}")
    if k.max_threads:
        res.append(f"MAXTHREADS:{k.max_threads[0]}")
    return res


def _summary_table(r: FileReport) -> Table:
    groups = defaultdict(list)
    for e in r.entries:
        groups[(e.kind, e.arch)].append(e)
    tab = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("kind", "arch", "entries", "compression", "stored", "size", "PTX ISA", "kernels"):
        tab.add_column(col, justify="right" if col in ("entries", "stored", "size", "kernels") else "left")
    for (kind, arch), es in sorted(groups.items(), key=lambda kv: _arch_key(kv[1][0])):
        comp = ",".join(sorted({e.compression for e in es}))
        isas = ",".join(sorted({e.ptx_isa for e in es if e.ptx_isa}))
        ks = [k.name for e in es if e.kernels for k in e.kernels]
        tab.add_row(
            kind,
            arch,
            str(len(es)),
            comp,
            human(sum(e.stored_size for e in es)),
            human(sum(e.size for e in es)),
            isas,
            str(len(set(ks))) if any(e.kernels is not None for e in es) else "",
        )
    return tab


def render_inventory(
    reports: Iterable[FileReport], color: bool = False, entries: str = "auto", kernels: bool = False
) -> str:
    """``entries``: "auto" (list entries of small files), "all", or "summary"."""
    out = []
    for r in reports:
        out.append(_file_header(r))
        if r.error:
            where = f" at offset {r.error.offset:#x}" if r.error.offset is not None else ""
            out.append(Text(f"  error{where}: {r.error.message}", style="red"))
        for note in r.notes:
            out.append(Text(f"  note: {note}", style="yellow"))
        n = len(r.entries)
        if not n:
            continue
        show_all = entries == "all" or (entries == "auto" and (n <= ENTRY_ROWS_AUTO or kernels))
        out.append(_entries_table(r, kernels) if show_all else _summary_table(r))
        out.append(Text(""))
    return render(out, color)
