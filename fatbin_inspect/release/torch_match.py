"""``--match torch``: the archs of the reference library and which files are torch's own. Pure."""

from __future__ import annotations

from fatbin_inspect.formats.model import KIND_SASS, FileReport


def reference_archs(report: FileReport) -> tuple[str, ...]:
    """The baseline SASS archs a reference library (libtorch_cuda.so) was built for."""
    return tuple(f"sm_{sm}" for sm in sorted({e.sm for e in report.entries if e.kind == KIND_SASS}))


def is_torch(report: FileReport, reference: FileReport) -> bool:
    """torch's own files: the reference and everything in the package folder around its lib/."""
    top = reference.path.replace("\\", "/").rsplit("/lib/", 1)[0]
    return report.path == reference.path or report.path.replace("\\", "/").startswith(top + "/")
