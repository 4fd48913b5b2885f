"""Findings -> SARIF 2.1.0 (GitHub code scanning, Azure DevOps, VS Code SARIF viewer).

Every rule of the table is listed in ``tool.driver.rules`` (so ``ruleIndex`` is stable across
runs); each result points at the container file with ``region.startLine: 1`` (binaries have no
lines, and GitHub rejects results without a region) and names an archive member as a logical
location. ``partialFingerprints`` come from rule, artifact, target and arch, so alerts survive
message rewording.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from fatbin_inspect.release.findings import RULES, Finding, FindingsReport, Rule, split_path
from fatbin_inspect.render.json_encode import to_json
from fatbin_inspect.version import __version__

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/fatbin-inspect/fatbin-inspect"
FINGERPRINT_KEY = "fatbinInspect/v1"


def _name_bytes(text: str) -> bytes:
    """A file name's bytes: undecodable bytes (U+DC80..U+DCFF, ``surrogateescape``) as they were;
    any other lone surrogate (a ``"\ud800"`` from a package's JSON metadata) is no byte of any
    name and becomes U+FFFD rather than an encoding error that ends the report."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return _OTHER_SURROGATE.sub("\ufffd", text).encode("utf-8", "surrogateescape")


_OTHER_SURROGATE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def artifact_uri(path: str) -> str:
    """A relative path stays relative (SARIF viewers resolve it against the checkout)."""
    p = path.replace(os.sep, "/")
    if os.path.isabs(path):
        return "file://" + quote(_name_bytes(p if p.startswith("/") else "/" + p))
    return quote(_name_bytes(str(PurePosixPath(p))))  # the exact bytes of the name


def _rule(r: Rule) -> dict[str, Any]:
    return {
        "id": r.id,
        "name": r.name,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": r.help},
        "help": {"text": r.help, "markdown": f"**{r.summary}**\n\n{r.help}"},
        "helpUri": r.help_uri,
        "defaultConfiguration": {"level": r.severity},
        "properties": {"tags": ["cuda", "compatibility"]},
    }


def _result(f: Finding, index: int) -> dict[str, Any]:
    container, member = split_path(f.path)
    loc: dict[str, Any] = {
        "physicalLocation": {"artifactLocation": {"uri": artifact_uri(container)}, "region": {"startLine": 1}}
    }
    if member:
        loc["logicalLocations"] = [{"name": member, "fullyQualifiedName": f.path, "kind": "module"}]
    props = {
        k: v
        for k, v in (
            ("target", f.target),
            ("arch", f.arch),
            ("distribution", f.distribution),
            ("offset", f.offset),
        )
        if v is not None
    }
    res: dict[str, Any] = {
        "ruleId": f.rule_id,
        "ruleIndex": index,
        "level": f.severity,
        "message": {"text": f"{f.path}: {f.message}"},
        "locations": [loc],
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
    }
    if props:
        res["properties"] = props
    return res


def document(report: FindingsReport) -> dict[str, Any]:
    index = {r.id: i for i, r in enumerate(RULES)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "fatbin-inspect",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFO_URI,
                        "rules": [_rule(r) for r in RULES],
                    }
                },
                "automationDetails": {"id": f"fatbin-inspect/{report.command}/"},
                **({"properties": {"config": report.config}} if report.command == "gate" else {}),
                "results": [_result(f, index[f.rule_id]) for f in report.findings],
            }
        ],
    }


def render(report: FindingsReport, fail_on: str = "error", color: bool = False) -> str:
    return to_json(document(report), indent=2) + "\n"
