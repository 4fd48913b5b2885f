"""Terminal rendering of ``check``: the targets, then one block per file and target."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from fatbin_inspect.compat import jit
from fatbin_inspect.compat.describe import coverage_line, device_line
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.compat.verdict import FileVerdict
from fatbin_inspect.formats.demangle import demangle
from fatbin_inspect.render import escape
from fatbin_inspect.render.console import Hanging, bounded, hang, render
from fatbin_inspect.render.wording import plural

STYLE = {"native": "green", "jit": "yellow", "fail": "bold red", "no-device-code": "dim", "link-time": "cyan"}
KERNELS_SHOWN = 5


def target_lines(targets: Sequence[Target]) -> list:
    out: list = [Text("Targets", style="bold")]
    for i, t in enumerate(targets):
        d = t.umd  # with a cuda-compat package: the CUDA of the package (R-FWD)
        umd = f" (user-mode R{d.branch})" if t.compat else ""
        line = escape.text(f"  [{i}] {t.label}: CUDA {d.cuda}{umd}, JIT up to PTX ISA {d.max_ptx_isa}")
        if t.gpu.tegra:
            line.append("  Tegra", style="cyan")
        env = [
            n
            for n, on in (
                ("CUDA_FORCE_PTX_JIT=1", t.force_ptx_jit),
                ("CUDA_DISABLE_PTX_JIT=1", t.disable_ptx_jit),
            )
            if on
        ]
        if env:
            line.append(f"  {' '.join(env)}", style="yellow")
        out.append(Hanging(line, 6))
        if d.note:
            out.append(hang("      note: ", d.note, style="yellow"))
    return out


def verdict_block(
    v: FileVerdict, index: int, kernels: bool, cache: jit.CacheSettings = jit.DEFAULT_CACHE
) -> list:
    out: list = [Hanging(_verdict_head(v, index), 4), hang("    ", v.reason)]
    out += coverage_lines(v)
    if v.device is not None:  # R-HOST: what the device code gives where the file loads
        out.append(hang("    device code: ", device_line(v.device), style=STYLE.get(v.device.verdict, "")))
    cost = jit.cost(v, cache)
    if cost is not None:
        out.append(hang("    ", jit.phrase(cost), style="yellow"))
    if v.runtime:
        out.append(hang("    runtime: ", f"CUDA {v.runtime.version} ({v.runtime.source})", style="dim"))
    out += _missing_kernels(v.missing_kernels, kernels)
    out += [hang("    note: ", n, style="yellow") for n in v.notes if n != v.target.driver.note]
    out += [hang("    fix: ", a, style="cyan") for a in v.advice]
    return out


def _verdict_head(v: FileVerdict, index: int) -> Text:
    """``PATH  on [I]  VERDICT  ERROR  ARCH (PTX ISA)  RULE  fatbins: ...``."""
    head = Text()
    head.append(v.path, style="bold")
    head.append(f"  on [{index}]  ")
    head.append(v.verdict.upper(), style=STYLE[v.verdict])
    if v.error:
        head.append(f"  {v.error.code} {v.error.name}", style="red")
    if v.chosen:
        head.append(f"  {v.chosen.arch}" + (f" (PTX ISA {v.chosen.ptx_isa})" if v.chosen.ptx_isa else ""))
    head.append(f"  {v.rule}", style="cyan")
    c = v.counts
    if sum(c.values()):
        head.append(f"  fatbins: {c['native']} native, {c['jit']} jit, {c['fail']} fail", style="dim")
    return head


def _missing_kernels(missing: Sequence[str], kernels: bool) -> list:
    """The kernels other images have and the loaded one lacks (all of them with ``--kernels``)."""
    if not missing:
        return []
    out: list = [
        Text(
            f"    {plural(len(missing), 'kernel')} without an image for this GPU (present for other architectures):",
            style="yellow",
        )
    ]
    shown, more = bounded(missing, None if kernels else KERNELS_SHOWN)
    out += [hang("      ", demangle(k) or k, style="dim") for k in shown]
    if more:
        out.append(Text(f"      {more}", style="dim"))
    return out


def coverage_lines(v: FileVerdict) -> list:
    """R-FILE in one line ("native (sm_90); 412 fatbins are specialised for other GPUs (sm_100 ×780 …)
    and are not used here"), then which kernels live only there, or how to find out."""
    line = coverage_line(v)
    if line is None:
        return []
    style = "bold red" if v.verdict == "fail" else "yellow"
    verdict = v.verdict + (f" ({v.chosen.arch})" if v.chosen else "")
    out: list = [hang(f"    coverage {v.coverage}: ", f"{verdict}; {line}", style=style)]
    groups = [
        (g, what)
        for g, what in (
            (v.specialised, "only in the specialised fatbins"),
            (v.gaps, "in the failing fatbins"),
        )
        if g
    ]
    if not v.kernels_analysed:
        out.append(
            hang(
                "    kernels: ",
                "not analysed (check --kernels names the kernels that live only there)",
                style="dim",
            )
        )
        return out
    out += [_kernels_only_line(g.kernels, what) for g, what in groups if g.kernels]
    return out


def _kernels_only_line(ks: Sequence[str], what: str) -> Hanging:
    names = ", ".join(demangle(k) or k for k in ks[:3])
    more = f" … {len(ks) - 3} more" if len(ks) > 3 else ""
    n = len(ks)
    return hang("    ", f"{plural(n, 'kernel')} exist{'s' * (n == 1)} {what}: {names}{more}", style="dim")


def render_check(
    targets: Sequence[Target],
    verdicts: Sequence[FileVerdict],
    color: bool = False,
    kernels: bool = False,
    width: int | None = None,
    cache: jit.CacheSettings = jit.DEFAULT_CACHE,
) -> str:
    """``cache``: the deployment's JIT cache (``--env CUDA_CACHE_*``), for the JIT phrase."""
    index = {t: i for i, t in enumerate(targets)}
    out: list = [*target_lines(targets), Text("")]
    for v in verdicts:
        out += verdict_block(v, index[v.target], kernels, cache)
    out += [Text(""), Text(f"{plural(len(verdicts), 'result')}: {verdict_counts(verdicts)}", style="bold")]
    return render(out, color, width)


def verdict_counts(verdicts: Sequence[FileVerdict]) -> str:
    """'3 native, 1 jit, 0 fail, 2 without device code' (link-time only when there are some)."""
    c = {k: sum(1 for v in verdicts if v.verdict == k) for k in STYLE}
    link = f", {c['link-time']} link-time" if c["link-time"] else ""
    return f"{c['native']} native, {c['jit']} jit, {c['fail']} fail{link}, {c['no-device-code']} without device code"
