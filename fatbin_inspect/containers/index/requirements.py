"""The releases a pip requirements file or a PEP 751 ``pylock.toml`` asks for.

Requirements files as pip reads them (``pip/_internal/req/req_file.py``): ``#`` comments,
``\\`` continuations, one PEP 508 requirement a line with its ``--hash=sha256:HEX`` options;
``-r``/``--requirement`` nests another file (relative to this one); ``-i``/``--index-url``,
``--extra-index-url``, ``-f``/``--find-links`` and ``--no-index`` set the index; other options
(``--pre``, ``--trusted-host``, ``-c``...) change nothing judged here and are passed over.
A line pip would not take (an editable, a local path, a URL requirement) is an error naming
the file and line. Lock files are read with ``packaging.pylock`` (exact files, their URLs and
hashes: the index is not asked).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field

from fatbin_inspect.containers.index.config import Overrides
from fatbin_inspect.containers.index.pages import DistFile, lock_file
from fatbin_inspect.containers.index.purl import Release
from fatbin_inspect.containers.wheel import canonicalize_name
from fatbin_inspect.errors import InputError, UsageError

MAX_DEPTH = 8  # -r inside -r; more is a loop
REQUIREMENTS_MAX = 4 << 20
_INDEX_OPTS = {
    "-i": "index",
    "--index-url": "index",
    "--extra-index-url": "extra",
    "-f": "links",
    "--find-links": "links",
}
# pip's other file options: they change how pip installs, not which file a target gets
_IGNORED = frozenset(
    (
        "-c",
        "--constraint",
        "--trusted-host",
        "--only-binary",
        "--no-binary",
        "--prefer-binary",
        "--pre",
        "--require-hashes",
        "--use-feature",
        "--config-settings",
        "--global-option",
    )
)


@dataclass
class Requested:
    """What a requirements or lock file asks for: its releases and its index options."""

    releases: list[Release] = field(default_factory=list)
    index_url: str | None = None
    extra_index_urls: list[str] = field(default_factory=list)
    find_links: list[str] = field(default_factory=list)
    no_index: bool = False

    def overrides(self) -> Overrides:
        return Overrides(self.index_url, tuple(self.extra_index_urls), tuple(self.find_links), self.no_index)


def read(path: str) -> Requested:
    """The releases of ``path``: ``pylock.toml`` (or ``pylock.NAME.toml``) as a lock file, any
    other as a requirements file. Errors are usage errors naming the file (and line)."""
    from pathlib import Path

    from packaging.pylock import is_valid_pylock_path

    if is_valid_pylock_path(Path(path)):
        return read_pylock(path)
    out = Requested()
    _read_requirements(path, out, 0)
    return out


def _text(path: str) -> str:
    from fatbin_inspect.formats.documents import read_text

    try:
        return read_text(path, REQUIREMENTS_MAX)
    except InputError as exc:
        raise UsageError(f"{path}: {exc}") from None


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) with continuations joined and comments dropped."""
    out: list[tuple[int, str]] = []
    held, first = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        if not held:
            first = n
        if raw.endswith("\\"):
            held += raw[:-1] + " "
            continue
        line = held + raw
        held = ""
        line = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        if line.strip():
            out.append((first, line.strip()))
    if held.strip():
        out.append((first, held.strip()))
    return out


def _read_requirements(path: str, out: Requested, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise UsageError(f"{path}: -r nested deeper than {MAX_DEPTH} files")
    for n, line in _logical_lines(_text(path)):
        where = f"{path}:{n}"
        tokens = line.split(" ")  # as pip's break_args_options: options start at the first "-" word
        first = next((i for i, t in enumerate(tokens) if t.startswith("-")), len(tokens))
        try:
            words = shlex.split(" ".join(tokens[first:]), posix=True)
        except ValueError as exc:
            raise UsageError(f"{where}: {exc}") from None
        if first == 0:
            _option(words, where, path, out, depth)
            continue
        out.releases.append(_requirement(" ".join(tokens[:first]), words, where))


def _option(words: list[str], where: str, path: str, out: Requested, depth: int) -> None:
    opt, _, inline = words[0].partition("=")
    value = inline or (words[1] if len(words) > 1 else "")
    if opt in ("-r", "--requirement"):
        if not value:
            raise UsageError(f"{where}: {opt} needs a file")
        _read_requirements(os.path.join(os.path.dirname(path), value), out, depth + 1)
    elif opt in _INDEX_OPTS:
        if not value:
            raise UsageError(f"{where}: {opt} needs a URL")
        kind = _INDEX_OPTS[opt]
        if kind == "index":
            out.index_url = value
        else:
            (out.extra_index_urls if kind == "extra" else out.find_links).append(value)
    elif opt == "--no-index":
        out.no_index = True
    elif opt in ("-e", "--editable"):
        raise UsageError(
            f"{where}: an editable requirement is built from source: nothing to judge before install"
        )
    elif opt not in _IGNORED:
        raise UsageError(f"{where}: unknown option {opt}")


def _requirement(text: str, words: list[str], where: str) -> Release:
    """One requirement line: the PEP 508 ``text``, then its ``--hash`` options (``words``)."""
    from packaging.requirements import InvalidRequirement, Requirement

    hashes = set()
    for w in words:
        if w.startswith("--hash="):
            algo, _, digest = w[7:].partition(":")
            if algo != "sha256" or len(digest) != 64:
                raise UsageError(f"{where}: {w}: only --hash=sha256:<64 hex digits> is checked")
            hashes.add(digest.lower())
        else:
            raise UsageError(f"{where}: {w}: only --hash options follow a requirement")
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise UsageError(f"{where}: not a requirement: {exc}") from None
    if req.url:
        raise UsageError(f"{where}: a URL requirement (name @ URL) is not looked up on an index")
    pins = [s.version for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version]
    return Release(
        canonicalize_name(req.name),
        pins[0] if len(pins) == 1 and len(req.specifier) == 1 else None,
        where,
        frozenset(hashes),
        specifier=str(req.specifier),
        marker=str(req.marker) if req.marker else None,
    )


def read_pylock(path: str) -> Requested:
    """A PEP 751 lock file: each package's wheels as the exact files to choose from."""
    from packaging.pylock import Pylock, PylockUnsupportedVersionError, PylockValidationError

    from fatbin_inspect.formats.documents import loads_toml

    try:
        lock = Pylock.from_dict(loads_toml(_text(path)))
    except (PylockValidationError, PylockUnsupportedVersionError) as exc:
        raise UsageError(f"{path}: not a valid pylock file: {exc}") from None
    except InputError as exc:
        raise UsageError(f"{path}: {exc}") from None
    out = Requested()
    for i, pkg in enumerate(lock.packages):
        where = f"{path}: packages[{i}] ({pkg.name})"
        files = []
        for wheel in pkg.wheels or ():
            url = wheel.url or (_file_url(path, wheel.path) if wheel.path else None)
            if url is None:
                raise UsageError(f"{where}: a wheel with neither url nor path")
            filename = wheel.name or url.rstrip("/").rsplit("/", 1)[-1]
            made = lock_file(
                filename, url, canonicalize_name(pkg.name), wheel.hashes.get("sha256"), wheel.size
            )
            if made is not None:
                files.append(made)
        if not files and pkg.sdist is None:
            continue  # a directory, VCS or archive package: not on an index
        version = str(pkg.version) if pkg.version is not None else None
        out.releases.append(
            Release(
                canonicalize_name(pkg.name),
                version,
                where,
                marker=str(pkg.marker) if pkg.marker else None,
                files=tuple(files) if files else _sdist_only(pkg, path),
            )
        )
    return out


def _sdist_only(pkg: object, path: str) -> tuple[DistFile, ...]:
    """A locked package with an sdist and no wheel: one sdist entry (so the choice says so)."""
    sdist = pkg.sdist  # type: ignore[attr-defined]
    url = sdist.url or (_file_url(path, sdist.path) if sdist.path else "")
    name = sdist.name or url.rsplit("/", 1)[-1]
    made = lock_file(name, url, canonicalize_name(pkg.name), sdist.hashes.get("sha256"), sdist.size)  # type: ignore[attr-defined]
    return (made,) if made is not None else ()


def _file_url(lock_path: str, rel: str) -> str:
    import urllib.parse

    full = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(lock_path)), rel))
    return "file://" + urllib.parse.quote(full)
