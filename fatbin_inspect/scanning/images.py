"""The images a scan was given, each with the CUDA files each of its layers brought.

A record of a file in an image is named ``INPUT!LAYER!PATH`` (``INPUT!IMAGE!LAYER!PATH`` when the
input holds several images; see ``containers.oci``), so the layer that brought a file is read
from its path: no second look at the image.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.inventory import member_path


def image_views(images: Sequence[tuple[str, Any]], reports: Sequence[FileReport]) -> list[dict[str, Any]]:
    """One dict per image of ``ScanResult.images``: its facts (``oci.Image.facts``), the input it
    came from, and for each layer (bottom first) the records (paths) with device code or an
    error that it brought."""
    per_input = Counter(inp for inp, _ in images)
    paths = [r.path for r in reports]
    out = []
    for n, (inp, image) in enumerate(images):
        facts = image.facts()
        base = _base(images, n, per_input[inp] > 1)
        for layer, d in zip(image.layers, facts["layers"], strict=True):
            prefix = f"{base}!{member_path.escape(layer.name)}!"
            d["files"] = [p[len(prefix) :] for p in paths if p.startswith(prefix)]
        out.append({"input": inp, **facts})
    return out


def _base(images: Sequence[tuple[str, Any]], n: int, several: bool) -> str:
    """The path prefix of the records of image ``n``: its input, and its name among several."""
    inp, image = images[n]
    base = member_path.escape(inp) if inp != "-" else inp
    if several:
        index = [i for i, (other, _) in enumerate(images) if other == inp].index(n)
        base = f"{base}!{member_path.escape(image.name or f'@{index}')}"
    return base
