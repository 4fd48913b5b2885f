"""What changed in the device code between two releases: archs and kernels added and dropped. Pure.

OLD and NEW are each a file, a wheel/archive or a directory. Files are matched by their path
inside the input: ``x-1.0.whl!pkg/lib.so`` and ``x-2.0.whl!pkg/lib.so`` are one file, as are
``old/lib/a.so`` and ``new/lib/a.so``; a wheel nested in an archive is keyed by its distribution
name (canonical, ``x.whl!pkg/lib.so``), so version numbers in file names do not break the match. Two single files are compared
with each other whatever their names. Kernels are compared by mangled name, over all images.

A library that a wheel repair tool renamed is the same library under another name: auditwheel
vendors ``libfoo.so.3`` as ``pkg.libs/libfoo-1e22bce9.so.3.24.0`` (8 hex digits of its hash),
delvewheel ``foo.dll`` as ``foo-<32 hex>.dll``, and the next release carries another hash and
often another soname version. A file left unmatched on each side is paired with the one of the
other side whose key is the same without hash and version (``pkg.libs/libfoo.so``), when that
pairing is unique on both sides; ``FileDiff.renamed_from`` keeps the old key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fatbin_inspect.containers.wheel import wheel_name
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, FileReport
from fatbin_inspect.release.findings import Check, Finding, FindingsReport, sort_key
from fatbin_inspect.release.policy import distribution_of, split_arch


@dataclass(frozen=True)
class FileDiff:
    key: str  # path inside the input, the match key
    old_path: str | None
    new_path: str | None
    distribution: str | None  # name only ("bitsandbytes"), versions differ by design
    archs_added: tuple[str, ...] = ()
    archs_dropped: tuple[str, ...] = ()
    kernels_added: tuple[str, ...] = ()
    kernels_dropped: tuple[str, ...] = ()
    renamed_from: str | None = None  # the old key of a library a wheel repair tool renamed

    @property
    def status(self) -> str:
        if self.old_path is None:
            return "added"
        if self.new_path is None:
            return "dropped"
        changed = self.archs_added or self.archs_dropped or self.kernels_added or self.kernels_dropped
        return "changed" if changed else "same"


@dataclass(frozen=True)
class DistDiff:
    name: str
    old_version: str | None
    new_version: str | None
    archs_old: tuple[str, ...]
    archs_new: tuple[str, ...]

    @property
    def archs_added(self) -> tuple[str, ...]:
        return tuple(a for a in self.archs_new if a not in self.archs_old)

    @property
    def archs_dropped(self) -> tuple[str, ...]:
        return tuple(a for a in self.archs_old if a not in self.archs_new)


@dataclass(frozen=True)
class DiffReport:
    old: str
    new: str
    files: tuple[FileDiff, ...]
    distributions: tuple[DistDiff, ...]


def arch_order(arch: str) -> tuple[int, int, str]:
    prefix, sm, variant = split_arch(arch)
    return ({"sm": 0, "compute": 1}.get(prefix, 2), sm, variant)


def archs_of(r: FileReport) -> tuple[str, ...]:
    """Archs of the images a driver can load (not the ``__nv_relfatbin`` copies of a linked file)."""
    from fatbin_inspect.release.requirements import counted_fatbins

    return tuple(
        sorted(
            {e.arch for fb in counted_fatbins(r) for e in fb.entries if e.kind in (KIND_SASS, KIND_PTX)},
            key=arch_order,
        )
    )


def kernels_of(r: FileReport) -> frozenset[str] | None:
    """Kernel names over all images; None when no entry was decoded for kernels."""
    if not any(e.kernels is not None for e in r.entries):
        return None
    return frozenset(k.name for e in r.entries if e.kind in (KIND_SASS, KIND_PTX) for k in (e.kernels or ()))


def match_key(path: str, root: str) -> str:
    """The path of ``path`` inside the input ``root`` (see the module docstring)."""
    if path == root:
        return "."
    if path.startswith(root + "!"):
        rest = path[len(root) + 1 :]
    else:
        rest = os.path.relpath(path.split("!", 1)[0], root).replace(os.sep, "/")
        rest += path[len(path.split("!", 1)[0]) :]
    return "!".join(_versionless(p) for p in rest.split("!"))


def _versionless(part: str) -> str:
    """``dist/torch-2.9.0-cp311-...whl`` -> ``dist/torch.whl``: the same wheel across versions."""
    dist = wheel_name(part)
    return part if dist is None else f"{os.path.dirname(part)}/{dist.name}.whl".lstrip("/")


def _index(reports: Iterable[FileReport], root: str) -> dict[str, FileReport]:
    return {match_key(r.path, root): r for r in reports if r.fatbins}


# a vendored library's name: stem, the repair tool's hash, the suffix and its version
_VENDORED = re.compile(
    r"^(?P<stem>.+?)(?:-[0-9a-f]{8}(?=\.so)|-[0-9a-f]{32}(?=\.dll$))(?P<ext>\.so|\.dll)(?:\.\d+)*$"
)
_VERSIONED = re.compile(r"^(?P<stem>.+?)(?P<ext>\.so)(?:\.\d+)+$")


def unhashed(key: str) -> str | None:
    """``w.whl!pkg.libs/libfoo-1e22bce9.so.3.24.0`` -> ``w.whl!pkg.libs/libfoo.so``; a plain
    ``libfoo.so.3`` -> ``libfoo.so``; None for a name neither tool nor soname versioning made."""
    head, sep, base = key.rpartition("/")
    if "!" in base:
        h2, _, base = base.rpartition("!")
        head, sep = head + sep + h2, "!"
    m = _VENDORED.match(base) or _VERSIONED.match(base)
    return f"{head}{sep}{m['stem']}{m['ext']}" if m else None


def renames(old_keys: Iterable[str], new_keys: Iterable[str]) -> dict[str, str]:
    """new key -> old key for the unmatched files that are one library renamed (see the module
    docstring): the same ``unhashed`` key, and no other file of either side with it."""

    def groups(keys: Iterable[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for k in keys:
            u = unhashed(k)
            if u is not None:
                out.setdefault(u, []).append(k)
        return out

    old, new = groups(old_keys), groups(new_keys)
    return {n[0]: old[u][0] for u, n in new.items() if len(n) == 1 and len(old.get(u, ())) == 1}


def diff(old: Iterable[FileReport], old_root: str, new: Iterable[FileReport], new_root: str) -> DiffReport:
    olds, news = _index(old, old_root), _index(new, new_root)
    renamed = renames(set(olds) - set(news), set(news) - set(olds))
    for new_key, old_key in renamed.items():
        olds[new_key] = olds.pop(old_key)
    files = [
        _file_diff(key, olds.get(key), news.get(key), renamed.get(key))
        for key in sorted(set(olds) | set(news))
    ]
    return DiffReport(old_root, new_root, tuple(files), _distributions(olds.values(), news.values()))


def _file_diff(key: str, o: FileReport | None, n: FileReport | None, renamed_from: str | None) -> FileDiff:
    """One file's change: added or dropped (one side only), else its archs and kernels."""
    either = n if n is not None else o  # (one of them is a record)
    dist = distribution_of(either) if either is not None else None
    name = dist.split()[0] if dist else None
    if o is None or n is None:
        return _one_sided(key, o, n, name)
    ao, an = archs_of(o), archs_of(n)
    kadd, kdrop = _kernel_changes(kernels_of(o), kernels_of(n))
    return FileDiff(
        key,
        o.path,
        n.path,
        name,
        tuple(a for a in an if a not in ao),
        tuple(a for a in ao if a not in an),
        kadd,
        kdrop,
        renamed_from,
    )


def _one_sided(key: str, o: FileReport | None, n: FileReport | None, name: str | None) -> FileDiff:
    """A file only one side has: every arch of it added or dropped."""
    return FileDiff(
        key,
        o.path if o else None,
        n.path if n else None,
        name,
        archs_added=archs_of(n) if n else (),
        archs_dropped=archs_of(o) if o else (),
    )


def _kernel_changes(
    ko: frozenset[str] | None, kn: frozenset[str] | None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(kernels added, kernels dropped); both empty when either side was not decoded."""
    if ko is None or kn is None:
        return (), ()
    return tuple(sorted(kn - ko)), tuple(sorted(ko - kn))


def _distributions(old: Iterable[FileReport], new: Iterable[FileReport]) -> tuple[DistDiff, ...]:
    acc: dict[str, dict[str, Any]] = {}
    for side, reports in (("old", old), ("new", new)):
        for r in reports:
            dist = distribution_of(r)
            if not dist:
                continue
            name, _, version = dist.partition(" ")
            row = acc.setdefault(name, {"old": set(), "new": set(), "old_v": None, "new_v": None})
            row[side] |= set(archs_of(r))
            row[f"{side}_v"] = version or None
    return tuple(
        DistDiff(
            name,
            row["old_v"],
            row["new_v"],
            tuple(sorted(row["old"], key=arch_order)),
            tuple(sorted(row["new"], key=arch_order)),
        )
        for name, row in sorted(acc.items())
    )


def findings(d: DiffReport) -> FindingsReport:
    """Drops as findings (FBI010 arch, FBI011 kernels, FBI012 file) for the findings renderers."""
    out: list[Finding] = []
    checks: list[Check] = []
    for f in d.files:
        path = f.new_path or f.old_path or f.key  # a file is on at least one side
        named = path if f.key == "." else f.key  # two files compared: the key is "."
        where = "" if f.key == "." else f" from {f.key}"  # the finding's path names the file
        checks.append(Check(path, None, f.distribution))
        if f.status == "dropped":
            out.append(
                Finding(
                    "FBI012",
                    "warning",
                    f"{named} (with {', '.join(f.archs_dropped)}) is not in the new release",
                    path,
                    None,
                    None,
                    f.distribution,
                )
            )
            continue
        for arch in f.archs_dropped:
            out.append(Finding("FBI010", "error", f"{arch} dropped{where}", path, None, arch, f.distribution))
        if f.kernels_dropped:
            shown = ", ".join(f.kernels_dropped[:3]) + (" ..." if len(f.kernels_dropped) > 3 else "")
            out.append(
                Finding(
                    "FBI011",
                    "warning",
                    f"{len(f.kernels_dropped)} kernels dropped{where}: {shown}",
                    path,
                    None,
                    None,
                    f.distribution,
                )
            )
    out += _release_drops(d)
    return FindingsReport("diff", tuple(sorted(out, key=sort_key)), tuple(checks), (), (d.old, d.new))


def _release_drops(d: DiffReport) -> list[Finding]:
    """FBI010 for archs the release as a whole dropped: no file of the new distribution has them
    (bitsandbytes 0.42.0 -> 0.50.2 drops sm_50/52/61 while every library was renamed)."""
    out = []
    per_file = {(f.distribution, a) for f in d.files if f.status != "dropped" for a in f.archs_dropped}
    for dist in d.distributions:
        dropped = tuple(a for a in dist.archs_dropped if (dist.name, a) not in per_file)
        if not dropped or not dist.archs_new:
            continue  # said per file already, or a distribution gone entirely (its files: FBI012)
        versions = f"{dist.old_version or '?'} -> {dist.new_version or '?'}"
        out.append(
            Finding(
                "FBI010",
                "error",
                f"{dist.name} {versions} drops {', '.join(dropped)} from the release as a whole",
                d.new,
                None,
                dropped[0],
                dist.name,
            )
        )
    return out
