"""Opt-in: real wheels nobody here built (CORPUS.md), against cuobjdump, member by member.

Runs when wheels lie in ``.cache/corpus`` (or ``$FATBIN_INSPECT_CORPUS``); ``scripts/fetch_corpus.sh``
downloads them. Members above ``$FATBIN_INSPECT_CORPUS_MAX_MB`` (default 120) are skipped to keep
the run short; set it to 0 for no limit.
"""

import glob
import os
import zipfile
from collections import Counter

import pytest
from conftest import CORPUS
from oracle import cuobjdump_entries, our_entries

from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.reader import inspect_path

pytestmark = pytest.mark.corpus
CORPUS_DIR = os.environ.get("FATBIN_INSPECT_CORPUS", CORPUS)
WHEELS = sorted(glob.glob(os.path.join(CORPUS_DIR, "*.whl")))
MAX_MB = int(os.environ.get("FATBIN_INSPECT_CORPUS_MAX_MB", "120"))
# cuobjdump 12.8 as shipped inside triton==3.3.1 (scripts/fetch_corpus.sh unpacks it here)
OLD_CUOBJDUMP = os.environ.get(
    "CUOBJDUMP_12", os.path.join(os.path.dirname(CORPUS_DIR), "tools", "cuobjdump-12.8", "cuobjdump")
)
OLD_CUOBJDUMP = OLD_CUOBJDUMP if os.path.isfile(OLD_CUOBJDUMP) else None


@pytest.mark.skipif(not WHEELS, reason=f"no corpus wheels in {CORPUS_DIR} (scripts/fetch_corpus.sh)")
@pytest.mark.parametrize("wheel", [os.path.basename(w) for w in WHEELS])
def test_wheel_members_match_cuobjdump(cuobjdump, wheel, tmp_path):
    path = os.path.join(CORPUS_DIR, wheel)
    reports = [r for r in inspect_path(path, Options()) if "!" in r.path]
    assert all(r.error is None for r in reports), [(r.path, r.error) for r in reports if r.error]
    groups = {}  # top-level wheel member -> our entries (an .a member sums its objects)
    for r in reports:
        member = r.path.split("!")[1]
        groups.setdefault(member, [Counter(), r.format])[0].update(our_entries(r))
        if r.path.count("!") > 1:
            groups[member][1] = "ar"
    with zipfile.ZipFile(path) as zf:
        checked = 0
        refused = []
        for member, (ours, fmt) in groups.items():
            info = zf.getinfo(member)
            if (MAX_MB and info.file_size > MAX_MB << 20) or fmt == "pe":
                continue
            target = tmp_path / os.path.basename(member)
            target.write_bytes(zf.read(member))
            theirs, why = cuobjdump_entries(cuobjdump, str(target))
            if theirs is None and "Invalid ELF" in why and OLD_CUOBJDUMP:
                theirs, why = cuobjdump_entries(
                    OLD_CUOBJDUMP, str(target)
                )  # 12.8 reads CUDA 12.0-12.2 builds
            if theirs is None:
                assert not ours or "sm_35" in why or "sm_37" in why or "Invalid ELF" in why, (member, why)
                refused.append(f"{member}: {why}")
                continue
            assert ours == theirs, member
            checked += 1
            target.unlink()
    if not checked:
        pytest.skip(
            "nothing cuobjdump could be compared on: "
            + ("; ".join(refused[:3]) or f"no member with device code under {MAX_MB} MB")
        )
