"""The in-repo documents that docstrings cite: every ``docs/format.md §N`` names a section that exists,
and no docstring cites the research files outside the repository."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = [
    *ROOT.glob("fatbin_inspect/**/*.py"),
    *ROOT.glob("tests/*.py"),
    *(p for p in ROOT.glob("scripts/*") if p.is_file()),  # (not a __pycache__ a run left)
]


def _sections(doc: str) -> set[str]:
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    return set(re.findall(r"^#+ (\d+(?:\.\d+)*)\.? ", text, re.M))


def test_section_citations_exist():
    known = {"format.md": _sections("format.md"), "compatibility.md": _sections("compatibility.md")}
    cited = []
    for path in SOURCES:
        for doc, refs in re.findall(
            r"docs/(format\.md|compatibility\.md) ((?:§[\d.-]+(?:, )?)+)", path.read_text()
        ):
            for ref in re.findall(r"§(\d+(?:\.\d+)?)", refs):
                cited.append((path.name, doc, ref))
    assert cited, "no citation found: the pattern is wrong"
    missing = [c for c in cited if c[2] not in known[c[1]]]
    assert not missing, missing


def test_rule_ids_in_the_code_are_documented():
    rules = (ROOT / "fatbin_inspect" / "compat" / "rules.py").read_text()
    doc = (ROOT / "docs" / "compatibility.md").read_text()
    ids = set(re.findall(r'"(R-[A-Z0-9-]+)"', rules))
    assert ids and not {i for i in ids if i not in doc}


def test_no_citation_of_files_outside_the_repository():
    bad = [
        p.name
        for p in SOURCES
        if p.name != "test_docs.py" and re.search(r"(?<![/\w])(FORMAT|COMPATIBILITY)\.md", p.read_text())
    ]
    assert not bad, bad
