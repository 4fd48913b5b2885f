"""The file pip would install for a platform, among a project's files on the index.

As pip's ``PackageFinder`` with ``--only-binary=:all:``: files whose version the requirement
allows (``==V`` ignores a candidate's local label, PEP 440), whose ``Requires-Python`` admits
the target's Python, not yanked (unless pinned: PEP 592), with a sha256 the requirement allows
(hash-checking mode); pre-releases only when pinned or nothing else is left (``packaging``'s
``SpecifierSet.filter``); then the newest version, and in it the wheel whose tags come first in
the platform's supported tags. The tags are pip's: ``packaging.tags.sys_tags()`` for this
interpreter on this machine, else ``cpython_tags`` and ``compatible_tags`` for the Python and
platforms given, with pip's expansion of ``manylinux2014``/``manylinux2010`` (pip's
``compatibility_tags._get_custom_platforms``; ``manylinux_2_X`` is taken literally, as pip does).
"""

from __future__ import annotations

import os
import platform as platform_mod
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fatbin_inspect.containers.index.pages import DistFile

if TYPE_CHECKING:
    from packaging.tags import Tag
    from packaging.version import Version

GLIBC_FLOOR = 17  # manylinux2014 = manylinux_2_17: the oldest glibc a CUDA wheel is built for
_MACHINES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}


@dataclass(frozen=True)
class Platform:
    """What pip on the target's host would accept: ``python`` ("3.11"), ``platforms`` (pip's
    ``--platform`` values; empty: this interpreter's own tags) and the host CPU ``arch``."""

    python: str
    platforms: tuple[str, ...]
    arch: str

    @property
    def label(self) -> str:
        where = self.platforms[0] if self.platforms else f"this machine ({self.arch})"
        return f"Python {self.python}, {where}"


def this_arch() -> str:
    m = platform_mod.machine().lower()
    return _MACHINES.get(m, m)


def this_python() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def _glibc_minor() -> int:
    """This machine's glibc minor version, the assumption for another host's (28 without one)."""
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION") or ""
        return int(version.split()[-1].split(".")[1])
    except (ValueError, IndexError, OSError):
        return 28


def for_host(arch: str | None, python: str | None = None, platforms: Sequence[str] = ()) -> Platform:
    """The platform of a target host: ``platforms`` as given (pip's ``--platform``), else this
    interpreter's tags when the host is this machine's CPU and Python, else Linux ``manylinux``
    tags of ``arch`` down to 2.17 from this machine's glibc (another host's is not known)."""
    arch = arch or this_arch()
    python = python or this_python()
    if platforms:
        return Platform(python, tuple(platforms), arch)
    if arch == this_arch() and python == this_python() and sys.platform.startswith("linux"):
        return Platform(python, (), arch)
    top = max(_glibc_minor(), GLIBC_FLOOR)
    plats = [f"manylinux_2_{g}_{arch}" for g in range(top, GLIBC_FLOOR - 1, -1)]
    plats.insert(plats.index(f"manylinux_2_{GLIBC_FLOOR}_{arch}") + 1, f"manylinux2014_{arch}")
    if arch == "x86_64":
        plats += [f"manylinux_2_{g}_{arch}" for g in range(GLIBC_FLOOR - 1, 4, -1)]
        plats += [f"manylinux2010_{arch}", f"manylinux1_{arch}"]
    return Platform(python, (*plats, f"linux_{arch}"), arch)


def _custom_platforms(plat: str) -> list[str]:
    """pip's expansion of one ``--platform`` value."""
    prefix, _, arch = plat.partition("_")
    if prefix == "manylinux2014":
        return [plat] + (
            [f"manylinux2010_{arch}", f"manylinux1_{arch}"] if arch in ("x86_64", "i686") else []
        )
    if prefix == "manylinux2010":
        return [plat, f"manylinux1_{arch}"]
    return [plat]


def supported_tags(target: Platform) -> list[Tag]:
    """The tags pip accepts for ``target``, most preferred first."""
    from packaging import tags

    if not target.platforms:
        return list(tags.sys_tags())
    version = tuple(int(x) for x in target.python.split("."))
    plats = list(dict.fromkeys(p for plat in target.platforms for p in _custom_platforms(plat)))
    interpreter = "cp" + "".join(str(x) for x in version[:2])
    return [
        *tags.cpython_tags(version, None, plats),
        *tags.compatible_tags(version, interpreter, plats),
    ]


@dataclass(frozen=True)
class Choice:
    """The file chosen for a platform, or why none is: ``file`` None and ``reason`` set.
    ``source_only``: the release has only sdists (built on the machine that installs it)."""

    file: DistFile | None
    reason: str = ""
    source_only: bool = False


def allowed_versions(files: Iterable[DistFile], version: str | None, specifier: str = "") -> list[Version]:
    """The versions of ``files`` a pin (``==version``) or ``specifier`` (pip's default: final
    releases, pre-releases only when there are no others) allows, newest first."""
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(f"=={version}") if version else SpecifierSet(specifier)
    versions = sorted({f.version for f in files if not (f.yanked and not version)}, reverse=True)
    return list(spec.filter(versions, prereleases=True if version else None))


def choose(
    files: Sequence[DistFile],
    version: str | None,
    target: Platform,
    hashes: frozenset[str] = frozenset(),
    tags: Sequence[Tag] | None = None,
    specifier: str = "",
) -> Choice:
    """The wheel pip would take of ``files`` (one project's) for ``target``."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import Version

    tags = supported_tags(target) if tags is None else tags
    rank = {t: i for i, t in enumerate(tags)}
    python = Version(target.python)

    def admits(f: DistFile) -> bool:
        if hashes and f.sha256 not in hashes:
            return False
        if not f.requires_python:
            return True
        try:
            return SpecifierSet(f.requires_python).contains(python, prereleases=True)
        except InvalidSpecifier:
            return True  # pip ignores a malformed Requires-Python

    usable = [f for f in files if admits(f)]
    wanted = set(allowed_versions(usable, version, specifier))
    best: tuple[Version, int, DistFile] | None = None
    for f in usable:
        if f.version not in wanted or not f.is_wheel:
            continue
        pri = min((rank[t] for t in f.tags if t in rank), default=None)
        if pri is not None and (best is None or (f.version, -pri) > (best[0], -best[1])):
            best = (f.version, pri, f)
    if best is not None:
        return Choice(best[2])
    return _none_chosen(files, usable, version, target, bool(hashes), specifier)


def _none_chosen(
    files: Sequence[DistFile],
    usable: Sequence[DistFile],
    version: str | None,
    target: Platform,
    hashed: bool,
    specifier: str,
) -> Choice:
    """Why no wheel was chosen, in one line."""
    what = f"=={version}" if version else specifier
    if not files:
        return Choice(None, "the index lists no files for it")
    if not allowed_versions(files, version, specifier):
        return Choice(None, f"no release {what} on the index" if what else "no release on the index")
    if hashed and not usable:
        return Choice(None, f"no file {what} has a sha256 the requirement's --hash allows")
    newest = allowed_versions(usable, version, specifier)
    if newest and not any(f.is_wheel for f in usable if f.version == newest[0]):
        return Choice(
            None,
            f"{newest[0]} has no wheel, only a source distribution: built from source on your machine: "
            "nothing to judge before install",
            source_only=True,
        )
    return Choice(None, f"no wheel {what} for {target.label}".replace("  ", " "))
