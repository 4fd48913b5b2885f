"""Terminal view of ``check`` as a matrix: files × targets, then only the notes that matter.

A cell reads without colour too: ``native sm_90``, ``jit compute_90``, ``fail 209``, ``-`` (no
device code); a trailing ``~`` marks the engine's partial coverage (some fatbins of the file are
set aside or have no code for that GPU). Below the table: a legend, each failure once (the same reason on several targets is one
line), each partially covered cell, what each JIT costs (R-JIT-COST), and the assumed driver once, not per target.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from fatbin_inspect.compat import jit
from fatbin_inspect.compat.describe import coverage_line, device_line
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.compat.verdict import FileVerdict
from fatbin_inspect.render import escape
from fatbin_inspect.render.check_table import STYLE, verdict_counts
from fatbin_inspect.render.console import PathCell, hang, render
from fatbin_inspect.render.scan_table import common_dir
from fatbin_inspect.render.wording import plural

PARTIAL = "~"
_PATH_PIECES = re.compile(r"[^/!]*[/!]+|[^/!]+")  # as render.console.wrap breaks paths


def short_gpu(t: Target) -> str:
    return t.gpu.name.replace("NVIDIA ", "").replace("GeForce ", "")


def target_title(t: Target) -> str:
    """A column title: the hosts (fleet targets) or the GPU, then the driver (``*``: assumed)."""
    driver = f"drv {t.driver.version}{'*' if t.driver.assumed else ''}"
    compat = f"compat {t.compat.cuda}" if t.compat else None  # R-FWD: cuda-compat package in use
    return "\n".join(x for x in (t.host_label, short_gpu(t), driver, compat) if x)


def target_name(t: Target) -> str:
    """One line naming a target in the notes."""
    gpu = f"{short_gpu(t)}, driver {t.driver.version}{f' + {t.compat.package}' if t.compat else ''}"
    return f"{t.host_label} ({gpu})" if t.hosts else gpu


def cell(v: FileVerdict | None) -> Text:
    if v is None or v.verdict == "no-device-code":
        return Text("-", style="dim")
    word = _CELL_WORD.get(v.verdict, _loaded_word)(v)
    if v.coverage == "partial":
        word += PARTIAL
    return Text(word, style=STYLE[v.verdict])


def _loaded_word(v: FileVerdict) -> str:
    """``native sm_90``, ``jit compute_90``: the verdict and the image chosen."""
    return f"{v.verdict} {v.chosen.arch}" if v.chosen else v.verdict


_CELL_WORD = {
    "fail": lambda v: f"fail {v.error.code}" if v.error else "fail",
    # R-LINK: judged where it is linked; coverage: code for this GPU
    "link-time": lambda v: "link" if v.coverage != "none" else "link, no code",
}


LEGEND = (
    "native ARCH: a cubin for this GPU loads as is · jit ARCH: the driver compiles that PTX at the "
    "first launch · fail N: CUDA error N at load or start · link: a link-time input (.o, .a member) "
    "with code for this GPU · - no device code · "
    f"{PARTIAL} partial coverage: only some fatbins have code for this GPU · drv X*: driver assumed"
)


def _files(paths: Sequence[str], cut: int) -> str:
    names = [p[cut:] for p in paths]
    return ", ".join(names) if len(names) <= 3 else f"{', '.join(names[:2])} and {len(names) - 2} more files"


def jit_mix(v: FileVerdict) -> str | None:
    """What a JIT cell does not say: which fatbins JIT and from which PTX (``compute_52 ×195``),
    and how many load a cubin natively; None when the file's one chosen PTX tells it all."""
    if v.verdict != "jit":
        return None
    counted = [f for f in v.fatbins if f.ignored is None]
    jit = _chosen_archs(counted, "jit")
    native = sum(1 for f in counted if f.verdict == "native")
    n_jit = sum(jit.values())
    if not n_jit or (native == 0 and len(jit) == 1):
        return None
    text = f"{_jit_head(counted, n_jit)} JIT-compile PTX at the first launch ({_by_count(jit)})"
    if native:
        text += f"; {native} load a cubin ({', '.join(sorted(_chosen_archs(counted, 'native')))})"
    return text


def _jit_head(counted: Sequence, n_jit: int) -> str:
    """``all 606 fatbins``, ``195 of 606 fatbins`` (of those with a verdict)."""
    total = len([f for f in counted if f.verdict in ("native", "jit", "fail")])
    return f"all {total} fatbins" if n_jit == total else f"{n_jit} of {total} fatbins"


def _by_count(archs: dict[str, int]) -> str:
    """``compute_90 ×411, compute_52 ×195``: most fatbins first."""
    return ", ".join(f"{a} ×{n}" for a, n in sorted(archs.items(), key=lambda x: -x[1]))


def _chosen_archs(fatbins: Sequence, verdict: str) -> dict[str, int]:
    """The images chosen by the fatbins of ``verdict``: arch -> fatbins, in the order first met."""
    out: dict[str, int] = {}
    for f in fatbins:
        if f.verdict == verdict and f.chosen is not None:
            out[f.chosen.arch] = out.get(f.chosen.arch, 0) + 1
    return out


def _jit_mix(verdicts: Sequence[FileVerdict], cut: int) -> list[RenderableType]:
    """One note per JIT cell whose fatbins mix native and JIT or JIT from several PTX."""
    out: list[RenderableType] = []
    for v in verdicts:
        mix = jit_mix(v)
        if mix:
            out.append(hang("  ", f"jit on {target_name(v.target)}: {v.path[cut:]}: {mix}", "yellow"))
    return out


def _notes(
    targets: Sequence[Target], verdicts: Sequence[FileVerdict], cut: int, cache: jit.CacheSettings
) -> list[RenderableType]:
    """Failures grouped by cause (error, rule, reason): one line names its targets and files; each
    fix once; partial coverage per cell; every driver note (the assumed driver) once. Wrapped
    lines continue under the first word after the indent (``hang``)."""
    return [
        *_failures(verdicts, cut),
        *_jit_mix(verdicts, cut),
        *_partial(verdicts, cut),
        *_jit_costs(verdicts, cut, cache),
        *_driver_notes(targets),
    ]


def _failures(verdicts: Sequence[FileVerdict], cut: int) -> list[RenderableType]:
    """One line per cause and set of files, naming its targets; each fix once."""
    causes: dict[tuple, dict[Target, list[str]]] = {}
    failing: dict[tuple, list[FileVerdict]] = {}  # each cause's verdicts, in order
    for v in verdicts:
        if v.verdict == "fail":
            key = (v.error, v.rule, v.reason, v.advice)
            causes.setdefault(key, {}).setdefault(v.target, []).append(v.path)
            failing.setdefault(key, []).append(v)
    merged: dict[tuple, list[Target]] = {}  # the same files failing the same way on several targets
    for key, per_target in causes.items():
        for t, paths in per_target.items():
            merged.setdefault((key, tuple(paths)), []).append(t)
    out: list[RenderableType] = []
    fixes_shown: set[str] = set()
    for (key, paths), ts in merged.items():
        error, rule, reason, advice = key
        err = f"{error.code} {error.name}" if error else "fail"
        line = Text(f"{err} ({rule})", style="red")
        line.append(f" on {'; '.join(map(target_name, ts))}", style="bold")
        line.append(f": {_files(paths, cut)}: {reason}")
        out.append(hang("  ", line))
        shown_ts, shown_paths = set(ts), set(paths)  # (the verdicts this line stands for)
        vs = [v for v in failing[key] if v.target in shown_ts and v.path in shown_paths]
        out += [hang("    device code: ", d) for d in _device_lines(vs, cut)]
        out += [hang("    fix: ", a, style="cyan") for a in _new(advice, fixes_shown)]
    return out


def _device_lines(vs: Sequence[FileVerdict], cut: int) -> list[str]:
    """R-HOST: what the device code gives on a host that can load the file, once per answer,
    naming the files of each when the failure line's files differ."""
    answers: dict[str, list[str]] = {}
    for v in vs:
        if v.device is not None:
            answers.setdefault(device_line(v.device), []).append(v.path)
    if len(answers) == 1:
        return list(answers)
    return [f"{line}: {_files(list(dict.fromkeys(paths)), cut)}" for line, paths in answers.items()]


def _new(items: Sequence[str], seen: set[str]) -> list[str]:
    """The items not in ``seen`` (once each), added to it."""
    out = [a for a in dict.fromkeys(items) if a not in seen]
    seen.update(out)
    return out


def _partial(verdicts: Sequence[FileVerdict], cut: int) -> list[RenderableType]:
    return [
        hang(
            "  ",
            f"partial coverage of {v.path[cut:]} on {target_name(v.target)}: {coverage_line(v) or v.reason}",
            "yellow",
        )
        for v in verdicts
        if v.verdict != "fail" and v.coverage == "partial"
    ]


def _jit_costs(verdicts: Sequence[FileVerdict], cut: int, cache: jit.CacheSettings) -> list[RenderableType]:
    """What each JIT costs (R-JIT-COST)."""
    out: list[RenderableType] = []
    for v in verdicts:
        cost = jit.cost(v, cache)
        if cost is not None:
            cost_line = f"jit on {target_name(v.target)}: {v.path[cut:]}: {jit.cost_text(cost)}"
            out.append(hang("  ", cost_line, "yellow"))
    return out


def _driver_notes(targets: Sequence[Target]) -> list[RenderableType]:
    """Every driver note (the assumed driver) once."""
    notes = [t.driver.note for t in targets if t.driver.note]
    return [hang("  note: ", note, style="yellow") for note in _new(notes, set())]


def _table(
    head: str,
    targets: Sequence[Target],
    rows: dict[str, dict[Target, FileVerdict]],
    cut: int,
    width: int | None,
) -> list[RenderableType]:
    """The matrix. Paths wrap after a ``/`` within their column; when a path component is wider
    than what the target columns leave, each path gets a line of its own above its cells instead
    (never a file name cut to fit a column)."""
    titles = [target_title(t) for t in targets]
    cells = {p: [cell(row.get(t)) for t in targets] for p, row in rows.items()}
    widths = [
        max([len(x) for x in title.split("\n")] + [c[i].cell_len for c in cells.values()])
        for i, title in enumerate(titles)
    ]
    if width is None or width - sum(widths) - 2 * len(widths) >= _longest_piece(rows, cut):
        return [_one_table(head, titles, cells, cut)]
    return _banded(head, titles, widths, cells, cut)


def _longest_piece(paths: Iterable[str], cut: int) -> int:
    """The widest piece a path wraps into (a component and its ``/`` or ``!``)."""
    return max(len(piece) for p in paths for piece in _PATH_PIECES.findall(p[cut:]) or [""])


def _one_table(head: str, titles: Sequence[str], cells: dict[str, list[Text]], cut: int) -> Table:
    tab = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    tab.add_column(head)
    for title in titles:
        tab.add_column(title, no_wrap=True)
    for path, row_cells in cells.items():
        tab.add_row(PathCell(escape.text(path[cut:], "bold")), *row_cells)
    return tab


def _banded(
    head: str, titles: Sequence[str], widths: Sequence[int], cells: dict[str, list[Text]], cut: int
) -> list[RenderableType]:
    """Each path on a line of its own above its cells, the target titles once."""

    def band(show_header: bool) -> Table:
        tab = Table(box=None, pad_edge=False, header_style="bold", show_edge=False, show_header=show_header)
        tab.add_column("", width=2)
        for title, w in zip(titles, widths):
            tab.add_column(title, width=w, no_wrap=True)
        return tab

    top = band(True)  # the target titles once, then each path above its cells
    out: list[RenderableType] = [Text(head, style="bold"), top]
    for path, row_cells in cells.items():
        out.append(hang("", escape.text(path[cut:], "bold")))
        line = band(False)
        line.add_row("", *row_cells)
        out.append(line)
    return out


def render_matrix(
    targets: Sequence[Target],
    verdicts: Sequence[FileVerdict],
    color: bool = False,
    width: int | None = None,
    cache: jit.CacheSettings = jit.DEFAULT_CACHE,
    kernels: bool = False,
) -> str:
    """The matrix of ``check`` (``verdicts`` in file order, one per target each); ``cache``: the
    deployment's JIT cache (``--env CUDA_CACHE_*``), for the JIT notes; ``kernels`` (``--kernels``:
    every missing kernel) is for the long view, the matrix names none."""
    by_file: dict[str, dict[Target, FileVerdict]] = {}
    for v in verdicts:
        by_file.setdefault(v.path, {})[v.target] = v
    shown = {p: row for p, row in by_file.items() if any(v.verdict != "no-device-code" for v in row.values())}
    cut = common_dir(list(by_file)) if len(by_file) > 1 else 0
    head = f"file (in {next(iter(by_file))[:cut]})" if cut else "file"
    out: list = (
        _table(head, targets, shown, cut, width) if shown else [Text("no file has device code", style="dim")]
    )
    hidden = len(by_file) - len(shown)
    if hidden:
        out.append(Text(f"{plural(hidden, 'more file', 'more files')} without device code", style="dim"))
    out += [Text(""), Text(LEGEND, style="dim")]
    notes = _notes(targets, verdicts, cut, cache)
    if notes:
        out += [Text(""), Text("Notes", style="bold"), *notes]
    out += [
        Text(""),
        Text(
            f"{plural(len(by_file), 'file')} × {plural(len(targets), 'target')}: {verdict_counts(verdicts)}",
            style="bold",
        ),
    ]
    return render(out, color, width)
