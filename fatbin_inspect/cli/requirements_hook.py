"""The pre-commit hook over requirements and lock files (``.pre-commit-hooks.yaml``:
``fatbin-inspect-requirements``): ``fatbin-inspect gate -r FILE`` for every file pre-commit
hands it (named ``requirements*.txt``, ``pylock.toml`` or ``pylock.NAME.toml``), the hook's
``args`` (gate options such as ``--targets fleet.toml``) kept as they are: the pinned packages
are judged from the index before anything is installed."""

from __future__ import annotations

import re
import sys

NAMES = re.compile(r"(^|/)(requirements[^/]*\.txt|pylock(\.[^/]+)?\.toml)$")


def gate_args(argv: list[str]) -> list[str]:
    """``gate``'s arguments: the options as given, each requirements file as ``-r FILE``."""
    files = [a for a in argv if NAMES.search(a)]
    return ["gate", *(a for a in argv if a not in files), *(w for f in files for w in ("-r", f))]


def main() -> None:
    from fatbin_inspect.cli.main import main as cli_main

    cli_main(gate_args(sys.argv[1:]))


if __name__ == "__main__":
    main()
