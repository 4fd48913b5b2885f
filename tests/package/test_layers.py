"""The one-way layers, enforced: every import in every module (lazy ones inside functions too) may
only go to its own layer or one below it, and nothing below ``render`` prints.

Layer order, lowest first (the folder names under ``fatbin_inspect/``). ``scanning`` sits below
``release`` because the gate's findings carry a scan's ``scanning.coverage`` rows; ``system`` (probes of this machine)
sits above everything the engine needs, so only the library layer, the CLI (and ``verify``, which
runs images on the local GPU) can reach it: the engine gets probed GPUs and drivers handed in.
``judging`` is the library layer under the CLI and the API: it reads inputs, judges, gates.
"""

from __future__ import annotations

import ast
import pathlib

import pytest
from conftest import ROOT

PACKAGE = pathlib.Path(ROOT) / "fatbin_inspect"
LAYERS = (
    "version",  # the leaf module every layer may read
    "errors",
    "formats",
    "containers",
    "inventory",
    "compat",
    "scanning",
    "release",
    "system",
    "verify",
    "judging",
    "render",
    "cli",
    "",  # the package root: __init__, __main__ and the library API (api.py)
)
RANK = {name: i for i, name in enumerate(LAYERS)}
# the root package's own names that any layer may read (a constant, no code of a higher layer)
ROOT_CONSTANTS = {"__version__"}


def layer_of(module: str) -> str:
    """``fatbin_inspect.compat.engine`` -> ``compat``; the root package and ``__main__`` -> ``""``."""
    parts = module.split(".")[1:]
    if not parts or parts[0] not in RANK:
        return ""  # the root package, __main__ and the library API beside them
    return parts[0]


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        yield ".".join(rel.parts), path


def imports(path: pathlib.Path):
    """(line, imported module) for every ``import``/``from ... import`` of fatbin_inspect."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("fatbin_inspect"):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fatbin_inspect"):
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            if node.module == "fatbin_inspect":
                for alias in node.names:
                    if alias.name not in ROOT_CONSTANTS:
                        yield node.lineno, f"fatbin_inspect.{alias.name}"
            else:
                yield node.lineno, node.module


def test_every_package_folder_is_a_known_layer():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders <= set(LAYERS), f"place {folders - set(LAYERS)} in LAYERS"


@pytest.mark.parametrize("module,path", list(modules()), ids=lambda v: v if isinstance(v, str) else "")
def test_no_import_runs_upward(module, path):
    here = layer_of(module)
    upward = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {here or 'root'} imports {target}"
        for line, target in imports(path)
        if RANK[layer_of(target)] > RANK[here]
    ]
    assert not upward, "\n".join(upward)


# verify/child.py is the worker process whose stdout is the binary pipe to its parent
PRINTS_ALLOWED = {"render", "cli", ""}
PIPE_PROTOCOL = {"fatbin_inspect.verify.child"}


@pytest.mark.parametrize("module,path", list(modules()), ids=lambda v: v if isinstance(v, str) else "")
def test_nothing_below_render_prints(module, path):
    if layer_of(module) in PRINTS_ALLOWED or module in PIPE_PROTOCOL:
        return
    bad = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            bad.append(f"{node.lineno}: print()")
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("stdout", "stderr")
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            bad.append(f"{node.lineno}: sys.{node.attr}")
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            bad += [f"{node.lineno}: imports {n}" for n in names if n.split(".")[0] in ("click", "rich")]
    assert not bad, f"{module}: " + "; ".join(bad)


def test_an_upward_import_is_caught(tmp_path):
    """The checker itself: a compat module importing system is reported."""
    probe = tmp_path / "m.py"
    probe.write_text("def f():\n    from fatbin_inspect.system import stack\n")
    ((line, target),) = imports(probe)
    assert line == 2 and RANK[layer_of(target)] > RANK[layer_of("fatbin_inspect.compat.targets")]


def test_the_library_api_loads_no_command_line():
    """``fatbin_inspect.check()``, ``inspect()``, ``scan()`` and ``gate()`` run without click or any
    ``fatbin_inspect.cli`` module: the API stands on the library layer, not on the CLI."""
    import subprocess
    import sys

    fixtures = PACKAGE.parent / "fixtures" / "units"
    code = (
        "import sys, fatbin_inspect as fi\n"
        f"p = {str(fixtures)!r}\n"
        "fi.inspect(p); fi.check([p], gpus=['H100']); fi.scan([p], gpus=['H100'])\n"
        "fi.gate([p], require='sm_80')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'click' or m.startswith('fatbin_inspect.cli')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout


# what a plain listing of files to JSON never needs: the index client (its inputs are told by
# ``containers.index.is_index_input``, importing none of it), the engine (no targets), payload
# decoding and demangling (no --details or --kernels), rich (no table). Each is start-up time
# every listing would pay (bench_table.py row 6).
LISTING_NEVER_LOADS = (
    "fatbin_inspect.containers.index.",
    "fatbin_inspect.judging.index_inputs",
    "fatbin_inspect.compat",
    "fatbin_inspect.inventory.payloads",
    "fatbin_inspect.formats.demangle",
    "rich",
)


def test_a_plain_listing_loads_only_what_it_uses():
    """``list FILE --format json`` imports none of ``LISTING_NEVER_LOADS``."""
    import subprocess
    import sys

    exe = PACKAGE.parent / "fixtures" / "bin" / "t02_exe_sm75_sm80_sm90_c90"
    code = (
        "import sys\n"
        "from fatbin_inspect.cli.main import main\n"
        "try:\n"
        f"    main(['list', {str(exe)!r}, '--format', 'json', '-o', '/dev/null'])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = out.stdout.split()
    assert "fatbin_inspect.formats.fatbin" in loaded  # (the listing did read the file)
    assert [m for m in loaded if m.startswith(LISTING_NEVER_LOADS) or m == "rich"] == []


PURE_ENGINE_FORBIDS = ("zipfile", "tarfile", "mmap", "fatbin_inspect.containers", "fatbin_inspect.inventory")


@pytest.mark.parametrize(
    "module,path",
    [(m, p) for m, p in modules() if layer_of(m) == "compat"],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_the_engine_reads_no_files(module, path):
    """``compat/`` gets requirement lines, runtime facts and records as data (issue 21 step 3):
    it imports no archive or mapping module and nothing from the layers that read bytes."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        bad += [f"{node.lineno}: {n}" for n in names if n.startswith(PURE_ENGINE_FORBIDS)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            bad.append(f"{node.lineno}: open()")
    assert not bad, f"{module}: " + "; ".join(bad)


# cycles tolerated (issue 52 removed the last three: the containers package with its readers,
# compat.engine with gap_kernels, render.jsondump with inventory_json): none, so any cycle fails
KNOWN_CYCLES: tuple[set[str], ...] = ()


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (lazy imports too; a package is its ``__init__``)."""
    names = {m.removesuffix(".__init__"): path for m, path in modules()}
    graph: dict[str, set[str]] = {m: set() for m in names}
    for m, path in names.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            graph[m] |= {t for t in targets if t in names and t != m}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        x = stack.pop()
                        comp.add(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        found.append(comp)
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                work.append((w, iter(sorted(graph[w]))))
            elif w in stack:
                low[v] = min(low[v], index[w])
    return found


def test_no_new_import_cycle():
    """No module imports, through others, a module that imports it (lazy imports count: they
    close the cycle at run time), but for the cycles listed in ``KNOWN_CYCLES``."""
    known = [{f"fatbin_inspect.{m}" for m in c} for c in KNOWN_CYCLES]
    new = [sorted(c) for c in cycles(import_graph()) if not any(c <= k for k in known)]
    assert not new, new


def test_a_cycle_is_caught():
    """The checker itself: a cycle of two modules, one of three, and a module that only reaches one."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert sorted(sorted(c) for c in cycles(graph)) == [["a", "b"], ["c", "d", "e"]]
