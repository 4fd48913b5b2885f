"""The engine's three modules kept apart (issue 52 step 4): records (``compat.verdict``), decisions
(``compat.engine``), words (``compat.describe``). Renderers take words from ``describe`` and
records from ``verdict``, never from the engine, and no module of ``compat/`` imports one that
imports it back (the engine and ``gap_kernels`` did)."""

from __future__ import annotations

import ast
import pathlib

import pytest
from conftest import ROOT

PACKAGE = pathlib.Path(ROOT) / "fatbin_inspect"


def _imported(path: pathlib.Path) -> set[str]:
    """Every fatbin_inspect module ``path`` imports (lazy and TYPE_CHECKING imports too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fatbin_inspect"):
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("fatbin_inspect"))
    return out


def _compat_graph() -> dict[str, set[str]]:
    mods = {f"fatbin_inspect.compat.{p.stem}": p for p in (PACKAGE / "compat").glob("*.py")}
    return {m: _imported(p) & set(mods) for m, p in mods.items()}


def test_no_renderer_imports_the_engine() -> None:
    bad = [
        str(p.relative_to(PACKAGE))
        for p in sorted((PACKAGE / "render").rglob("*.py"))
        if "fatbin_inspect.compat.engine" in _imported(p)
    ]
    assert not bad, f"renderers importing compat.engine (use compat.describe/compat.verdict): {bad}"


def test_the_words_and_records_import_no_decisions() -> None:
    graph = _compat_graph()
    for module in (
        "fatbin_inspect.compat.describe",
        "fatbin_inspect.compat.verdict",
        "fatbin_inspect.compat.gap_kernels",
    ):
        assert not graph[module] & {
            "fatbin_inspect.compat.engine",
            "fatbin_inspect.compat.fatbin_decision",
        }, module


def test_compat_has_no_import_cycle() -> None:
    graph = _compat_graph()
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            assert state.get(n) != 1, " -> ".join([*path, m, n])
            if n not in state:
                visit(n, [*path, m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_a_cycle_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cycle search fails on the shape the split removed (engine <-> gap_kernels)."""
    fake = {"a": {"b"}, "b": {"a"}}
    monkeypatch.setitem(globals(), "_compat_graph", lambda: fake)
    with pytest.raises(AssertionError, match="a -> b -> a"):
        test_compat_has_no_import_cycle()
