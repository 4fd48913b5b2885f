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
        text = resources.files("fatbin_inspect").joinpath("data").joinpath(f"{name}.json").read_text("utf-8")
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


@cache  # packaged data never changes in a run; the engine asks per entry and target
def tegra_ccs() -> tuple[CC, ...]:
    return tuple(parse_cc(c) for c in load("target_rules")["sass_rules"]["tegra_exact_only_ccs"])


@cache  # packaged data never changes in a run; the engine asks per entry and target
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
    """The last branch that drives ``architecture``; None while current branches still do (Turing+)."""
    for row in load("drivers")["last_branch_supporting"]:
        if architecture in row.get("architectures", ()):
            return None if row["last_branch"] is None else leading_int(row["last_branch"])
    return None


def branch_row(branch: int) -> dict[str, Any] | None:
    return next((b for b in branches() if int(b["branch"]) == branch), None)


def branch_ended(row: dict[str, Any]) -> bool:
    """End of life reached by the data's ``as_of`` date ("ended", or a YYYY-MM before it)."""
    eol = row.get("end_of_life")
    if not eol:
        return False
    return eol == "ended" or eol < load("drivers")["as_of"][:7]


def windows_branch(number: int) -> int | None:
    """Linux branch of a Windows driver number (581 -> 580, 596 -> 595); None when none fits.

    The table in drivers.json is tried first, then the rule it states: the newest branch B <= N
    with N - B <= 4."""
    table = load("drivers")["windows_numbering"]
    for row in table["branches"]:
        if int(row["windows"]) == number:
            return int(row["branch"])
    fits = [int(b["branch"]) for b in branches() if 0 <= number - int(b["branch"]) <= 4]
    return max(fits) if fits else None


def jetson_release(text: str) -> dict[str, Any] | None:
    """The JetPack / L4T row for ``jetpack-6.2`` / ``l4t-36.4`` (the newest row under a prefix)."""
    m = re.fullmatch(r"\s*(jetpack|jp|l4t|r)[-_ ]?(\d+(?:\.\d+)*)\s*", text.lower())
    if not m:
        return None
    key = "l4t" if m.group(1) in ("l4t", "r") else "jetpack"
    want = version_tuple(m.group(2))
    rows = load("drivers")["jetson_releases"]["releases"]
    exact = [r for r in rows if version_tuple(r[key]) == want]
    under = [r for r in rows if version_tuple(r[key])[: len(want)] == want]
    found = exact or under
    return max(found, key=lambda r: version_tuple(r[key])) if found else None


def jetson_driver(version: str, jetson_gpu: bool = False) -> dict[str, Any] | None:
    """The ``driver_versions`` row of a number a Jetson's nvidia-smi prints (``540.4.0``: L4T 36.4,
    CUDA 12.6), None for any other number. Rows marked ``jetson_gpu_only`` (``580.00``, which is
    also desktop R580's branch) match only when the caller knows the GPU is a Jetson."""
    want = version_tuple(version)
    table = load("drivers")["jetson_releases"]
    for row in table["driver_versions"]["rows"]:
        if version_tuple(row["driver"]) == want and (jetson_gpu or not row.get("jetson_gpu_only")):
            return row
    return _by_line_rule(version, want, table)


def _by_line_rule(version: str, want: tuple[int, ...], table: dict[str, Any]) -> dict[str, Any] | None:
    """A number not listed, read by its JetPack line's numbering (``540.<L4T revision>.0``)."""
    line = next((r for r in table["driver_versions"]["lines"] if (int(r["branch"]),) == want[:1]), None)
    if line is None or len(want) < 2:
        return None
    l4t = f"{line['l4t_major']}.{want[1]}"  # the rule of the line: 540.<revision>.0 is L4T 36.<revision>
    same = _l4t_releases(table, version_tuple(l4t))
    rel = max(same or _l4t_releases(table, (int(line["l4t_major"]),)), key=lambda r: version_tuple(r["l4t"]))
    jetpack = rel["jetpack"] if same else f"{line['jetpack']}.x"
    return {"driver": version, "l4t": l4t, "jetpack": jetpack, "cuda": rel["cuda"], "by_rule": True}


def _l4t_releases(table: dict[str, Any], l4t: tuple[int, ...]) -> list[dict[str, Any]]:
    """The JetPack releases whose L4T version starts with ``l4t``."""
    return [r for r in table["releases"] if version_tuple(r["l4t"])[: len(l4t)] == l4t]


def jetson_line(jetpack: str, table: str = "upgrades") -> dict[str, Any] | None:
    """The JetPack line ``jetpack`` (``6.2``, ``7.2.1``, ``6.1 / 6.2``) belongs to in NVIDIA's
    upgrade-package table (``upgrades``) or in the modules each line supports (``platforms``): the
    longest listed version it starts with (``7.2`` before ``7``)."""
    want = version_tuple(jetpack.split("/")[0])
    drivers = load("drivers")
    lines = (
        drivers["forward_compat"]["jetson_matrix"]["lines"]
        if table == "upgrades"
        else drivers["jetson_releases"]["platforms"]["lines"]
    )
    fits = [r for r in lines if want[: len(version_tuple(r["jetpack"]))] == version_tuple(r["jetpack"])]
    return max(fits, key=lambda r: len(version_tuple(r["jetpack"])), default=None)


def forward_compat() -> dict[str, Any]:
    return load("drivers")["forward_compat"]


def fwd_cell(package_cuda: str, branch: int) -> str | None:
    """NVIDIA's forward-compatibility table for one package and kernel-driver branch: ``C``,
    ``X``, ``N/A``, ``unlisted`` (a branch the table has no column for), or None when the table has
    no row for the package (docs/compatibility.md R-FWD)."""
    matrix = forward_compat()["matrix"]
    row = matrix["packages"].get(package_cuda)
    if row is None:
        return None
    return row.get(str(branch), "unlisted")


def tile_ir() -> dict[str, Any]:
    return load("target_rules")["tile_ir"]


def mvc_floor(major: int, platform: str = "linux") -> tuple[int, ...] | None:
    """Driver floor under minor-version compatibility for runtime family ``major`` (11+), on Linux
    or on Windows (whose numbers differ: 12.x needs 527.41 there, 525.60.13 on Linux)."""
    if platform == "windows":
        floor = load("drivers")["windows_numbering"]["family_floors"].get(str(major))
        return version_tuple(floor) if floor else None
    for t in toolkits():
        if version_tuple(t["version"])[0] == major:
            floor = (t.get("min_driver_minor_version_compat") or {}).get("linux")
            if floor:
                return version_tuple(floor)
    return None


def toolkit_min_driver(version: tuple[int, int], platform: str = "linux") -> tuple[int, ...] | None:
    """Driver a pre-11 toolkit needs (no minor-version compatibility then): its oldest GA row."""
    key = "windows_x86_64_min_driver" if platform == "windows" else "linux_x86_64_min_driver"
    for t in toolkits():
        if version_tuple(t["version"])[:2] == version:
            rows = [
                version_tuple(r[key]) for r in t.get("driver_table", ()) if re.match(r"\d", r.get(key) or "")
            ]
            return min(rows) if rows else None
    return None


def toolkits_targeting(arch: str) -> list[str]:
    """Toolkit versions whose nvcc accepts ``arch`` (``sm_61``, ``compute_90a``)."""
    key = "sm_targets" if arch.startswith("sm_") else "compute_targets"
    return [t["version"] for t in toolkits() if arch in t.get(key, ())]


def host_archs(name: str, segment: str | None, tegra: bool) -> tuple[str, ...] | None:
    """The CPU architectures of the hosts a GPU is sold in (``hosts.json``); None: either kind."""
    for rule in load("hosts")["rules"]:
        if (
            ("tegra" in rule and rule["tegra"] == tegra)
            or ("segment" in rule and rule["segment"] == segment)
            or any(name.startswith(p) for p in rule.get("name_prefixes", ()))
        ):
            return tuple(rule["hosts"])
    return None


def rule_ids() -> dict[str, str]:
    """The one table of rule ids (``errors.json`` ``rule_ids``: id -> what it covers): the engine,
    the data, ``explain``, ``check`` and docs/compatibility.md use these ids and no others
    (tests/compat/test_rule_ids.py holds them equal)."""
    return dict(load("errors")["rule_ids"])
