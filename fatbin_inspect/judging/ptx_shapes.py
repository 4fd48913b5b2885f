"""The PTX a JIT verdict would compile, read and counted for ``compat.jit`` (R-JIT-COST).

The engine judges from entry headers; what the driver would compile is known once it has chosen.
For each counted fatbin whose chosen image is PTX, that image is decompressed from the file the
record was read from and counted (``formats.ptx.shape``), once for every target, and the count
is put on the choice (``Chosen.shape``): the JIT estimate then rests on instructions, not bytes.
A record whose bytes cannot be read again here (a member of a tar, an image layer) or an image
that does not decode keeps the estimate from bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from fatbin_inspect.compat import jit
from fatbin_inspect.compat.engine import FatbinVerdict, FileVerdict
from fatbin_inspect.formats.model import FileReport, PtxShape
from fatbin_inspect.formats.ptx import shape


def with_ptx_shapes(report: FileReport, verdicts: list[FileVerdict]) -> list[FileVerdict]:
    """``verdicts`` of ``report`` with the shape of every chosen PTX image that can be read."""
    wanted = {
        f.chosen.offset
        for v in verdicts
        for f in jit.jit_fatbins(v)
        if f.chosen is not None and f.chosen.shape is None and f.chosen.offset is not None
    }
    if not wanted:
        return verdicts
    from fatbin_inspect.inventory.payloads import entry_images  # (the way back to its bytes)

    shapes = {offset: shape(image) for offset, image in entry_images(report, wanted)}
    return [_shaped(v, shapes) for v in verdicts] if shapes else verdicts


def _shaped(v: FileVerdict, shapes: Mapping[int, PtxShape]) -> FileVerdict:
    fatbins = tuple(_shaped_fatbin(f, shapes) for f in v.fatbins)
    return dataclasses.replace(v, fatbins=fatbins)


def _shaped_fatbin(f: FatbinVerdict, shapes: Mapping[int, PtxShape]) -> FatbinVerdict:
    c = f.chosen
    if c is None or c.offset is None or c.offset not in shapes or c.shape is not None:
        return f
    return dataclasses.replace(f, chosen=dataclasses.replace(c, shape=shapes[c.offset]))
