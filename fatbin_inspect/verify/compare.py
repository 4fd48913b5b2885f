"""What ``verify`` loads for one file, and each load judged against the engine's prediction.

For every fatbin: the whole image in the normal child, again in the ``CUDA_DISABLE_PTX_JIT=1``
child (loaded there = native; loaded only in the normal child = JIT), then each entry alone (cubins;
PTX, whose load time is the JIT time). Relocatable cubins, relocatable PTX and LTO-IR need a link
step first: they are reported as not loadable alone, not loaded. A disagreement between the
prediction and the driver is a ``Disagreement`` that quotes both sides.

Per file, the engine's R-FILE verdict and coverage (docs/compatibility.md §3b) are compared with
the same rule applied to what the driver did with each counted fatbin: a library whose fatbins
for other GPUs fail one by one (209) while the rest load is confirmed as ``native``/``partial``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from fatbin_inspect.compat import data
from fatbin_inspect.compat.engine import evaluate, rollup
from fatbin_inspect.compat.targets import Target
from fatbin_inspect.compat.verdict import FatbinVerdict, FileVerdict, generation_reach, specialised_in
from fatbin_inspect.errors import InputError
from fatbin_inspect.formats.binio import Blob, open_blob
from fatbin_inspect.formats.model import KIND_PTX, KIND_SASS, Entry, Fatbin, FileReport
from fatbin_inspect.inventory.options import Options
from fatbin_inspect.inventory.payloads import payload
from fatbin_inspect.inventory.reader import inspect_pairs
from fatbin_inspect.verify.runner import CRASH, FAILED, LOADED, TIMEOUT, LoadResult

NATIVE, JIT, FAIL, NOT_ALONE, EMPTY, ERROR = "native", "jit", "fail", "not-loadable-alone", "empty", "error"
# codes the spec lets stand for one another (docs/compatibility.md R-JIT-ENV: 223 "or 209"; R-DRV: 35 or 3)
EQUIVALENT = ({209, 223}, {35, 3})


@dataclass(frozen=True)
class Prediction:
    verdict: str  # native | jit | fail | no-device-code
    code: int | None  # the CUDA error a failure surfaces as
    rule: str | None
    reason: str


@dataclass(frozen=True)
class ImageCheck:
    """One image loaded (or not) and its prediction."""

    path: str
    fatbin_offset: int
    entry: Entry | None  # None: the whole fatbin
    actual: str  # native | jit | fail | not-loadable-alone | empty | error
    load: LoadResult | None = None
    load_nojit: LoadResult | None = None  # whole fatbin only
    predicted: Prediction | None = None
    agree: bool | None = None  # None: nothing to compare (no prediction, timeout, not loadable)

    @property
    def what(self) -> str:
        return "fatbin" if self.entry is None else self.entry.arch

    @property
    def code(self) -> int | None:
        return self.load.code if self.load else None


@dataclass(frozen=True)
class FileCheck:
    """A file's R-FILE verdict, predicted and as the driver's whole-fatbin loads give it."""

    path: str
    predicted: str  # verdict/coverage, e.g. "native/partial"
    actual: str | None  # the same from the loads; None: some counted fatbin was not loaded
    loaded: int  # counted fatbins that loaded
    failed: int  # counted fatbins that failed
    reason: str  # the engine's reason for its file verdict
    agree: bool | None


@dataclass(frozen=True)
class Disagreement:
    path: str
    fatbin_offset: int | None  # None: the file's verdict
    what: str  # "fatbin" or the entry's arch
    predicted: str  # "native (sm_90 cubin)", "fail 209 CUDA_ERROR_NO_BINARY_FOR_GPU"
    actual: str
    reason: str  # the engine's reason for its prediction


def error_name(code: int | None) -> str:
    """CUresult number -> driver API name from errors.json (runtime name for runtime-only codes)."""
    if code is None:
        return ""
    row = data.error_by_number(code)
    if row is None:
        return f"CUresult {code}"
    return row.get("driver_api_name") or row.get("runtime_api_name") or f"CUresult {code}"


RELOCATABLE_SECTION = "__nv_relfatbin"  # device code of an -rdc object, input to nvlink


def not_loadable_alone(e: Entry, fb: Fatbin | None = None) -> str | None:
    if fb is not None and fb.section == RELOCATABLE_SECTION:
        return f"in {RELOCATABLE_SECTION}: -rdc device code that needs device linking"
    if e.kind == KIND_SASS and e.cubin is not None and e.cubin.elf_type == "rel":
        return "relocatable cubin (-rdc): needs device linking"
    if e.kind == KIND_PTX and e.relocatable_ptx:
        return "relocatable PTX (-rdc): needs device linking"
    if e.kind not in (KIND_SASS, KIND_PTX):
        return f"{e.kind}: the driver cannot load it without a link step"
    return None


Predictor = Callable[[Fatbin, bool], Prediction | None]  # (fatbin, JIT disabled) -> prediction
Loader = Callable[[bytes], LoadResult]  # image bytes -> what a child process made of loading it


def engine_predictor(target: Target) -> Predictor:
    """Predictions of the compatibility engine (``evaluate_fatbin``) for ``target``."""
    from fatbin_inspect.compat.fatbin_decision import evaluate_fatbin

    def predict(fb: Fatbin, nojit: bool) -> Prediction | None:
        t = dataclasses.replace(target, disable_ptx_jit=True) if nojit else target
        return as_prediction(evaluate_fatbin(fb, t))

    return predict


def as_prediction(res: Any) -> Prediction:  # FatbinResult, EntryResult or FileVerdict
    """The engine's verdict record (``verdict``; ``error`` as a number or a {code} record, or an
    ``outcome`` carrying ``error``/``rule``/``reason``) as a ``Prediction``."""
    outcome = getattr(res, "outcome", None)
    err = getattr(res, "error", None)
    if err is None and outcome is not None:
        err = outcome.error
    if err is not None and not isinstance(err, int):
        err = getattr(err, "code", None)
    rule = getattr(res, "rule", None) or getattr(outcome, "rule", None)
    reason = getattr(res, "reason", None) or getattr(outcome, "reason", "") or ""
    return Prediction(res.verdict, err, rule, reason)


def _same(pred: Prediction, actual: str, code: int | None) -> bool:
    if pred.verdict != actual:
        return False
    if actual != FAIL or pred.code is None or pred.code == code:
        return True
    return any(pred.code in s and code in s for s in EQUIVALENT)


def check_fatbin(
    path: str,
    fb: Fatbin,
    whole: bytes,
    images: Callable[[Entry], bytes],
    load: Loader,
    load_nojit: Loader,
    predict: Predictor | None,
    entries: bool = True,
) -> Iterator[ImageCheck]:
    """``load``/``load_nojit``: image bytes -> LoadResult in the normal / JIT-disabled child."""
    if not fb.entries:
        yield ImageCheck(path, fb.offset, None, EMPTY)
        return
    if all(not_loadable_alone(e, fb) for e in fb.entries):
        yield ImageCheck(path, fb.offset, None, NOT_ALONE)
    else:
        yield _judge_whole(path, fb, load(whole), load_nojit(whole), predict)
    if not entries:
        return
    for e in fb.entries:
        if not_loadable_alone(e, fb):
            yield ImageCheck(path, fb.offset, e, NOT_ALONE)
            continue
        res = load(images(e))
        actual = _actual(res, JIT if e.kind == KIND_PTX else NATIVE)
        pred = predict(dataclasses.replace(fb, entries=(e,)), False) if predict else None
        yield ImageCheck(path, fb.offset, e, actual, res, None, pred, _agree(pred, actual, res))


def _actual(res: LoadResult, how: str) -> str:
    if res.status in (TIMEOUT, CRASH):
        return ERROR
    return how if res.status == LOADED else FAIL


def _agree(pred: Prediction | None, actual: str, res: LoadResult) -> bool | None:
    if pred is None or actual == ERROR:
        return None
    return _same(pred, actual, res.code)


def _judge_whole(
    path: str, fb: Fatbin, res: LoadResult, res_nojit: LoadResult, predict: Predictor | None
) -> ImageCheck:
    actual = _actual(res, NATIVE if res_nojit.status == LOADED else JIT)
    if actual == JIT and res_nojit.status in (TIMEOUT, CRASH):
        actual = ERROR  # cannot tell native from JIT
    pred = predict(fb, False) if predict else None
    agree = _agree(pred, actual, res)
    if agree and predict and res_nojit.status in (LOADED, FAILED):
        pred_nojit = predict(fb, True)
        if pred_nojit is not None:  # (no prediction without JIT: nothing to contradict)
            agree = _same(pred_nojit, NATIVE if res_nojit.status == LOADED else FAIL, res_nojit.code)
    return ImageCheck(path, fb.offset, None, actual, res, res_nojit, pred, agree)


def describe_actual(c: ImageCheck) -> str:
    if c.actual in (NATIVE, JIT):
        return c.actual
    if c.actual == FAIL:
        return f"fail {c.code} {error_name(c.code)}"
    if c.actual == ERROR:
        r = c.load if c.load and c.load.status in (TIMEOUT, CRASH) else c.load_nojit
        return f"{r.status}: {r.detail}" if r else "error"
    return c.actual


def describe_prediction(p: Prediction | None) -> str:
    if p is None:
        return "no prediction"
    if p.verdict == FAIL:
        return f"fail {p.code} {error_name(p.code)}"
    return p.verdict


def findings(checks: list[ImageCheck]) -> list[Disagreement]:
    out = []
    for c in checks:
        if c.agree is False and c.predicted is not None:  # agree is None without a prediction
            actual = describe_actual(c)
            if c.actual == c.predicted.verdict and c.load_nojit is not None:
                actual += f"; with CUDA_DISABLE_PTX_JIT=1: {c.load_nojit.status} {c.load_nojit.code}"
            out.append(
                Disagreement(
                    c.path,
                    c.fatbin_offset,
                    c.what,
                    describe_prediction(c.predicted),
                    actual,
                    c.predicted.reason,
                )
            )
    return out


def summary(checks: list[ImageCheck]) -> tuple[tuple[str, int], ...]:
    """Counts over whole fatbins and entries: loaded natively, by JIT, failed, predictions confirmed."""

    def n(pred: Callable[[ImageCheck], bool]) -> int:
        return sum(1 for c in checks if pred(c))

    return (
        ("fatbins native", n(lambda c: c.entry is None and c.actual == NATIVE)),
        ("fatbins by JIT", n(lambda c: c.entry is None and c.actual == JIT)),
        ("fatbins failed", n(lambda c: c.entry is None and c.actual == FAIL)),
        ("entries loaded", n(lambda c: c.entry is not None and c.actual in (NATIVE, JIT))),
        ("entries failed", n(lambda c: c.entry is not None and c.actual == FAIL)),
        ("not loadable alone", n(lambda c: c.actual == NOT_ALONE)),
        ("timeouts/crashes", n(lambda c: c.actual == ERROR)),
        ("predictions confirmed", n(lambda c: c.agree is True)),
        ("predictions contradicted", n(lambda c: c.agree is False)),
    )


def check_file(
    path: str,
    load: Loader,
    load_nojit: Loader,
    predict: Predictor | None,
    entries: bool = True,
    max_fatbins: int | None = None,
    reports: list[FileReport] | None = None,
) -> Iterator[ImageCheck]:
    """Every fatbin of ``path`` (members of archives included), at most ``max_fatbins`` per file;
    each record read is appended to ``reports`` (for ``file_checks``)."""
    try:
        blob = open_blob(path)
    except InputError:
        return  # the caller reports unreadable inputs through the inventory
    for rec, b in inspect_pairs(path, blob, Options(details=True, image_bytes=True), 0):
        if reports is not None:
            reports.append(rec)
        if b is None:  # a record with no bytes of its own (an archive's, an image's) has no fatbin
            continue
        for fb in rec.fatbins[:max_fatbins]:
            yield from check_fatbin(
                rec.path,
                fb,
                whole_image(b, fb),
                functools.partial(entry_image, b),
                load,
                load_nojit,
                predict,
                entries,
            )


def file_checks(reports: list[FileReport], checks: list[ImageCheck], target: Target) -> list[FileCheck]:
    """R-FILE per file: the engine's verdict (device code only: loads involve no runtime) against
    the rule applied to the loads. Link-time inputs and files without counted fatbins are skipped."""
    whole = {(c.path, c.fatbin_offset): c.actual for c in checks if c.entry is None}
    out = []
    for rec in reports:
        fv = evaluate(rec, target, stack=False)
        counted = [v for v in fv.fatbins if v.ignored is None and v.verdict != "no-device-code"]
        if fv.verdict != "link-time" and counted:
            out.append(_file_check(fv, counted, [whole.get((rec.path, v.offset)) for v in counted]))
    return out


def _file_check(fv: FileVerdict, counted: list[FatbinVerdict], seen: list[str | None]) -> FileCheck:
    """The engine's R-FILE verdict of one file against the rule applied to its loads (``seen``)."""
    actual = observed_verdict(counted, seen)
    predicted = f"{fv.verdict}/{fv.coverage}"
    return FileCheck(
        fv.path,
        predicted,
        actual,
        sum(1 for s in seen if s in (NATIVE, JIT)),
        sum(1 for s in seen if s == FAIL),
        fv.reason,
        None if actual is None else actual == predicted,
    )


def observed_verdict(counted: list[FatbinVerdict], seen: list[str | None]) -> str | None:
    """R-FILE over observed loads (``seen``: native | jit | fail per counted fatbin): a failing
    fatbin is set aside when the engine finds it specialised elsewhere, else it is a gap."""
    if any(s not in (NATIVE, JIT, FAIL) for s in seen):
        return None  # not loaded, timed out or crashed: the file cannot be judged
    loading = [s for s in seen if s is not None and s != FAIL]
    failing = [v for v, s in zip(counted, seen, strict=True) if s == FAIL]
    general = _loads_general(counted, seen)
    reach = generation_reach(counted)  # the code held, not the loads: the guard of (i)
    gaps = sum(1 for v in failing if not specialised_in(v, general, reach))
    verdict, coverage = rollup(loading, len(failing) - gaps, gaps)
    return f"{verdict}/{coverage}"


def _loads_general(counted: list[FatbinVerdict], seen: list[str | None]) -> bool:
    """Some fatbin loaded natively the general (not arch-specific) cubin the engine picks."""
    return any(s == NATIVE and v.general_native for v, s in zip(counted, seen, strict=True))


def file_findings(files: list[FileCheck]) -> list[Disagreement]:
    return [
        Disagreement(
            f.path, None, "file", f.predicted, f"{f.actual} ({f.loaded} loaded, {f.failed} failed)", f.reason
        )
        for f in files
        if f.agree is False
    ]


def whole_image(blob: Blob, fb: Fatbin) -> bytes:
    """The fatbin as the driver takes it: header and entries; a lone .cubin/.ptx file is the image."""
    if fb.found_by == "file":
        return entry_image(blob, fb.entries[0])
    return blob.read(fb.offset, 16 + fb.size, "fatbin")


def entry_image(blob: Blob, e: Entry) -> bytes:
    """One entry, decompressed; PTX cut at its first NUL and NUL-terminated, as the driver wants."""
    data_ = payload(blob, e)
    if e.kind == KIND_PTX:
        return data_.split(b"\0", 1)[0] + b"\0"
    return data_
