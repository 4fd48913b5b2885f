"""What a listing reads and decodes: the ``Options`` every inventory function takes.

Cheap to import (no parser): a scan builds them, or a dict of their fields, before any file is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Options:
    kernels: bool = False  # decode payloads: kernel names and per-kernel resources
    details: bool = False  # decode cubins for ABI/type/toolkit/device-link (implied by kernels)
    scan_hidden: bool = True  # magic scan outside the fatbin sections (docs/format.md §1.4)
    members: str = "device"  # "device": archive members with device code; "all": every candidate
    jobs: int = 0  # processes for decoding one large file's payloads; 0 = one per CPU, 1 = none
    resources: bool = True  # with kernels: registers, shared, constant0, max threads per kernel
    probe_small: bool = False  # decode only small cubins (<= PROBE_MAX): tells device-link output
    # the platform of the images read: what a multi-platform index gives and each image's config
    # must say; "": linux/amd64 from an index, any single-platform image as it is
    platform: str = ""
    digests: bool = False  # FileReport.sha256 of each file and archive read whole (the SBOM; off: no hashing)
    # hand out the bytes of files inside images with their records (extract, verify read payloads):
    # an image's records wait until its last layer is checked, so its files' bytes are held as long
    image_bytes: bool = False


def as_options(o: Options | Mapping[str, Any] | None) -> Options:
    """``o`` as ``Options``: a dict of its fields (what a scan hands its workers), None the defaults."""
    return o if isinstance(o, Options) else Options(**(o or {}))
