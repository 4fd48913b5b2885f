"""The in-repo documents that docstrings cite: every ``docs/format.md §N`` names a section that exists,
and no docstring cites the research files outside the repository."""

from __future__ import annotations

import pathlib
import re

import conftest

ROOT = pathlib.Path(conftest.ROOT)
SOURCES = [
    *ROOT.glob("fatbin_inspect/**/*.py"),
    *ROOT.glob("tests/**/*.py"),
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


def _github_anchors(doc: str) -> set[str]:
    """The anchors GitHub gives the headings of ``doc`` (lower case, punctuation dropped, blanks
    as ``-``), as a ``#fbi001`` link finds them."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    out = set()
    for title in re.findall(r"^#+ (.+?)\s*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def test_every_rule_has_the_section_its_help_uri_names():
    from fatbin_inspect.release.findings import RULES, RULES_DOC, FindingsReport
    from fatbin_inspect.render.findings.sarif import document

    assert RULES_DOC.endswith("/docs/ci.md")
    anchors = _github_anchors("ci.md")
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    sarif_rules = document(FindingsReport("gate", ()))["runs"][0]["tool"]["driver"]["rules"]
    assert len(sarif_rules) == len(RULES) >= 18
    for r, s in zip(RULES, sarif_rules):
        uri = s["helpUri"]
        assert uri == f"{RULES_DOC}#{r.id.lower()}" and uri.split("#", 1)[1] in anchors, uri
        section = text.split(f"### {r.id}\n", 1)[1].split("\n### ", 1)[0]
        assert f"`{r.name}`" in section and f"**{r.severity}**" in section, r.id


def test_readme_and_ci_docs_install_from_the_repository():
    for doc in (ROOT / "README.md", ROOT / "docs" / "ci.md"):
        text = doc.read_text(encoding="utf-8")
        assert not re.search(r"pip install fatbin-inspect\b(?!\S)", text), doc  # not on PyPI yet
        assert "@v0.1.0" not in text and "rev: v0.1.0" not in text, doc  # no tag exists yet
        assert "upload-sarif@v" not in text, doc  # pinned by commit
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert len(quick.strip().splitlines()) == 2 and "pip install ." in quick and "'.[test]'" in quick
    assert (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").count("## [Unreleased]") == 1


def test_readme_names_every_format_of_every_command():
    """README's Output list gives each command's ``--format`` choices as ``render.VIEWS`` has
    them, in order, and names every command that has views."""
    from fatbin_inspect import render

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Output") :]
    section = section[: section.index("\n## ", 1)]
    listed: dict[str, str] = {}
    for names, choices in re.findall(r"^- ((?:`[a-z]+`(?:, )?)+): `([a-z|]+)`", section, re.M):
        for name in re.findall(r"`([a-z]+)`", names):
            listed[name] = choices
    assert listed == {c: "|".join(render.formats(c)) for c in render.VIEWS}
