"""Package databases made by the real package manager (dpkg) for the tests of attribution to
system packages."""

from __future__ import annotations

import pathlib
from collections.abc import Sequence

from image_tools import run


def dpkg_install(root: pathlib.Path, debs: Sequence[str]) -> None:
    """``dpkg --root ROOT -i DEB...`` into a fresh (or existing) database under ``root``."""
    (root / "var/lib/dpkg/info").mkdir(parents=True, exist_ok=True)
    (root / "var/lib/dpkg/updates").mkdir(exist_ok=True)
    (root / "var/lib/dpkg/status").touch()
    run(
        "dpkg",
        f"--root={root}",
        "--force-script-chrootless",
        "--force-depends",
        "--log=/dev/null",
        "-i",
        *debs,
    )
