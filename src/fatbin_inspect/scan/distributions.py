"""Which distribution installed a file: ``*.dist-info/RECORD``, ``conda-meta/*.json``, wheel names.

A RECORD lists paths relative to the directory that holds the ``.dist-info`` folder (paths
starting ``../`` reach the prefix's ``bin/`` or ``lib/``). A conda prefix lists, in
``conda-meta/<name>-<version>-<build>.json``, every file of a package relative to the prefix. A
wheel's file name carries its distribution (``onnxruntime_gpu-1.23.2-cp311-...whl``, PEP 427
escapes ``-`` as ``_``). Indexes are built lazily, only for the ancestors of files that turned out
to hold device code, so the metadata of a 300-package environment is read only where it matters.
"""

from __future__ import annotations

import csv
import json
import os
import re
from typing import Dict, Iterator, List, Optional, Tuple

_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-[^-]+)?-[^-]+-[^-]+-[^-]+\.whl$", re.I)
_INFO_DIR = re.compile(r"^(?P<name>.+?)-(?P<version>[^-]+)\.(dist-info|egg-info)$")
# RECORD lines naming Python sources never hold device code; skipping them keeps the index small
_TEXT_SUFFIXES = (".py", ".pyc", ".pyi")


def wheel_distribution(filename: str) -> Optional[str]:
    """``torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl`` -> ``torch 2.14.1``."""
    m = _WHEEL.match(os.path.basename(filename))
    if not m:
        return None
    return f"{m.group('name').replace('_', '-')} {m.group('version')}"


def innermost_wheel(path: str) -> Optional[str]:
    """The distribution of the innermost ``.whl`` in an archive path ``A!B.whl!C``, if any."""
    parts = path.split("!")
    for part in reversed(parts[:-1]):
        if part.lower().endswith(".whl"):
            return wheel_distribution(part)
    return None


def _metadata_label(info_dir: str) -> Optional[str]:
    """``Name Version`` from METADATA (or PKG-INFO), falling back to the folder name."""
    for meta in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(info_dir, meta), encoding="utf-8", errors="replace") as fh:
                name = version = None
                for line in fh:
                    if not line.strip():
                        break  # headers end at the first blank line
                    if line.startswith("Name:"):
                        name = line[5:].strip()
                    elif line.startswith("Version:"):
                        version = line[8:].strip()
                if name and version:
                    return f"{name} {version}"
        except OSError:
            continue
    m = _INFO_DIR.match(os.path.basename(info_dir))
    return f"{m.group('name').replace('_', '-')} {m.group('version')}" if m else None


def _record_paths(info_dir: str) -> Iterator[str]:
    """Absolute paths a RECORD lists. Lines are ``path,hash,size``; only a path holding a comma is
    CSV-quoted, so the csv module is used for those lines alone (RECORDs run to 20,000 lines)."""
    base = os.path.dirname(info_dir) + os.sep
    try:
        with open(os.path.join(info_dir, "RECORD"), encoding="utf-8", errors="replace", newline="") as fh:
            for line in fh:
                rel = next(csv.reader([line]))[0] if line.startswith('"') else line.rsplit(",", 2)[0]
                if not rel or rel.endswith(_TEXT_SUFFIXES):
                    continue
                yield os.path.normpath(os.path.join(base, rel)) if ".." in rel or rel.startswith("/") else base + rel
    except (OSError, csv.Error, StopIteration):
        return


def _conda_paths(meta_file: str, prefix: str) -> Tuple[Optional[str], List[str]]:
    try:
        with open(meta_file, encoding="utf-8") as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return None, []
    if not isinstance(meta, dict) or "name" not in meta:
        return None, []
    files = [os.path.normpath(os.path.join(prefix, f)) for f in meta.get("files", ())
             if isinstance(f, str) and not f.endswith(_TEXT_SUFFIXES)]
    return f"{meta['name']} {meta.get('version', '?')}", files


class Attributor:
    """Maps real file paths to ``name version`` labels; ``None`` for files no metadata claims."""

    def __init__(self) -> None:
        self._owner: Dict[str, int] = {}
        self._labels: List[str] = []
        self._indexed: set = set()

    def _add(self, label: str, paths) -> None:
        idx = len(self._labels)
        self._labels.append(label)
        for p in paths:
            self._owner.setdefault(p, idx)

    def _index_dir(self, d: str) -> None:
        if d in self._indexed:
            return
        self._indexed.add(d)
        try:
            with os.scandir(d) as it:
                names = sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
        except OSError:
            return
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                info = os.path.join(d, name)
                label = _metadata_label(info)
                if label:
                    self._add(label, _record_paths(info))
            elif name == "conda-meta":
                meta_dir = os.path.join(d, name)
                try:
                    metas = sorted(f for f in os.listdir(meta_dir) if f.endswith(".json"))
                except OSError:
                    continue
                for f in metas:
                    label, files = _conda_paths(os.path.join(meta_dir, f), d)
                    if label:
                        self._add(label, files)

    def distribution(self, path: str) -> Optional[str]:
        """The owner of ``path`` (a file on disk). Every ancestor folder is indexed, so a file is
        attributed even when the scan started below its site-packages."""
        real = os.path.realpath(path)
        d = os.path.dirname(real)
        while True:
            self._index_dir(d)
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        idx = self._owner.get(real)
        if idx is None and real != os.path.abspath(path):
            idx = self._owner.get(os.path.normpath(os.path.abspath(path)))
        return None if idx is None else self._labels[idx]
