"""Findings: what a gate, a diff or a check reports, with stable rule ids (``FBI001``...).

The rule table is data: ids never change meaning and are never reused, so SARIF baselines, JUnit
history and ``disable = [...]`` lists keep working across releases. A finding may carry a
severity other than its rule's default (a forbidden arch is an error, a surplus one a warning;
the policy can re-grade any rule).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fatbin_inspect.formats.model import FileReport
    from fatbin_inspect.scanning.coverage import Coverage

# every rule has a section of its own in docs/ci.md, headed by its id (anchor #fbi001): SARIF's
# helpUri and the other formats' links point there (tests/package/test_docs.py holds them to the file)
RULES_DOC = "https://github.com/fatbin-inspect/fatbin-inspect/blob/main/docs/ci.md"
SEVERITIES = ("note", "warning", "error")  # ascending; SARIF's result levels use the same words
FAIL_LEVELS = ("error", "warning", "never")


@dataclass(frozen=True)
class Rule:
    id: str
    name: str  # kebab-case, SARIF reportingDescriptor.name
    severity: str  # default severity
    summary: str  # one line: SARIF shortDescription
    help: str  # what to do about it: SARIF help / fullDescription

    @property
    def help_uri(self) -> str:
        """The rule's section of docs/ci.md."""
        return f"{RULES_DOC}#{self.id.lower()}"


RULES: tuple[Rule, ...] = (
    Rule(
        "FBI001",
        "no-compatible-sass",
        "error",
        "No compatible SASS (cubin) for a required target",
        "Some fat binaries of this file hold no cubin that the required architecture can load, and no "
        "usable PTX either: kernels fail with 'no kernel image is available' (209). Add the arch to "
        "TORCH_CUDA_ARCH_LIST / CMAKE_CUDA_ARCHITECTURES / -gencode, or drop it from the policy.",
    ),
    Rule(
        "FBI002",
        "jit-only",
        "error",
        "Only PTX (JIT) for a required target",
        "No cubin fits, but PTX can be JIT-compiled by the driver: the first launch compiles every "
        "kernel (seconds to minutes, cached in ~/.nv/ComputeCache) and fails with 222 on a driver "
        "older than the PTX. Build SASS for the arch, or set ptx-counts = true to accept JIT (the "
        "finding is then a note).",
    ),
    Rule(
        "FBI003",
        "ptx-newer-than-driver",
        "error",
        "PTX is newer than the minimum driver can JIT",
        "The only usable code is PTX whose ISA version the minimum driver's JIT does not know: the "
        "load fails with cudaErrorUnsupportedPtxVersion (222). Ship SASS for the GPU, build the PTX "
        "with an older toolkit, or raise the minimum driver.",
    ),
    Rule(
        "FBI004",
        "runtime-needs-newer-driver",
        "error",
        "The CUDA runtime the file needs is newer than the minimum driver",
        "The file links a CUDA runtime whose major version the minimum driver does not serve: CUDA "
        "initialisation fails with cudaErrorInsufficientDriver (35). Build against an older CUDA "
        "major or raise the minimum driver.",
    ),
    Rule(
        "FBI005",
        "arch-specific-only",
        "warning",
        "Only arch-specific code (sm_XYa) where a family or baseline target is required",
        "sm_XYa cubins run on exactly one compute capability (sm_100a: B200 but not B300). Add a "
        "baseline (sm_100) or family (sm_100f) build next to the arch-specific one.",
    ),
    Rule(
        "FBI006",
        "missing-forward-ptx",
        "warning",
        "No PTX for the newest required architecture (no forward compatibility)",
        "Without compute_XY PTX for the newest arch, GPUs newer than every cubin cannot JIT the "
        "kernels and fail with 209. Add code=compute_XY to the newest -gencode (or '+PTX' to the "
        "last TORCH_CUDA_ARCH_LIST entry).",
    ),
    Rule(
        "FBI007",
        "surplus-or-forbidden-arch",
        "warning",
        "Code for an architecture the policy forbids, or does not ask for",
        "Forbidden archs are errors (e.g. code for GPUs the release must not claim); surplus archs "
        "(allow-surplus = false) only cost size. Remove them from the build's arch list.",
    ),
    Rule(
        "FBI008",
        "unreadable-input",
        "error",
        "An input could not be read or parsed",
        "The file (or archive member) could not be read, so nothing can be said about its device "
        "code. The message names the file and the byte offset; exclude it with 'ignore' if it is "
        "not CUDA code.",
    ),
    Rule(
        "FBI009",
        "narrower-than-torch",
        "warning",
        "Extension covers fewer architectures than the installed torch",
        "torch itself runs on this GPU architecture but this extension has no code for it, so "
        "calls into the extension fail there (209). Rebuild it with torch's arch list "
        "(TORCH_CUDA_ARCH_LIST).",
    ),
    Rule(
        "FBI010",
        "arch-dropped",
        "error",
        "A release dropped device code for an architecture",
        "The old release had code for this architecture and the new one does not: users on those "
        "GPUs lose support (or fall back to JIT). Restore the arch or announce the drop.",
    ),
    Rule(
        "FBI011",
        "kernels-dropped",
        "warning",
        "A release dropped kernels",
        "Kernels present in the old release are missing from the new one for this architecture; "
        "code launching them fails with 'named symbol not found' (500) or 209.",
    ),
    Rule(
        "FBI012",
        "file-dropped",
        "warning",
        "A file with device code is missing from the new release",
        "The old release shipped this file with device code; the new one does not have it at the "
        "same path inside the container.",
    ),
    Rule(
        "FBI013",
        "gpu-unsupported-by-driver",
        "error",
        "The driver branch does not support the target GPU",
        "The driver branch predates the GPU (its compute capability needs a newer branch) or no longer "
        "supports its architecture (legacy GPUs stay on their last branch): the GPU is not enumerated "
        "and CUDA initialisation fails with cudaErrorNoDevice (100). Install a driver branch that "
        "supports the GPU, or check against the branch the deployment really runs.",
    ),
    Rule(
        "FBI014",
        "specialised-elsewhere",
        "note",
        "Code made for other GPUs is set aside on a target (R-FILE, R-UNIT)",
        "Some fat binaries (or whole files of a distribution) hold only code for other GPUs: a higher "
        "compute capability, arch/family-specific code, or an older generation the library replaces "
        "with its general code. Libraries that pick kernels by compute capability never launch them "
        "there; if one did, it would fail with 209. Informational; re-grade it to enforce full coverage.",
    ),
    Rule(
        "FBI015",
        "nothing-to-check",
        "error",
        "The gate found nothing to check",
        "No input held device code: no artifacts were found, every one was ignored, or a wheel that "
        "names CUDA in its name or requirements ships no device code. A gate that checks nothing "
        "passes by accident; fix the paths or the ignore globs, or disable FBI015 for CPU-only builds.",
    ),
    Rule(
        "FBI016",
        "no-exact-cubin",
        "error",
        "No cubin for exactly the required architecture (require-exact)",
        "The code loads natively through a cubin for a lower minor of the same major (sm_80 on 8.6), "
        "but the policy asks for a cubin built for exactly this arch (require-exact). Add the arch to "
        "the build, or drop require-exact to accept same-major compatibility (R-SASS-1).",
    ),
    Rule(
        "FBI017",
        "cuda-major-differs-from-torch",
        "error",
        "An extension needs another CUDA major than the torch it is installed with",
        "The extension links a CUDA runtime of another major than torch's (a CUDA 12 extension beside "
        "a CUDA 13 torch): both runtimes must load into one process, and the driver must serve the "
        "newer one. Install the extension build that matches torch.version.cuda.",
    ),
    Rule(
        "FBI018",
        "driver-numbering-mismatch",
        "warning",
        "The target's driver number does not fit the platform it is judged on",
        "A Jetson target was given a desktop driver number (Jetson drivers come with JetPack/L4T), or a "
        "Windows binary is judged against a Linux driver number (Windows numbers differ, e.g. 581.xx for "
        "R580). The verdict uses the CUDA level of the number as given; check against the real driver.",
    ),
    Rule(
        "FBI019",
        "runtime-not-known",
        "warning",
        "The CUDA runtime the file needs is not known: the driver check was not made",
        "No evidence names the CUDA runtime the file needs: it links no cudart, and neither its "
        "wheel's requirements, its install folder (nvidia/cu13/), its distribution's name nor a "
        "cudart beside it declares one (R-RT). Its device code was judged, but whether the driver is "
        "new enough for its runtime (35, cudaErrorInsufficientDriver) was not: check the runtime the "
        "program ships, or give it with the package's requirements.",
    ),
    Rule(
        "FBI020",
        "wrong-host-architecture",
        "error",
        "The file is built for another CPU than the target's host",
        "A host binary built for x86_64 cannot be installed or loaded on an aarch64 host (Jetson, DGX "
        "Spark, Grace superchips), nor the reverse (R-HOST): pip refuses the wheel's platform tag and "
        "the dynamic loader refuses the file, before any CUDA code runs. Publish a build for the "
        "host's CPU (a manylinux aarch64 wheel).",
    ),
    Rule(
        "FBI021",
        "jit-too-slow",
        "error",
        "The PTX JIT on a target is estimated longer than max-jit-seconds",
        "No cubin fits the GPU, so the driver compiles the PTX before the first launch, on the host "
        "CPU, and this artifact's PTX is estimated (R-JIT-COST, data/jit_model.json) to take longer "
        "than the policy's max-jit-seconds; it repeats at every start when the JIT cache is disabled, "
        "not writable or too small. Build SASS for the GPU, or raise max-jit-seconds.",
    ),
)

RULE_BY_ID: dict[str, Rule] = {r.id: r for r in RULES}


@dataclass(frozen=True)
class Finding:
    rule_id: str
    severity: str
    message: str  # one line, names the arch/target; the path is rendered separately
    path: str  # the artifact: a file, or CONTAINER!MEMBER
    target: str | None = None  # "sm_90", "H100 SXM (CC 9.0), driver 535"; None: file-wide
    arch: str | None = None  # the arch the finding is about, when there is one
    distribution: str | None = None  # "bitsandbytes 0.42.0"
    offset: int | None = None  # byte offset for unreadable inputs

    @property
    def rule(self) -> Rule:
        return RULE_BY_ID[self.rule_id]

    @property
    def fingerprint(self) -> str:
        """Stable identity across runs: rule, artifact, target and arch (not the message text)."""
        key = "\0".join((self.rule_id, self.path, self.target or "", self.arch or ""))
        return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]


@dataclass(frozen=True)
class Check:
    """One artifact checked against one target: a JUnit test case (target None: file-wide rules)."""

    path: str
    target: str | None = None
    distribution: str | None = None


@dataclass(frozen=True)
class FindingsReport:
    """What a reporting command hands to the findings renderers."""

    command: str  # gate | diff | check | scan
    findings: tuple[Finding, ...]
    checks: tuple[Check, ...] = ()
    targets: tuple[str, ...] = ()  # what was checked, in order: required archs, then GPU targets
    inputs: tuple[str, ...] = ()
    # what a report meant to be looked at (--format html) shows besides: the coverage matrix
    # (with per-target verdicts when the command has them) and the inventory to drill into
    coverage: Coverage | None = None
    files: tuple[FileReport, ...] = ()
    # the engine's verdicts the gate drew its findings from, as (target label, FileVerdict): what
    # the HTML verdict heatmap shows for a gate (the verdict ``check`` gives on that target)
    judged: tuple[tuple[str, Any], ...] = ()
    config: str | None = None  # gate: the policy file read (None: none; release.policy.load)


def rank(severity: str) -> int:
    return SEVERITIES.index(severity)


def fails(findings: Iterable[Finding], fail_on: str) -> bool:
    """True when any finding is at or above ``fail_on`` (``never`` never fails)."""
    if fail_on == "never":
        return False
    floor = rank(fail_on)
    return any(rank(f.severity) >= floor for f in findings)


def counts(findings: Iterable[Finding]) -> dict[str, int]:
    out = dict.fromkeys(SEVERITIES, 0)
    for f in findings:
        out[f.severity] += 1
    return out


def sort_key(f: Finding) -> tuple[str, int, str, str, str]:
    return (f.path, -rank(f.severity), f.rule_id, f.target or "", f.arch or "")


def findings_for(check: Check, findings: Iterable[Finding]) -> tuple[Finding, ...]:
    return tuple(f for f in findings if f.path == check.path and f.target == check.target)


def split_path(path: str) -> tuple[str, str | None]:
    """``dist/x.whl!pkg/lib.so`` -> (``dist/x.whl``, ``pkg/lib.so``); plain files -> (path, None).
    The container is the real file name (``a\\!b.whl!m.so`` -> ``a!b.whl``); the member stays in
    path form (``inventory.member_path``)."""
    from fatbin_inspect.inventory import member_path

    parts = member_path.split(path)
    if len(parts) == 1:
        return parts[0], None
    return parts[0], "!".join(member_path.escape(p) for p in parts[1:])
