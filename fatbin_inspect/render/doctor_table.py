"""``doctor`` as text: one layer of the CUDA stack a line, then the conditions and the warnings."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from fatbin_inspect.compat.jit import size_text
from fatbin_inspect.render.console import render
from fatbin_inspect.system.diagnose import FAIL, OK, Diagnosis, JitCache
from fatbin_inspect.system.stack import Stack

_MARK = {OK: ("ok", "green"), FAIL: ("FAIL", "red")}


def _layers(stack: Stack, diag: Diagnosis) -> Table:
    tab = Table(box=None, pad_edge=False, show_header=False)
    tab.add_column("layer", style="bold")
    tab.add_column("what")
    for g in stack.gpus:
        tab.add_row(
            f"GPU {g.index}",
            f"{g.name}, compute capability {g.cc}"
            + (", Tegra iGPU" if g.tegra else "")
            + f"  [{stack.gpu_source}]",
        )
    if not stack.gpus:
        tab.add_row("GPU", Text("none found", style="yellow"))
    k = stack.kernel_driver
    tab.add_row("kernel driver", f"{k.version}  [{k.source}]" if k else Text("none", style="yellow"))
    u = stack.user_driver
    if u:
        api = (
            f"Driver API CUDA {u.api_version // 1000}.{u.api_version % 1000 // 10}"
            if u.api_version
            else f"Driver API version unknown ({u.error})"
        )
        tab.add_row("libcuda (user-mode driver)", f"{u.path}{f' build {u.build}' if u.build else ''}, {api}")
    else:
        tab.add_row("libcuda (user-mode driver)", Text("not on the loader path", style="yellow"))
    if diag.driver_cuda:
        tab.add_row(
            "driver implements",
            f"CUDA {diag.driver_cuda} (from {diag.driver_cuda_from}); its JIT compiles "
            f"PTX ISA up to {diag.max_ptx_isa or '?'}",
        )
    for r in stack.runtimes:
        use = " (in use)" if r is diag.runtime_in_use else ""
        tab.add_row(
            f"CUDA runtime{use}",
            f"{r.version or '?'}  {r.path}  [{r.found_via}{', ' + r.distribution if r.distribution else ''}]",
        )
    if not stack.runtimes:
        tab.add_row("CUDA runtime", Text("none found", style="yellow"))
    n = stack.nvcc
    tab.add_row("nvcc (toolkit)", f"{n.version or '?'}  {n.path}" if n else Text("not on PATH", style="dim"))
    t = stack.torch
    if t:
        archs = " ".join(t.archs) if t.archs else "(arch list not read)"
        tab.add_row("torch", f"{t.version}, torch.version.cuda {t.cuda or 'None (CPU build)'}, archs {archs}")
    for p in stack.ptxas:
        tab.add_row(f"{p.framework} ptxas", f"{p.version or '?'}  {p.path}  [{p.via}]")
    for sw in stack.env:
        tab.add_row(f"env {sw.name}", f"{sw.value}  ({sw.effect})")
    if diag.jit_cache is not None:
        tab.add_row("JIT cache", jit_cache_line(diag.jit_cache))
    return tab


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
