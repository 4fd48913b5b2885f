"""Packaged compatibility data (``fatbin_inspect/data/*.json``), loaded once and never mutated.

Each file keeps the ``sources`` and ``as_of`` of ``shared/data``; adding a GPU, a driver branch or
a toolkit is a data change only. Numbers that the JSON writes as text ("470 (Jetson: ...)",
"11.0 (sm_101 before 13.0)") are read by their leading number.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

from fatbin_inspect.errors import DataError

CC = tuple[int, int]


@cache
def load(name: str) -> dict[str, Any]:
    try:
        text = resources.files("fatbin_inspect").joinpath("data", f"{name}.json").read_text("utf-8")
        return json.loads(text)
    except (OSError, ValueError) as exc:
        raise DataError(f"packaged data {name}.json is missing or corrupt: {exc}") from None


def parse_cc(text: str) -> CC:
    """``"8.9"`` or ``"11.0 (sm_101 before 13.0)"`` -> (8, 9)."""
    m = re.match(r"\s*(\d+)\.(\d+)", text)
    if not m:
        raise DataError(f"not a compute capability: {text!r}")
    return int(m.group(1)), int(m.group(2))


def leading_int(text: str) -> int:
    m = re.match(r"\s*(\d+)", str(text))
    if not m:
        raise DataError(f"no number in {text!r}")
    return int(m.group(1))


def version_tuple(text: str) -> tuple[int, ...]:
    """``"550.54.14"`` -> (550, 54, 14); ``">=525.60.13"`` -> (525, 60, 13)."""
    return tuple(int(p) for p in re.findall(r"\d+", text))


def gpus() -> list[dict[str, Any]]:
    return load("gpus")["gpus"]


def branches() -> list[dict[str, Any]]:
    """Driver branches, oldest first."""
    return sorted(load("drivers")["branches"], key=lambda b: int(b["branch"]))


def toolkits() -> list[dict[str, Any]]:
    return sorted(load("toolkits")["toolkits"], key=lambda t: version_tuple(t["version"]))


def errors() -> list[dict[str, Any]]:
    return load("errors")["errors"]


def error_by_number(number: int) -> dict[str, Any] | None:
    return next((e for e in errors() if e["number"] == number), None)


def tegra_ccs() -> tuple[CC, ...]:
    return tuple(parse_cc(c) for c in load("target_rules")["sass_rules"]["tegra_exact_only_ccs"])


def family_members(sm: int) -> tuple[CC, ...] | None:
    """CCs that ``compute_<sm>f`` (and an ``sm_<sm>f`` cubin) serve; None when the data has no row."""
    row = load("target_rules")["family_members"].get(f"compute_{sm}f")
    return None if row is None else tuple(parse_cc(c) for c in row)


def first_branch_for_cc(cc: CC) -> int | None:
    for row in load("drivers")["first_branch_for_cc_derived"]:
        if parse_cc(row["cc"]) == cc:
            return leading_int(row["first_branch"])
    return None


def last_branch_for_architecture(architecture: str) -> int | None:
    for row in load("drivers")["last_branch_supporting"]:
        if architecture in row.get("architectures", ()):
            return leading_int(row["last_branch"])
    return None


def mvc_floor(major: int) -> tuple[int, ...] | None:
    """Linux driver floor under minor-version compatibility for runtime family ``major`` (11+)."""
    for t in toolkits():
        if version_tuple(t["version"])[0] == major:
            floor = (t.get("min_driver_minor_version_compat") or {}).get("linux")
            if floor:
                return version_tuple(floor)
    return None


def toolkit_min_driver(version: tuple[int, int]) -> tuple[int, ...] | None:
    """Linux driver a pre-11 toolkit needs (no minor-version compatibility then): its oldest GA row."""
    for t in toolkits():
        if version_tuple(t["version"])[:2] == version:
            rows = [
                version_tuple(r["linux_x86_64_min_driver"])
                for r in t.get("driver_table", ())
                if re.match(r"\d", r.get("linux_x86_64_min_driver") or "")
            ]
            return min(rows) if rows else None
    return None


def toolkits_targeting(arch: str) -> list[str]:
    """Toolkit versions whose nvcc accepts ``arch`` (``sm_61``, ``compute_90a``)."""
    key = "sm_targets" if arch.startswith("sm_") else "compute_targets"
    return [t["version"] for t in toolkits() if arch in t.get(key, ())]
