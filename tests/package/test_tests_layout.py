"""The tests' own layout (README, Development): a test module never imports another test module
nor the ``tests`` package (plain ``pytest`` does not put the repository root on ``sys.path``, so
``from tests.x import`` stops collection, and ``from test_x import`` works only beside that
module); shared helpers live in ``tests/`` root modules or ``conftest.py``, imported by name."""

from __future__ import annotations

import ast
import pathlib

from conftest import TESTS


def _test_modules() -> list[pathlib.Path]:
    return sorted(pathlib.Path(TESTS).glob("**/test_*.py"))


def _imported(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_no_test_module_imports_another():
    modules = _test_modules()
    assert len(modules) > 50  # the glob found the layer folders
    bad = []
    for path in modules:
        for name in _imported(ast.parse(path.read_text(encoding="utf-8"))):
            first = name.partition(".")[0]
            if first.startswith("test_") or first == "tests":
                bad.append(f"{path.relative_to(TESTS)} imports {name}")
    assert bad == [], "move what they share into a tests/ root module:\n" + "\n".join(bad)
