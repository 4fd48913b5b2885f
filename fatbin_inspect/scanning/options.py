"""What a scan is asked to do (``ScanOptions``), and the part of it its cache rows depend on."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fatbin_inspect.scanning.encoded import Encoder

if TYPE_CHECKING:  # the parsers are imported only when a file has to be read
    from fatbin_inspect.inventory.options import Options

ProgressFn = Callable[[int, int, int], None]  # (files done, files seen, bytes done)

# the ``inventory.Options`` fields the records depend on (the cache fingerprint), with their
# defaults (a test holds them equal to Options'), so options given as a dict need no parser import
FINGERPRINT_DEFAULTS = dict(
    kernels=False,
    details=False,
    resources=True,
    probe_small=False,
    scan_hidden=True,
    members="device",
    platform="",
    digests=False,
)


@dataclass(frozen=True)
class ScanOptions:
    # an ``inventory.Options``, or a dict of its fields (built where a file is read: a warm scan
    # then imports no parser); None: the defaults
    inventory: Options | Mapping[str, Any] | None = None
    jobs: int = 0  # worker processes; 0 = every available core, 1 = no pool
    cache_dir: str | None = "default"  # None: no cache; "default": user cache dir / env override
    summary: bool = False  # records are ``coverage.FileSummary`` (enough for the matrix), not FileReport
    # "local": a process pool on this machine; "dask": the same work units sent to the Dask
    # distributed cluster at ``scheduler`` (tcp://HOST:PORT), whose workers must see the paths
    executor: str = "local"
    scheduler: str | None = None
    scheduler_file: str | None = None  # instead of ``scheduler``: the file ``dask scheduler`` wrote
    connect_timeout: float = 30  # seconds to reach the scheduler
    tls: tuple[str, str, str | None] | None = None  # (CA file, certificate, key) for a tls:// scheduler
    # a module-level function: a record -> its bytes as the caller writes them (run in the workers,
    # kept in the cache under the function's name); given, the records are summaries and
    # ``ScanResult.texts`` yields the texts
    encoder: Encoder | None = None
    # ``encoder``'s text in parts (``scan_json.file_rest_parts``): given, a large ELF file's hidden
    # fatbins are read and encoded by several workers (``elf_split``); without it (and an encoder)
    # each file is one worker's
    encoder_parts: Callable[..., Any] | None = None

    def option(self, name: str) -> Any:
        """One field of ``inventory`` (a dict's, or its default where it has none)."""
        return _field(self.inventory, name)


def _field(o: Options | Mapping[str, Any] | None, name: str) -> Any:
    """The field ``name`` of inventory options ``o`` (a dict's, or its default where it has none)."""
    if o is None:
        return FINGERPRINT_DEFAULTS[name]
    return o.get(name, FINGERPRINT_DEFAULTS[name]) if isinstance(o, Mapping) else getattr(o, name)


def options_fingerprint(o: Options | Mapping[str, Any] | None) -> str:
    v = {k: _field(o, k) for k in FINGERPRINT_DEFAULTS}
    return (
        f"k{int(v['kernels'])}d{int(v['details'])}r{int(v['resources'])}p{int(v['probe_small'])}"
        f"h{int(v['scan_hidden'])}m{v['members']}"
        + (f"p{v['platform']}" if v["platform"] else "")
        + ("s" if v["digests"] else "")  # rows with SHA-256 digests (the SBOM) are rows of their own
    )
