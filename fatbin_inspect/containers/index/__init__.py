"""Packages judged straight from a package index, before anything is installed.

``purl`` and ``requirements`` say which releases are asked for (``pkg:pypi/NAME[@VERSION]``, a
pip requirements file, a PEP 751 ``pylock.toml``); ``config`` finds the index pip would use;
``pages`` reads its Simple API (PEP 691 JSON, else PEP 503 HTML); ``choose`` picks the file pip
would install for a platform; ``remote_zip`` reads only the members of a remote wheel that can
hold device code (HTTP range requests), and ``transport`` is how bytes are fetched.
"""

from __future__ import annotations

# How an index input is told from a path. Here, in the package's face, so that a run over files
# alone (every listing checks its paths) imports none of the modules below.
PREFIX = "pkg:pypi/"
REQUIREMENT_PREFIX = "-r:"  # how a -r FILE travels among the paths: "-r:requirements.txt"


def is_purl(text: str) -> bool:
    return text.startswith(PREFIX)


def is_index_input(path: str) -> bool:
    """``path`` names a package on an index (``pkg:pypi/...``) or a ``-r`` requirements file."""
    return is_purl(path) or path.startswith(REQUIREMENT_PREFIX)
