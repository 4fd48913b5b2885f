"""Our bounded host-ELF reader agrees with pyelftools (the reference) on every ELF fixture.

containers/elf.py reads the section table itself because pyelftools reads section names without
a bound and trusts extended counts (hangs on hostile input, tests/regressions); on well-formed
files both must see the same sections, offsets and DT_NEEDED libraries.
"""

import os

import pytest
from conftest import FIXTURES

from fatbin_inspect.containers import cuda_needs, detect, elf
from fatbin_inspect.formats.binio import open_blob

elftools = pytest.importorskip("elftools.elf.elffile", reason="pyelftools (test extra) not installed")


def _elf_fixtures():
    for d in ("bin", "compat"):
        for name in sorted(os.listdir(os.path.join(FIXTURES, d))):
            path = os.path.join(FIXTURES, d, name)
            with open(path, "rb") as fh:
                if detect(fh.read(512)) == "elf":
                    yield f"{d}/{name}"


@pytest.mark.parametrize("rel", list(_elf_fixtures()))
def test_sections_and_needed_match_pyelftools(rel):
    path = os.path.join(FIXTURES, rel)
    ours = elf.layout(open_blob(path))
    with open(path, "rb") as fh:
        ref = elftools.ELFFile(fh)
        sections = [
            (s.name, s["sh_offset"], s["sh_offset"] + s["sh_size"])
            for s in ref.iter_sections()
            if s["sh_type"] not in ("SHT_NOBITS", "SHT_NULL") and s["sh_size"]
        ]
        dyn = ref.get_section_by_name(".dynamic")
        needed = [t.needed for t in dyn.iter_tags() if t.entry.d_tag == "DT_NEEDED"] if dyn else []
    assert [(r.name, r.start, r.end) for r in ours.regions] == sections
    assert ours.needs == cuda_needs(needed)
