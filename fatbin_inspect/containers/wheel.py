"""What a wheel's file name and its ``.dist-info`` say about the distribution, on ``packaging``.

A wheel is named ``{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`` (PEP 427; the name
escapes ``-`` as ``_``), e.g. ``onnxruntime_gpu-1.23.2-cp311-cp311-manylinux_2_28_x86_64.whl``.
Names are compared and shown canonicalised (PEP 503: lower case, runs of ``-_.`` become ``-``), so
the file name, the ``.dist-info`` folder and ``METADATA``'s ``Name:`` agree: ``onnxruntime-gpu``.
``METADATA`` is RFC 822 headers up to the first blank line; ``Requires-Dist`` values are PEP 508
requirements (``nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux"``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from fatbin_inspect.formats.model import Requirement as DeclaredRequirement

if TYPE_CHECKING:  # PEP 508 parsing is imported by the commands that read requirements
    from packaging.requirements import Requirement


_RUNS = re.compile(r"[-_.]+")


def canonicalize_name(name: str) -> str:
    """PEP 503's normalised name: ``packaging.utils.canonicalize_name`` without importing
    ``packaging.utils``, which loads ``packaging.tags`` (a warm scan names no wheel and need
    not pay for it); a test holds the two equal."""
    return _RUNS.sub("-", name).lower()


class Distribution(NamedTuple):
    name: str  # canonical: "onnxruntime-gpu"
    version: str  # as written: "1.23.2", "2.9.0+cu128"

    @property
    def label(self) -> str:
        """``name version``: how findings, scans and diffs name the distribution."""
        return f"{self.name} {self.version}"


def wheel_name(filename: str) -> Distribution | None:
    """The distribution a wheel file name (or path) carries, None when it is no valid wheel name."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    base = os.path.basename(filename)
    try:
        name, _version, _build, _tags = parse_wheel_filename(base)
    except InvalidWheelFilename:
        return None
    return Distribution(name, base.split("-")[1])  # the version as the file spells it


def info_dir_name(dirname: str) -> Distribution | None:
    """``torch-2.9.0+cu128.dist-info`` (or ``.egg-info``) -> torch 2.9.0+cu128."""
    base = os.path.basename(dirname.rstrip("/"))
    for suffix in (".dist-info", ".egg-info"):
        if base.endswith(suffix):
            name, sep, version = base[: -len(suffix)].rpartition("-")
            if sep and name and version:
                return Distribution(canonicalize_name(name), version)
    return None


def metadata_headers(lines: Iterable[str]) -> dict[str, list[str]]:
    """The headers of a ``METADATA``/``PKG-INFO`` text (up to the first blank line), by name."""
    out: dict[str, list[str]] = {}
    for line in lines:
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if sep and not line[0].isspace():
            out.setdefault(key.strip(), []).append(value.strip())
    return out


def metadata_name(headers: dict[str, list[str]]) -> Distribution | None:
    """``Name:`` and ``Version:`` of parsed ``METADATA`` headers."""
    name, version = headers.get("Name", [""])[0], headers.get("Version", [""])[0]
    return Distribution(canonicalize_name(name), version) if name and version else None


def requires_dist(headers: dict[str, list[str]]) -> list[Requirement]:
    """The ``Requires-Dist`` requirements that parse (a malformed one is skipped, never fatal)."""
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for value in headers.get("Requires-Dist", ()):
        try:
            out.append(Requirement(value))
        except InvalidRequirement:
            continue
    return out


def declared_requirements(metadata: str) -> list[DeclaredRequirement]:
    """The ``Requires-Dist`` lines of a METADATA text as the engine's records (R-RT 4)."""
    out = []
    for req in requires_dist(metadata_headers(metadata.splitlines())):
        extras = "[" + ",".join(sorted(req.extras)) + "]" if req.extras else ""
        out.append(
            DeclaredRequirement(
                canonicalize_name(req.name),
                frozenset(x.lower() for x in req.extras),
                str(req.specifier),
                f"{req.name}{extras}{req.specifier}",
            )
        )
    return out


def read_wheel_metadata(path: str) -> str | None:
    """The ``*.dist-info/METADATA`` text of the wheel at ``path``, read under the archive limits
    (a METADATA that claims 3 GiB is refused, not read); None when there is none or it cannot be
    read."""
    import zipfile

    from fatbin_inspect.containers.archives import read_metadata_member
    from fatbin_inspect.errors import InputError

    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()  # the last METADATA of a repeated name: the one pip installs
            meta = next((i for i in reversed(infos) if i.filename.endswith(".dist-info/METADATA")), None)
            if meta is None:
                return None
            return read_metadata_member(zf, meta).decode("utf-8", "replace")
    except (OSError, zipfile.BadZipFile, InputError):
        return None
