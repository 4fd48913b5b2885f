"""``fatbin-inspect gate PATH...``: fail CI when a release does not cover what its policy requires.

Exit 0 clean, 1 findings at or above ``--fail-on`` (0 with ``--exit-zero``), 2 usage or internal
error. Every option has an environment default ``FATBIN_INSPECT_<OPTION>``; flags and environment
win over ``[tool.fatbin-inspect]`` in the nearest pyproject.toml.
"""

from __future__ import annotations

import importlib.util
import os
import re

import click

from fatbin_inspect.cli.common import output_option, progress_for
from fatbin_inspect.cli.findings import emit_findings, fail_options, findings_format_option, with_views
from fatbin_inspect.cli.fleet import targets_option
from fatbin_inspect.cli.options import driver_option, examples, gpu_option, ui_options
from fatbin_inspect.errors import UsageError
from fatbin_inspect.formats.model import FileReport
from fatbin_inspect.inventory.core import Options, inspect_path

TORCH_LIB = "torch/lib/libtorch_cuda.so"


def _env(name: str) -> str:
    return f"FATBIN_INSPECT_{name}"


def torch_reference(match: str, reports) -> FileReport:
    """libtorch_cuda.so for ``--match``: among the inputs, else the installed torch (found, not
    imported), or the library file ``match`` names."""
    if match != "torch":
        if not os.path.isfile(match):
            raise UsageError(f"--match: {match!r} is neither 'torch' nor a library file")
        return next(iter(inspect_path(match, Options())))
    for r in reports:
        if r.path.replace("\\", "/").endswith(TORCH_LIB) and r.fatbins:
            return r
    lib = installed_torch_lib()
    if lib is None:
        raise UsageError(f"--match torch: no {TORCH_LIB} among the inputs and no torch installed")
    return next(iter(inspect_path(lib, Options())))


def installed_torch_lib() -> str | None:
    spec = importlib.util.find_spec("torch")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    lib = os.path.join(next(iter(spec.submodule_search_locations)), "lib", "libtorch_cuda.so")
    return lib if os.path.isfile(lib) else None


class CommaList(click.ParamType):
    """A repeatable option whose values (and environment variable) may also be comma lists:
    ``--require sm_80 --require sm_90,sm_100`` accumulate."""

    name = "list"
    envvar_list_splitter = ","


def _joined(values) -> str | None:
    """Repeated and comma-separated values as one comma list (None when none were given)."""
    items = [i.strip() for v in values or () for i in v.split(",") if i.strip()]
    return ",".join(items) if items else None


def gate_context(paths, reports, reference):
    """What the gate needs besides the records: wheel requirements as runtimes (R-RT 4), the
    inputs that name CUDA (FBI015 when they hold no device code), torch's runtime (FBI017)."""
    import zipfile

    from fatbin_inspect.checks.gate import Context
    from fatbin_inspect.compat import runtime

    wheels = {r.path.split("!", 1)[0] for r in reports} | {p for p in paths if os.path.isfile(p)}
    wheel_rts, named = {}, set()
    for w in sorted(wheels):
        if not (w.lower().endswith(".whl") and zipfile.is_zipfile(w)):
            continue
        rt = runtime.from_wheel(w)
        if rt is not None:
            wheel_rts[w] = rt
        if rt is not None or re.search(r"(?i)(cuda|[_-]cu\d{2,3}\b|^nvidia[_-])", os.path.basename(w)):
            named.add(w)
    torch_rt = runtime.for_file(reference) if reference is not None else None
    return Context(wheel_rts, frozenset(named), torch_rt)


def run_gate(paths, pol, given, target_files=(), match=None, progress=None):
    """(findings, records) of ``paths`` under ``pol`` with the command line's ``given`` flags on top
    of per-distribution overrides: what ``gate`` reports, and the library's ``gate()``."""
    from fatbin_inspect.checks.gate import gate
    from fatbin_inspect.cli.inventory import iter_reports
    from fatbin_inspect.system.stack import local_devices

    fleet: tuple = ()
    if target_files or pol.targets:
        from fatbin_inspect.cli import fleet as fleet_mod

        found = (
            [t for f in target_files for t in fleet_mod.read_targets(f, pol.min_driver)]
            if target_files
            else fleet_mod.policy_targets(pol.targets, pol.source, pol.min_driver)
        )
        if not found:
            raise UsageError("gate: --targets: no GPU in any of the files given")
        fleet = fleet_mod.merge(found)
    if not (pol.require or pol.gpus or pol.forbid or match or pol.overrides or fleet):
        raise UsageError(
            "gate: nothing to check: give --require, --gpu, --targets, --forbid or --match, "
            "or a [tool.fatbin-inspect] policy"
        )
    reports = list(iter_reports(paths, Options(probe_small=True), progress))
    reference = torch_reference(match, reports) if match else None
    ctx = gate_context(paths, reports, reference)
    report = gate(reports, pol, given, reference, fleet, local_devices(pol.gpus, pol.min_driver), ctx)
    return report, reports


@examples(
    "fatbin-inspect gate dist/*.whl --require sm_80,sm_90,sm_100,sm_120 --format sarif -o gate.sarif",
    "fatbin-inspect gate dist/ --gpu H100 --gpu 'RTX 5090' --driver 550 --fail-on warning",
    "fatbin-inspect gate dist/ --format github --exit-zero     # annotate, never fail the job",
    "fatbin-inspect gate --match torch        # extensions narrower than the installed torch",
)
@click.command("gate")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option(
    "--require",
    multiple=True,
    type=CommaList(),
    envvar=_env("REQUIRE"),
    help="Required SASS archs, repeatable or comma-separated: sm_80,sm_90,sm_100,sm_120 (env FATBIN_INSPECT_REQUIRE).",
)
@click.option(
    "--require-exact/--no-require-exact",
    default=None,
    envvar=_env("REQUIRE_EXACT"),
    help="A required arch needs a cubin built for exactly it (sm_86), not one that loads there (sm_80).",
)
@click.option(
    "--ptx-counts/--no-ptx-counts",
    default=None,
    envvar=_env("PTX_COUNTS"),
    help="Accept JIT-able PTX in place of SASS (as a note).",
)
@click.option(
    "--require-ptx/--no-require-ptx",
    default=None,
    envvar=_env("REQUIRE_PTX"),
    help="Require PTX for the newest required arch (forward compatibility).",
)
@click.option(
    "--forbid",
    multiple=True,
    type=CommaList(),
    envvar=_env("FORBID"),
    help="Archs that must not appear, repeatable or comma-separated: sm_50,compute_50.",
)
@click.option(
    "--allow-surplus/--no-allow-surplus",
    default=None,
    envvar=_env("ALLOW_SURPLUS"),
    help="Accept SASS for archs the policy does not require (default: yes).",
)
@gpu_option("Target GPU, checked with the compatibility engine ('H100,RTX 5090,8.9').", envvar=_env("GPU"))
@targets_option
@driver_option(
    "--min-driver",
    dest="min_driver",
    help="Oldest driver the release supports (535, 550.54.14): PTX and runtime checks.",
    envvar=[_env("DRIVER"), _env("MIN_DRIVER")],
)
@click.option(
    "--ignore", "ignore", multiple=True, envvar=_env("IGNORE"), help="Skip artifacts matching GLOB (repeat)."
)
@click.option(
    "--disable",
    multiple=True,
    type=CommaList(),
    envvar=_env("DISABLE"),
    help="Rule ids never reported, repeatable or comma-separated: FBI007,FBI006.",
)
@click.option(
    "--match",
    "match",
    default=None,
    envvar=_env("MATCH"),
    help="'torch': report extensions with fewer archs than the installed torch (FBI009).",
)
@click.option(
    "--config",
    default=None,
    envvar=_env("CONFIG"),
    type=click.Path(dir_okay=False),
    help="Policy file (default: the nearest pyproject.toml).",
)
@click.option("--isolated", is_flag=True, envvar=_env("ISOLATED"), help="Read no policy file; flags only.")
@fail_options
@findings_format_option
@output_option
@ui_options
def gate_cmd(
    paths,
    require,
    require_exact,
    ptx_counts,
    require_ptx,
    forbid,
    allow_surplus,
    gpus,
    target_files,
    min_driver,
    ignore,
    disable,
    match,
    config,
    isolated,
    fail_on,
    exit_zero,
    fmt,
    output,
):
    """Check PATHS (files, wheels, directories) against the release policy; findings FBI001..."""
    from fatbin_inspect.checks import policy as policy_mod

    flags = {
        "require": _joined(require),
        "require_exact": require_exact,
        "ptx_counts": ptx_counts,
        "require_ptx": require_ptx,
        "forbid": _joined(forbid),
        "allow_surplus": allow_surplus,
        "gpus": _joined(gpus),
        "min_driver": min_driver,
        "ignore": list(ignore) or None,
        "disable": _joined(disable),
        "fail_on": fail_on,
    }
    pol, given = policy_mod.load("" if isolated else config, flags)
    if not paths:
        lib = installed_torch_lib() if match == "torch" else None
        if lib is None:
            raise UsageError("gate: give at least one PATH (file, wheel or directory)")
        paths = (os.path.dirname(os.path.dirname(os.path.dirname(lib))),)  # torch's site-packages
    with progress_for(fmt, "gating") as progress:
        report, reports = run_gate(paths, pol, given, target_files, match, progress)
    if fmt == "html":
        report = with_views(report, [r for r in reports if r.fatbins or r.error])
    emit_findings(report, fmt, pol.fail_on, output, exit_zero, [*paths, *(r.path for r in reports)])
