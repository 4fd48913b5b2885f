"""The release policy a gate enforces, from ``[tool.fatbin-inspect]`` in pyproject.toml and flags.

Precedence, lowest first: defaults, the file's top level, the file's ``[[...overrides]]`` whose
``match`` glob fits the artifact (path, file name or distribution name), command-line flags.

Semantics follow EasyBuild's CUDA sanity check: a required arch needs device code (SASS) that
loads on it; PTX only counts in its place with ``ptx-counts`` (EasyBuild: accept-ptx-as-devcode);
``require-ptx`` asks for PTX of the newest required arch (EasyBuild checks it unless
accept-missing-ptx); SASS for archs not required is "surplus" and reported only with
``allow-surplus = false`` (EasyBuild's strict mode); ``ignore`` globs skip files.

    [tool.fatbin-inspect]
    require = ["sm_80", "sm_90", "sm_100", "sm_120"]
    require-ptx = true
    forbid = ["sm_50"]
    gpus = ["H100", "RTX 5090"]
    min-driver = "535"
    ignore = ["*/libcudart.so*"]
    targets = [{ name = "ci-a100", gpu = "A100", driver = "535" }, "fleet/doctor-*.json"]
    disable = ["FBI007"]
    severity = { FBI006 = "error" }
    max-jit-seconds = 60   # FBI021 when a GPU target's JIT is estimated longer (off by default)

    [[tool.fatbin-inspect.overrides]]
    match = "*cuda11*"
    require = ["sm_70", "sm_80"]
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fatbin_inspect.containers.wheel import canonicalize_name, wheel_name

if TYPE_CHECKING:
    from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.errors import InputError, UsageError
from fatbin_inspect.formats import documents
from fatbin_inspect.release.findings import FAIL_LEVELS, RULE_BY_ID, SEVERITIES

SECTION = "fatbin-inspect"


@dataclass(frozen=True)
class Override:
    match: tuple[str, ...]  # globs tried on the artifact path, its file name and its distribution name
    values: tuple[tuple[str, Any], ...]  # normalized policy fields

    def applies(self, path: str, distribution: str | None) -> bool:
        names = [path, os.path.basename(path.replace("!", "/"))]
        if not distribution:
            return any(fnmatch.fnmatchcase(n, g) for g in self.match for n in names)
        # distribution names are canonical ("onnxruntime-gpu"): a glob spelled like the wheel
        # file ("onnxruntime_gpu*") matches them too
        dist = [distribution, distribution.split()[0]]
        return any(fnmatch.fnmatchcase(n, g) for g in self.match for n in names) or any(
            fnmatch.fnmatchcase(n, canonicalize_name(g)) for g in self.match for n in dist
        )


@dataclass(frozen=True)
class Policy:
    require: tuple[str, ...] = ()  # normalized SASS archs: sm_80, sm_90a, sm_100f
    ptx_counts: bool = False  # JIT-able PTX satisfies a required arch (as a note, FBI002)
    require_exact: bool = False  # a required arch needs a cubin built for exactly it (FBI016)
    require_ptx: bool = False  # PTX for the newest required arch (FBI006)
    forbid: tuple[str, ...] = ()  # sm_XX / compute_XX archs that must not appear (FBI007 error)
    allow_surplus: bool = True  # False: SASS for archs not in `require` is FBI007 (warning)
    gpus: tuple[str, ...] = ()  # GPU names for the compatibility engine (FBI001-FBI004)
    min_driver: str | None = None  # "535", "550.54.14": oldest driver the release supports
    ignore: tuple[str, ...] = ()  # globs over artifact paths and file names
    severity: tuple[tuple[str, str], ...] = ()  # (rule id, severity) re-grades
    disable: tuple[str, ...] = ()  # rule ids never reported
    fail_on: str = "error"
    max_jit_seconds: float | None = None  # FBI021: the JIT on a target estimated longer (R-JIT-COST)
    # fleet targets: {name, gpu, driver} tables as sorted item tuples, or file globs (the CLI reads them)
    targets: tuple[str | tuple[tuple[str, Any], ...], ...] = ()
    overrides: tuple[Override, ...] = ()
    source: str | None = None  # the pyproject.toml read, for messages

    def for_artifact(
        self, path: str, distribution: str | None = None, flags: Mapping[str, Any] | None = None
    ) -> Policy:
        """This policy with the matching overrides applied, then ``flags`` again on top."""
        pol = self
        for ov in self.overrides:
            if ov.applies(path, distribution):
                pol = dataclasses.replace(pol, **dict(ov.values))
        if flags:
            pol = dataclasses.replace(pol, **dict(flags))
        return pol

    def ignored(self, path: str) -> bool:
        base = os.path.basename(path.replace("!", "/"))
        member = path.split("!", 1)[1] if "!" in path else None
        return any(fnmatch.fnmatchcase(n, g) for g in self.ignore for n in (path, base, member) if n)

    def grade(self, rule_id: str, severity: str) -> str | None:
        """The severity to report ``rule_id`` at, or None when the rule is disabled."""
        if rule_id in self.disable:
            return None
        return dict(self.severity).get(rule_id, severity)


def distribution_of(report: FileReport) -> str | None:
    """``report.distribution`` (set by scan), else "name version" from a wheel file name in the path."""
    if report.distribution:
        return report.distribution
    for part in report.path.split("!"):
        dist = wheel_name(part)
        if dist is not None:
            return dist.label
    return None


# ---------------------------------------------------------------------------------- arch names
_ARCH = re.compile(r"^(?:(sm|compute)_)?(\d+)(?:\.(\d+))?([af]?)$")


def normalize_arch(text: str, where: str = "arch") -> str:
    """``sm_90a``, ``90a``, ``9.0a`` -> ``sm_90a``; ``compute_120f`` stays PTX. UsageError otherwise."""
    m = _ARCH.match(text.strip().lower()) if len(text) <= 40 else None
    if not m:
        raise UsageError(
            f"{where}: not an architecture: {text[:40]!r} (expected e.g. sm_90, sm_100a, 8.6, 120f)"
        )
    prefix, major, minor, variant = m.groups()
    sm = int(major) * 10 + int(minor) if minor is not None else int(major)
    if minor is not None and int(minor) > 9:
        raise UsageError(f"{where}: not an architecture: {text!r}")
    if variant and sm < 90:
        raise UsageError(f"{where}: {text!r}: 'a' targets start at sm_90, 'f' targets at sm_100")
    arch = f"{prefix or 'sm'}_{sm}{variant}"
    if sm >= 30 and not _known_sm(sm, variant):
        raise UsageError(
            f"{where}: {text!r}: no CUDA toolkit or GPU in the data has {arch} (e.g. sm_80, sm_90a, sm_120)"
        )
    return arch


def _known_sm(sm: int, variant: str) -> bool:
    """An architecture some toolkit builds for or some GPU has (``sm_800`` is neither; Fermi's
    sm_20/21, older than the data's toolkits, are not checked)."""
    from fatbin_inspect.compat import data

    if data.toolkits_targeting(f"sm_{sm}{variant}"):
        return True
    return any(data.parse_cc(g["compute_capability"]) == (sm // 10, sm % 10) for g in data.gpus())


def split_arch(arch: str) -> tuple[str, int, str]:
    """``sm_100a`` -> ("sm", 100, "a")."""
    prefix, _, rest = arch.partition("_")
    variant = rest[-1] if rest[-1] in "af" else ""
    return prefix, int(rest.rstrip("af")), variant


def arch_list(value: Any, where: str) -> tuple[str, ...]:
    """A list, or a comma/space separated string, of arch names -> normalized, deduplicated."""
    items = value.replace(",", " ").split() if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise UsageError(f"{where}: expected a list of architectures")
    out = []
    for it in items:
        if isinstance(it, bool) or not isinstance(it, (str, int, float)):
            raise UsageError(f"{where}: expected architecture names, not a {type(it).__name__}")
        a = normalize_arch(str(it), where)
        if a not in out:
            out.append(a)
    return tuple(out)


# ------------------------------------------------------------------------------------ reading
_KEYS = {f.name for f in dataclasses.fields(Policy)} - {"overrides", "source"}


def normalize(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Validate raw TOML/flag values (kebab or snake case keys) into Policy field values."""
    out: dict[str, Any] = {}
    for raw_key, val in values.items():
        key = raw_key.replace("-", "_") if isinstance(raw_key, str) else raw_key
        if key not in _KEYS:
            raise UsageError(
                f"{where}: unknown key {str(raw_key)[:60]!r} (known: "
                f"{', '.join(sorted(k.replace('_', '-') for k in _KEYS | {'overrides'}))})"
            )
        here = f"{where}: {raw_key}"
        try:
            out[key] = VALIDATORS[key](val, here)
        except (TypeError, ValueError, AttributeError):  # a value of a shape no validator expects
            raise UsageError(f"{here}: unexpected {type(val).__name__} value") from None
    return out


def _bool(val: Any, here: str) -> bool:
    if not isinstance(val, bool):
        raise UsageError(f"{here}: expected true or false")
    return val


def _strings(val: Any, here: str) -> tuple[str, ...]:
    """A list of strings, or one comma-separated string; blanks dropped."""
    items = val.split(",") if isinstance(val, str) else val
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise UsageError(f"{here}: expected a list of strings")
    return tuple(i.strip() for i in items if i.strip())


def _driver_version(val: Any, here: str) -> str:
    if isinstance(val, bool) or not isinstance(val, (str, int)):
        raise UsageError(f"{here}: expected a driver version like 535 or 550.54.14")
    if not re.fullmatch(r"\d+(\.\d+)*", str(val).strip()):
        raise UsageError(f"{here}: expected a driver version like 535 or 550.54.14")
    return str(val).strip()


def _seconds(val: Any, here: str) -> float:
    if isinstance(val, bool) or not isinstance(val, (int, float, str)):
        raise UsageError(f"{here}: expected a number of seconds, e.g. 60")
    try:
        out = float(val)
    except ValueError:
        raise UsageError(f"{here}: expected a number of seconds, e.g. 60") from None
    if not out >= 0 or out == float("inf"):
        raise UsageError(f"{here}: expected a number of seconds >= 0")
    return out


def _fail_level(val: Any, here: str) -> str:
    if not isinstance(val, str) or val not in FAIL_LEVELS:
        raise UsageError(f"{here}: expected one of {', '.join(FAIL_LEVELS)}")
    return val


def _rule_ids(val: Any, here: str) -> tuple[str, ...]:
    items = val.replace(",", " ").split() if isinstance(val, str) else val
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise UsageError(f"{here}: expected a list of rule ids (FBI001...)")
    return tuple(_rule_id(i, here) for i in items)


def _severities(val: Any, here: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(val, Mapping):
        raise UsageError(f"{here}: expected a table of rule id = severity")
    grades = []
    for rid, sev in val.items():
        if not isinstance(sev, str) or sev not in SEVERITIES:
            raise UsageError(f"{here}.{rid}: expected one of {', '.join(SEVERITIES)}")
        grades.append((_rule_id(rid, here), sev))
    return tuple(grades)


def _targets(val: Any, where: str) -> tuple[str | tuple[tuple[str, Any], ...], ...]:
    """Fleet targets: ``{name, gpu, driver}`` tables and globs of ``--targets`` files."""
    items = [val] if isinstance(val, str) else val
    if not isinstance(items, (list, tuple)):
        raise UsageError(f"{where}: expected a list of {{name, gpu, driver}} tables or file globs")
    out: list[str | tuple[tuple[str, Any], ...]] = []
    for i, it in enumerate(items):
        if isinstance(it, str) and it.strip():
            out.append(it.strip())
        elif isinstance(it, Mapping):
            if not all(isinstance(k, str) for k in it):
                raise UsageError(f"{where}[{i}]: expected a {{name, gpu, driver}} table")
            out.append(tuple(sorted(it.items())))
        elif isinstance(it, tuple):
            out.append(it)
        else:
            raise UsageError(f"{where}[{i}]: expected a {{name, gpu, driver}} table or a file glob")
    return tuple(out)


def _rule_id(text: Any, where: str) -> str:
    rid = str(text).strip().upper()
    if rid not in RULE_BY_ID:
        raise UsageError(f"{where}: unknown rule id {text!r}")
    return rid


# one validator per Policy field: raw TOML/flag value, "where: key" -> the field's value
VALIDATORS: dict[str, Callable[[Any, str], Any]] = {
    "require": arch_list,
    "forbid": arch_list,
    "ptx_counts": _bool,
    "require_exact": _bool,
    "require_ptx": _bool,
    "allow_surplus": _bool,
    "gpus": _strings,
    "ignore": _strings,
    "min_driver": _driver_version,
    "targets": _targets,
    "fail_on": _fail_level,
    "max_jit_seconds": _seconds,
    "disable": _rule_ids,
    "severity": _severities,
}


def from_mapping(section: Mapping[str, Any], source: str | None = None) -> Policy:
    """A Policy from the ``[tool.fatbin-inspect]`` table (already parsed)."""
    where = f"{source or 'pyproject.toml'} [tool.{SECTION}]"
    values = dict(section)
    raw_overrides = values.pop("overrides", [])
    if not isinstance(raw_overrides, list):
        raise UsageError(f"{where}: overrides: expected [[tool.{SECTION}.overrides]] tables")
    overrides = []
    for i, ov in enumerate(raw_overrides):
        if not isinstance(ov, Mapping):
            raise UsageError(f"{where}: overrides[{i}]: expected a [[tool.{SECTION}.overrides]] table")
        ov = dict(ov)
        match = ov.pop("match", None)
        if isinstance(match, str):
            match = [match]
        if not match or not all(isinstance(m, str) for m in match):
            raise UsageError(f'{where}: overrides[{i}]: needs match = "GLOB" (or a list of globs)')
        body = normalize(ov, f"{where} overrides[{i}]")
        overrides.append(Override(tuple(match), tuple(body.items())))
    return Policy(**normalize(values, where), overrides=tuple(overrides), source=source)


def _ignore(message: str) -> None:
    """The default ``warn``: the library is silent; the command line passes its ``say``."""


def untrusted(path: str, st: os.stat_result | None = None) -> str | None:
    """Why a found ``pyproject.toml`` is not read, or None: it must belong to this user (or to
    root) and be writable by no one else, as ssh asks of its configuration."""
    try:
        st = st or os.stat(path)
    except OSError:
        return None
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid is not None and st.st_uid not in (uid, 0):
        return f"owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "writable by other users"
    return None


def find_pyproject(start: str = ".", warn: Callable[[str], None] = _ignore) -> str | None:
    """The pyproject.toml whose ``[tool.fatbin-inspect]`` applies at ``start``: the nearest one
    at or above it that has the table, looking no higher than the project root, the first folder
    that holds a ``.git`` (a folder planted above the checkout cannot change a verdict). A file
    owned by another user or writable by others is skipped with a ``warn`` note (docs/ci.md)."""
    d = os.path.abspath(start)
    while True:
        cand = os.path.join(d, "pyproject.toml")
        try:
            st: os.stat_result | None = os.stat(cand)
        except OSError:
            st = None
        if st is not None:
            why = untrusted(cand, st) if stat.S_ISREG(st.st_mode) else "not a regular file"
            if why is not None:
                warn(f"{cand}: not read: {why}")
            elif read_section(cand):
                return cand
        if os.path.exists(os.path.join(d, ".git")):
            return None
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def read_section(path: str) -> dict[str, Any]:
    """``[tool.fatbin-inspect]`` of a TOML file ({} when absent), read under the bounds of
    ``formats.documents`` (a FIFO or a device is refused unread, 4 MiB at most, no NaN, no
    nesting past 64); every problem is a UsageError naming the file and key."""
    try:
        doc = documents.loads_toml(documents.read_text(path, documents.CONFIG_BYTES))
    except InputError as exc:
        raise UsageError(f"{path}: {exc}") from None
    tool = doc.get("tool", {})
    if not isinstance(tool, dict):
        raise UsageError(f"{path}: tool: expected a table ([tool.{SECTION}])")
    section = tool.get(SECTION, {})
    if not isinstance(section, dict):
        raise UsageError(f"{path}: [tool.{SECTION}] must be a table")
    return section


def load(
    config: str | None = None,
    flags: Mapping[str, Any] | None = None,
    search_from: str = ".",
    warn: Callable[[str], None] = _ignore,
) -> tuple[Policy, dict[str, Any]]:
    """(policy from the file with flags on top, normalized flags to reapply after overrides).

    ``config``: an explicit TOML file; None looks for the project's pyproject.toml
    (``find_pyproject``); "" reads none. ``flags``: values given on the command line (None values
    are "not given"). ``Policy.source`` names the file read (None: none).
    """
    path = find_pyproject(search_from, warn) if config is None else (config or None)
    base = from_mapping(read_section(path), path) if path else Policy()
    given = normalize({k: v for k, v in (flags or {}).items() if v is not None}, "command line")
    return dataclasses.replace(base, **given), given
