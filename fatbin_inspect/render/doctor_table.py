"""``doctor`` as text: one layer of the CUDA stack a line, then the conditions and the warnings."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from fatbin_inspect.compat.jit import size_text
from fatbin_inspect.render.console import render
from fatbin_inspect.system.diagnose import FAIL, OK, Diagnosis, JitCache
from fatbin_inspect.system.stack import Stack

_MARK = {OK: ("ok", "green"), FAIL: ("FAIL", "red")}


Row = tuple[str, "str | Text"]


def _layers(stack: Stack, diag: Diagnosis) -> Table:
    tab = Table(box=None, pad_edge=False, show_header=False)
    tab.add_column("layer", style="bold")
    tab.add_column("what")
    for rows in (_gpu_rows, _driver_rows, _runtime_rows, _tool_rows):
        for label, what in rows(stack, diag):
            tab.add_row(label, what)
    return tab


def _gpu_rows(stack: Stack, diag: Diagnosis) -> list[Row]:
    rows: list[Row] = [
        (
            f"GPU {g.index}",
            f"{g.name}, compute capability {g.cc}"
            + (", Tegra iGPU" if g.tegra else "")
            + f"  [{stack.gpu_source}]",
        )
        for g in stack.gpus
    ]
    return rows or [("GPU", Text("none found", style="yellow"))]


def _driver_rows(stack: Stack, diag: Diagnosis) -> list[Row]:
    k, u = stack.kernel_driver, stack.user_driver
    rows: list[Row] = [("kernel driver", f"{k.version}  [{k.source}]" if k else Text("none", style="yellow"))]
    if u:
        api = (
            f"Driver API CUDA {u.api_version // 1000}.{u.api_version % 1000 // 10}"
            if u.api_version
            else f"Driver API version unknown ({u.error})"
        )
        rows.append(
            ("libcuda (user-mode driver)", f"{u.path}{f' build {u.build}' if u.build else ''}, {api}")
        )
    else:
        rows.append(("libcuda (user-mode driver)", Text("not on the loader path", style="yellow")))
    if diag.driver_cuda:
        rows.append(
            (
                "driver implements",
                f"CUDA {diag.driver_cuda} (from {diag.driver_cuda_from}); its JIT compiles "
                f"PTX ISA up to {diag.max_ptx_isa or '?'}",
            )
        )
    return rows


def _runtime_rows(stack: Stack, diag: Diagnosis) -> list[Row]:
    rows: list[Row] = [
        (
            f"CUDA runtime{' (in use)' if r is diag.runtime_in_use else ''}",
            f"{r.version or '?'}  {r.path}  [{r.found_via}{', ' + r.distribution if r.distribution else ''}]",
        )
        for r in stack.runtimes
    ]
    return rows or [("CUDA runtime", Text("none found", style="yellow"))]


def _tool_rows(stack: Stack, diag: Diagnosis) -> list[Row]:
    """nvcc, torch, frameworks' ptxas, the environment's switches, the JIT cache."""
    n, t = stack.nvcc, stack.torch
    rows: list[Row] = [
        ("nvcc (toolkit)", f"{n.version or '?'}  {n.path}" if n else Text("not on PATH", style="dim"))
    ]
    if t:
        archs = " ".join(t.archs) if t.archs else "(arch list not read)"
        rows.append(
            ("torch", f"{t.version}, torch.version.cuda {t.cuda or 'None (CPU build)'}, archs {archs}")
        )
    rows += [(f"{p.framework} ptxas", f"{p.version or '?'}  {p.path}  [{p.via}]") for p in stack.ptxas]
    rows += [(f"env {sw.name}", f"{sw.value}  ({sw.effect})") for sw in stack.env]
    if diag.jit_cache is not None:
        rows.append(("JIT cache", jit_cache_line(diag.jit_cache)))
    return rows


def jit_cache_line(c: JitCache) -> Text:
    """'~/.nv/ComputeCache (default), writable, up to 1.1 GB (driver default)'; yellow when the
    JIT repeats at every start."""
    size = f"up to {size_text(c.maxsize, binary=True)} ({c.maxsize_from})"
    state = "writable" if c.writable else f"NOT writable: {c.why}"
    if c.writable and c.why:
        state += f", {c.why}"
    text = f"{c.path} ({c.path_from}), {state}, {size}"
    if c.disabled:
        text = f"disabled (CUDA_CACHE_DISABLE=1): PTX is compiled at every start; {text}"
    return Text(text, style="yellow" if not c.usable or c.tmpfs else "")


def render_doctor(stack: Stack, diag: Diagnosis, color: bool = False, width: int | None = None) -> str:
    out: list = [_layers(stack, diag), Text("")]
    for i, c in enumerate(diag.conditions, 1):
        word, style = _MARK.get(c.status, ("unknown", "yellow"))
        line = Text(f"condition {i} ")
        line.append(f"[{word}]", style=style)
        line.append(f" {c.rule}: {c.text}")
        out.append(line)
    for w in diag.warnings:
        out.append(Text(f"warning ({w.code}): {w.text}", style="yellow"))
    for m in stack.missing:
        out.append(Text(f"missing: {m}", style="dim"))
    return render(out, color, width)
