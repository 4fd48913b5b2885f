"""verify without a GPU: the child protocol against a stand-in child (success, CUresult failure,
timeout, crash, no driver), and the judging of loads against the engine's prediction."""

import os
import subprocess
import sys

import pytest
from conftest import TESTS, fixture_path

from fatbin_inspect.verify import compare
from fatbin_inspect.verify.runner import (
    CRASH,
    FAILED,
    LOADED,
    TIMEOUT,
    ChildSession,
    LoadResult,
    NoDevice,
    child_env,
)

STANDIN = (sys.executable, os.path.join(TESTS, "verify_standin_child.py"))


@pytest.fixture
def session():
    with ChildSession(dict(os.environ), timeout=2.0, child_cmd=STANDIN) as s:
        yield s


def test_success_and_cuda_error_share_one_child(session):
    ok = session.load(b"OK\0" + bytes(200000))  # larger than a pipe buffer
    bad = session.load(b"FAIL:209")
    assert (ok.status, ok.code, ok.ms, ok.jit) == (LOADED, 0, 0.5, False)
    assert (bad.status, bad.code) == (FAILED, 209)
    assert session.started == 1


def test_timeout_costs_one_result(session):
    r = session.load(b"HANG")
    assert r.status == TIMEOUT and "no reply within 2 s" in r.detail
    assert session.load(b"OK").status == LOADED
    assert session.started == 2


def test_crash_costs_one_result(session):
    r = session.load(b"CRASH")
    assert r.status == CRASH and "signal 11" in r.detail and "driver exploded" in r.detail
    assert session.load(b"FAIL:222").code == 222
    assert session.started == 2


def test_context_breaking_error_restarts_the_child(session):
    assert session.load(b"BREAK").code == 700
    assert session.load(b"OK").status == LOADED
    assert session.started == 2


def test_no_driver_is_a_device_error(session):
    with pytest.raises(NoDevice, match="CUresult 100"):
        session.load(b"FATAL")


def test_disabled_jit_environment_reaches_the_child():
    env = child_env({"PATH": os.environ.get("PATH", ""), "CUDA_DISABLE_PTX_JIT": "1"}, disable_jit=False)
    assert "CUDA_DISABLE_PTX_JIT" not in env and env["CUDA_CACHE_DISABLE"] == "1"
    with ChildSession(child_env(dict(os.environ), True), 5.0, child_cmd=STANDIN) as s:
        assert s.load(b"PTX .version 9.0").code == 223


# ------------------------------------------------------------------------ judging against predictions
def target(cc, branch="580"):
    from fatbin_inspect.compat.targets import Target, gpu_for_cc, resolve_driver

    return Target(gpu_for_cc(cc), resolve_driver(branch))


def loads(normal, nojit):
    """Fake driver: ``normal``/``nojit`` map entry kind ('whole', 'sass', 'ptx') to a CUresult."""

    def make(table):
        def load(image):
            kind = (
                "sass" if image[:4] == b"\x7fELF" else "whole" if image[:4] == b"\x50\xed\x55\xba" else "ptx"
            )
            code = table[kind]
            return LoadResult(LOADED if code == 0 else FAILED, code, 1.0)

        return load

    return make(normal), make(nojit)


def run(path, cc, normal, nojit):
    load, load_nojit = loads(normal, nojit)
    return list(
        compare.check_file(fixture_path("bin", path), load, load_nojit, compare.engine_predictor(target(cc)))
    )


RAW = "t13_raw_sm75_c75_sm120.fatbin"  # sm_75 and sm_120 cubins, compute_75 PTX (ISA 9.0)


def test_jit_confirmed_when_only_ptx_fits():
    # on CC 9.0 neither cubin can run (other majors); the compute_75 PTX JITs with a 580 driver
    checks = run(RAW, (9, 0), {"whole": 0, "sass": 209, "ptx": 0}, {"whole": 209, "sass": 209, "ptx": 223})
    assert [(c.what, c.actual) for c in checks] == [
        ("fatbin", "jit"),
        ("sm_75", "fail"),
        ("compute_75", "jit"),
        ("sm_120", "fail"),
    ]
    assert all(c.agree for c in checks), [(c.what, c.actual, c.predicted) for c in checks]
    assert compare.findings(checks) == []
    counts = dict(compare.summary(checks))
    assert counts["fatbins by JIT"] == 1 and counts["predictions confirmed"] == 4


def test_native_confirmed_and_no_jit_run_checked():
    # on CC 7.5 the sm_75 cubin loads, also with the JIT disabled
    checks = run(RAW, (7, 5), {"whole": 0, "sass": 0, "ptx": 0}, {"whole": 0, "sass": 0, "ptx": 223})
    assert checks[0].actual == "native" and checks[0].agree
    # a driver that needs the JIT for it contradicts the prediction "native"
    checks = run(RAW, (7, 5), {"whole": 0, "sass": 0, "ptx": 0}, {"whole": 209, "sass": 0, "ptx": 223})
    assert checks[0].actual == "jit" and checks[0].agree is False


def test_disagreement_is_a_finding_with_both_sides():
    # a driver that loads the sm_75 cubin on CC 9.0 contradicts R-SASS-1
    checks = run(RAW, (9, 0), {"whole": 0, "sass": 0, "ptx": 0}, {"whole": 0, "sass": 0, "ptx": 223})
    found = compare.findings(checks)
    assert found and all(f.predicted != f.actual for f in found)
    assert any(
        f.what == "sm_75"
        and f.predicted == "fail 209 CUDA_ERROR_NO_BINARY_FOR_GPU"
        and f.actual == "native"
        and "R-SASS" not in f.actual
        and f.reason
        for f in found
    )


def test_relocatable_images_are_not_loaded():
    def never(image):
        raise AssertionError("a relocatable image was sent to the driver")

    checks = list(compare.check_file(fixture_path("bin", "t09_rdc_a_sm80.o"), never, never, None))
    assert checks and all(c.actual == compare.NOT_ALONE for c in checks)
    assert dict(compare.summary(checks))["fatbins failed"] == 0


def test_timeout_is_not_a_finding():
    def hung(image):
        return LoadResult(TIMEOUT, detail="no reply within 1 s")

    checks = list(
        compare.check_fatbin(
            "x", _fatbin(), b"", lambda e: b"", hung, hung, compare.engine_predictor(target((7, 5)))
        )
    )
    assert checks[0].actual == compare.ERROR and checks[0].agree is None
    assert compare.findings(checks) == []


def _fatbin():
    from fatbin_inspect.inventory.options import Options
    from fatbin_inspect.inventory.reader import inspect_path

    rec = next(inspect_path(fixture_path("bin", RAW), Options(details=True)))
    return rec.fatbins[0]


def test_error_names_come_from_errors_json():
    assert compare.error_name(222) == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
    assert compare.error_name(35) == "cudaErrorInsufficientDriver"
    assert compare.error_name(424242) == "CUresult 424242"


@pytest.mark.skipif(os.path.exists("/proc/driver/nvidia/version"), reason="an NVIDIA driver is present")
def test_cli_without_driver_says_so_in_one_line_and_exits_4():
    p = subprocess.run(
        [sys.executable, "-m", "fatbin_inspect", "verify", fixture_path("bin", "t01_exe_sm80")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 4, p.stderr
    assert p.stdout == "" and len(p.stderr.strip().splitlines()) == 1 and "needs a GPU" in p.stderr


# ------------------------------------------------------------------------ file verdicts (R-FILE)
def _driver_as_predicted(path, t, fail_all=False):
    """Fake driver for whole fatbins of ``path``: each loads or fails (209) as the engine predicts
    for it (or every one fails), natively only where the engine picks a cubin."""
    from fatbin_inspect.compat.engine import evaluate_fatbin
    from fatbin_inspect.formats.binio import open_blob
    from fatbin_inspect.inventory.options import Options
    from fatbin_inspect.inventory.reader import inspect_path

    rec = next(inspect_path(path, Options(details=True)))
    blob = open_blob(path)
    verdict = {compare.whole_image(blob, fb): evaluate_fatbin(fb, t).verdict for fb in rec.fatbins}

    def load(image):
        ok = not fail_all and verdict[image] in ("native", "jit")
        return LoadResult(LOADED if ok else FAILED, 0 if ok else 209, 1.0)

    def load_nojit(image):
        ok = not fail_all and verdict[image] == "native"
        return LoadResult(LOADED if ok else FAILED, 0 if ok else 209, 1.0)

    return load, load_nojit


def _file_run(path, t, fail_all=False):
    """Whole-fatbin loads of ``path`` by the fake driver, and the file checks over them."""
    load, load_nojit = _driver_as_predicted(path, t, fail_all)
    reports: list = []
    checks = list(
        compare.check_file(path, load, load_nojit, compare.engine_predictor(t), False, None, reports)
    )
    return checks, compare.file_checks(reports, checks, t)


@pytest.mark.parametrize("cc", [(9, 0), (8, 0), (12, 0)])
def test_file_verdict_confirmed_when_specialised_fatbins_fail_one_by_one(cc):
    # f3: general code plus fatbins made for other GPUs: those fail alone (209), the file is
    # still native with partial coverage, and the loads confirm it
    path, t = fixture_path("units", "f3_specialised.so"), target(cc)
    checks, files = _file_run(path, t)
    assert any(c.entry is None and c.actual == "fail" for c in checks)  # some fatbins do fail
    (f,) = files
    assert f.predicted == f.actual == "native/partial" and f.agree and f.failed > 0 and f.loaded > 0
    assert compare.file_findings([f]) == []


def test_file_verdict_contradicted_is_a_finding():
    path, t = fixture_path("units", "f3_specialised.so"), target((9, 0))
    checks, files = _file_run(path, t, fail_all=True)
    (f,) = files
    assert (f.predicted, f.actual, f.agree) == ("native/partial", "fail/none", False)
    (d,) = compare.file_findings([f])
    assert d.fatbin_offset is None and d.what == "file" and "fail/none" in d.actual


def test_file_verdict_gap_fails_the_file_from_the_loads():
    # f4 on H100: one fatbin has only older baseline code while Hopper is targeted nowhere (a gap)
    path, t = fixture_path("units", "f4_gap.so"), target((9, 0))
    checks, files = _file_run(path, t)
    (f,) = files
    assert f.predicted == f.actual == "fail/partial" and f.agree


def test_verify_renderers_show_file_verdicts():
    from fatbin_inspect.render.verify_json import verify_document
    from fatbin_inspect.render.verify_table import render_verify

    path, t = fixture_path("units", "f3_specialised.so"), target((9, 0))
    checks, files = _file_run(path, t, fail_all=True)
    found = compare.findings(checks) + compare.file_findings(files)
    doc = verify_document("H100", checks, found, files)
    assert doc["files"][0]["predicted"] == "native/partial" and doc["files"][0]["agree"] is False
    text = render_verify("H100", checks, found, files=files, width=200)
    assert "file verdicts (R-FILE) confirmed 0, contradicted 1" in text
    assert "file: predicted native/partial, driver says fail/none" in text
