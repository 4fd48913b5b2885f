"""The package index pip would use: its configuration files, ``PIP_*`` variables and options.

Read as pip 23-26 reads them (pip's ``configuration.py``), lowest precedence first: the global
files (``/etc/pip.conf``, ``pip/pip.conf`` under each ``$XDG_CONFIG_DIRS`` folder, default
``/etc/xdg``), the user's (``~/.pip/pip.conf``, ``$XDG_CONFIG_HOME/pip/pip.conf``), the site's
(``sys.prefix/pip.conf``), then ``$PIP_CONFIG_FILE`` (``os.devnull`` there: no file at all);
in each, ``[install]`` over ``[global]``. Then the variables ``PIP_INDEX_URL``,
``PIP_EXTRA_INDEX_URL``, ``PIP_FIND_LINKS`` (whitespace-separated lists) and ``PIP_NO_INDEX``,
then the command's own options. Credentials: in the URL (``https://user:pw@host/simple``),
else the host's ``machine`` entry of ``$NETRC`` or ``~/.netrc``.
"""

from __future__ import annotations

import configparser
import os
import sys
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from fatbin_inspect.errors import UsageError

PYPI = "https://pypi.org/simple/"
CONFIG_MAX = 1 << 20  # a pip.conf is a few lines; more is no configuration
_TRUE = frozenset(("1", "true", "yes", "on"))
_FALSE = frozenset(("0", "false", "no", "off", ""))


@dataclass(frozen=True)
class IndexConfig:
    """Where releases are looked up: the index (``index_url``), the extra ones, the
    ``find_links`` pages or folders, and ``no_index`` (only ``find_links``)."""

    index_url: str = PYPI
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    no_index: bool = False

    @property
    def indexes(self) -> tuple[str, ...]:
        """The Simple API roots searched, in order (none with ``no_index``)."""
        return () if self.no_index else (self.index_url, *self.extra_index_urls)


@dataclass(frozen=True)
class Overrides:
    """The command's own ``--index-url``, ``--extra-index-url``, ``--find-links``, ``--no-index``
    (a requirements file's lines of those names too): None or empty where not given."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    no_index: bool = False


def config_files(env: Mapping[str, str]) -> list[str]:
    """pip's configuration files that exist, lowest precedence first."""
    chosen = env.get("PIP_CONFIG_FILE")
    if chosen == os.devnull:
        return []
    home = os.path.expanduser("~")
    xdg_dirs = env.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    xdg_home = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = ["/etc/pip.conf"]
    files += [os.path.join(d, "pip", "pip.conf") for d in reversed(xdg_dirs.split(os.pathsep)) if d]
    files += [os.path.join(home, ".pip", "pip.conf"), os.path.join(xdg_home, "pip", "pip.conf")]
    files.append(os.path.join(sys.prefix, "pip.conf"))
    if chosen:
        files.append(chosen)
    return [f for f in files if os.path.isfile(f)]


def _read_file(path: str) -> dict[str, str]:
    """The ``[global]`` then ``[install]`` values of one file (later wins); a file that does
    not parse is an error naming it."""
    from fatbin_inspect.errors import InputError
    from fatbin_inspect.formats.binio import read_regular

    try:
        text = read_regular(path, CONFIG_MAX).decode("utf-8")
    except InputError as exc:
        raise UsageError(f"{path}: {exc.message}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(text, source=path)
    except configparser.Error as exc:
        raise UsageError(f"{path}: not a pip configuration file: {exc.message.splitlines()[0]}") from None
    out: dict[str, str] = {}
    for section in ("global", "install"):
        if parser.has_section(section):
            out.update({k.replace("_", "-"): v for k, v in parser.items(section)})
    return out


def _flag(value: str, where: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise UsageError(f"{where}: expected true or false, not {value!r}")


def resolve(overrides: Overrides = Overrides(), env: Mapping[str, str] | None = None) -> IndexConfig:
    """The index configuration pip would use here, with ``overrides`` on top."""
    env = os.environ if env is None else env
    values: dict[str, tuple[str, str]] = {}  # key -> (value, where it was set)
    for path in config_files(env):
        values.update({k: (v, f"{path}: {k}") for k, v in _read_file(path).items()})
    for key in ("index-url", "extra-index-url", "find-links", "no-index"):
        name = "PIP_" + key.upper().replace("-", "_")
        if name in env:
            values[key] = (env[name], name)
    index_url = values["index-url"][0].strip() if "index-url" in values else PYPI
    extras = tuple(values["extra-index-url"][0].split()) if "extra-index-url" in values else ()
    links = tuple(values["find-links"][0].split()) if "find-links" in values else ()
    no_index = _flag(*values["no-index"]) if "no-index" in values else False
    if overrides.index_url:
        index_url = overrides.index_url
    if overrides.extra_index_urls:
        extras = extras + overrides.extra_index_urls
    if overrides.find_links:
        links = links + overrides.find_links
    cfg = IndexConfig(index_url, extras, links, no_index or overrides.no_index)
    for url in (*cfg.indexes, *cfg.find_links):
        check_location(url)
    return cfg


def check_location(url: str) -> None:
    """An index or find-links location is an http(s) or file URL or a local path."""
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("http", "https", "file", "") and not (len(scheme) == 1 and os.name == "nt"):
        raise UsageError(f"{url}: an index must be an http(s):// or file:// URL or a folder")


@dataclass(frozen=True)
class Credentials:
    user: str
    password: str


def credentials(url: str, env: Mapping[str, str] | None = None) -> Credentials | None:
    """The login for ``url``: written in it, else its host's netrc entry; None for none."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is not None:
        return Credentials(urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or ""))
    env = os.environ if env is None else env
    path = env.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    if not parts.hostname or not os.path.isfile(path):
        return None
    import netrc

    try:
        found = netrc.netrc(path).authenticators(parts.hostname)
    except (netrc.NetrcParseError, OSError) as exc:
        raise UsageError(f"{path}: cannot read: {exc}") from None
    return Credentials(found[0] or "", found[2] or "") if found else None


def without_credentials(url: str) -> str:
    """``url`` with any ``user:password@`` taken out: how it is shown and cached."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
