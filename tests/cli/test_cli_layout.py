"""The terminal output at 80, 120 and 200 columns and into a pipe, against golden files, and the
promise behind them: no line is wider than the width the command was given.

The golden files (``tests/golden/cli/<case>.<width>.txt``, fixtures only) are regenerated with
``scripts/update_golden.sh`` (``FATBIN_INSPECT_UPDATE_GOLDEN=1``) after an intended change, e.g.
to the verdicts or the data; review the diff before committing it. Timings are normalised.
"""

import os
import re

import pytest
from conftest import GOLDEN, ROOT, cli
from rich.cells import cell_len

from fatbin_inspect.version import __version__

BIN = "fixtures/bin/"
WIDTHS = (80, 120, 200, None)  # None: a pipe (no wrapping, one record a line)

CASES = {
    "list": ["list", BIN + "t02_exe_sm75_sm80_sm90_c90", BIN + "t13_raw_sm75_c75_sm120.fatbin", "--details"],
    "list-kernels": ["list", BIN + "t02_exe_sm75_sm80_sm90_c90", "--kernels"],
    "check": [
        "check",
        BIN + "t12_lib_sm86_c89.so",
        "--gpu",
        "H100",
        "--gpu",
        "Jetson AGX Orin",
        "--driver",
        "580",
        "--long",
    ],
    "check-matrix": [
        "check",
        BIN + "t02_exe_sm75_sm80_sm90_c90",
        BIN + "t12_lib_sm86_c89.so",
        "--gpu",
        "H100,RTX 5090,Jetson AGX Orin",
        "--driver",
        "580",
    ],
    "scan": ["scan", BIN, "--gpu", "H100", "--gpu", "RTX 5090", "--driver", "580", "--no-cache"],
    "scan-verdicts": [
        "scan",
        BIN,
        "--gpu",
        "H100,RTX 5090,Jetson AGX Orin",
        "--driver",
        "580",
        "--no-cache",
        "--verdicts",
    ],
    "gate": [
        "gate",
        BIN + "t02_exe_sm75_sm80_sm90_c90",
        BIN + "t12_lib_sm86_c89.so",
        "--isolated",
        "--require",
        "sm_80,sm_90,sm_100",
        "--gpu",
        "H100",
        "--driver",
        "580",
    ],
    "explain": ["explain", "209"],
    "gpus": ["gpus", "h100"],
}


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # relative paths in the output


def table(case, width):
    """``case``'s table at ``width`` columns (None: a pipe), no colour and no format or output
    from the environment."""
    env = dict.fromkeys(("NO_COLOR", "FORCE_COLOR", "FATBIN_INSPECT_FORMAT", "FATBIN_INSPECT_OUTPUT"))
    env["COLUMNS"] = None if width is None else str(width)
    return cli(*CASES[case], "--color", "never", env=env, codes=(0, 1)).out


def normalized(text: str) -> str:
    text = text.replace(__version__, "VERSION")
    return re.sub(r"in \d+\.\d s", "in N s", text)


@pytest.mark.parametrize("width", WIDTHS, ids=lambda w: "pipe" if w is None else str(w))
@pytest.mark.parametrize("case", sorted(CASES))
def test_table_output_matches_the_golden_file(case, width):
    text = normalized(table(case, width))
    path = os.path.join(GOLDEN, "cli", f"{case}.{'pipe' if width is None else width}.txt")
    if os.environ.get("FATBIN_INSPECT_UPDATE_GOLDEN"):
        os.makedirs(os.path.join(GOLDEN, "cli"), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    with open(path, encoding="utf-8") as fh:
        assert text == fh.read(), f"{path} differs (scripts/update_golden.sh rewrites it; review the diff)"


@pytest.mark.parametrize("width", [60, 80, 100, 120, 200])
@pytest.mark.parametrize("case", sorted(CASES))
def test_no_line_is_wider_than_the_width_given(case, width):
    lines = table(case, width).splitlines()
    wide = [line for line in lines if cell_len(line) > width]
    assert not wide, f"{len(wide)} lines wider than {width}: {wide[:3]}"
    assert all(line == line.rstrip() for line in lines)  # no trailing blanks


def test_a_pipe_gets_one_record_a_line_and_wrapping_never_splits_words():
    piped = table("gate", None).splitlines()
    findings = [line for line in piped if line.lstrip().startswith(("error", "warning", "note"))]
    assert findings and all(re.search(r"FBI\d{3}", line) for line in findings)
    assert len(table("gate", 80).splitlines()) > len(piped)
    whole = table("explain", None)
    narrow = table("explain", 60)
    assert len(narrow.splitlines()) > len(whole.splitlines())
    assert narrow.split() == whole.split()  # the same words, none cut in two
