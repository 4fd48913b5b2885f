"""Inputs into records: every ``FileReport`` under the paths given, in walk order."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator

from fatbin_inspect.formats.model import FileError, FileReport
from fatbin_inspect.inventory.reader import Options, inspect_path
from fatbin_inspect.inventory.walk import iter_files

Progress = Callable[[int, int, int], None]


def iter_reports(
    paths: Iterable[str], opts: Options, progress: Progress | None = None
) -> Iterator[FileReport]:
    """Every record under ``paths``. With a ``progress`` callback ``(files done, files, bytes
    done)``, the trees are walked first, so the bar knows how many files there are."""
    if progress is None:
        for root in paths:
            for path, skip in iter_files(root):
                yield from _reports(path, skip, opts)
        return
    walked = [(path, skip) for root in paths for path, skip in iter_files(root)]
    done = 0
    for i, (path, skip) in enumerate(walked):
        yield from _reports(path, skip, opts)
        with contextlib.suppress(OSError):
            done += 0 if skip else os.path.getsize(path)
        progress(i + 1, len(walked), done)


def _reports(path: str, skip: str | None, opts: Options) -> Iterator[FileReport]:
    if skip:
        yield FileReport(path=path, format="unknown", size=0, error=FileError(skip))
    else:
        yield from inspect_path(path, opts)


def verdict_options(kernels: bool) -> Options:
    """Verdicts need only the entry headers and the small device-link cubins (``probe_small``);
    ``--kernels`` decodes every payload for kernel names."""
    return Options(kernels=kernels, details=kernels, resources=False, probe_small=True)


def parse_env(pairs: Iterable[str], inherit: bool) -> dict[str, str]:
    """``--env NAME=VALUE`` pairs, over this process's ``CUDA_*`` variables when ``inherit``."""
    from fatbin_inspect.errors import UsageError

    env = {k: v for k, v in os.environ.items() if k.startswith("CUDA_")} if inherit else {}
    for p in pairs:
        if "=" not in p:
            raise UsageError(f"--env {p!r}: expected NAME=VALUE, e.g. CUDA_FORCE_PTX_JIT=1")
        k, v = p.split("=", 1)
        env[k.strip()] = v
    return env
