"""One judging path (issue 21): ``check``, ``list --gpu``, ``scan --gpu`` and the API give every
file the same verdict and runtime on every target, wheels inside folders included (the runtime
their METADATA names), because all of them call ``judging.verdicts.judge``."""

import shutil
import zipfile

import pytest
from conftest import cli, cli_json, fixture_path

import fatbin_inspect as fi

GPUS = ["H100", "RTX 4090", "6.1"]
DRIVER = "525"  # CUDA 12.0: a wheel pinned to CUDA 12.4 or 13 fails 35 here


def _wheel(path, requires, members):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(
            "pkg-1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n"
            + "".join(f"Requires-Dist: {r}\n" for r in requires),
        )
        for src, name in members:
            zf.write(src, name)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Fixtures with and without runtime evidence, loose and in wheels one folder down, and a
    plain zip (not a wheel: its METADATA speaks for nothing)."""
    root = tmp_path_factory.mktemp("judging")
    sub = root / "dist"
    sub.mkdir()
    no_rt = fixture_path("bin", "hidden_rodata_fatbin.so")  # no cudart linked
    with_rt = fixture_path("bin", "t12_lib_sm86_c89.so")  # links libcudart.so.13
    _wheel(
        sub / "pkg-1.0-py3-none-manylinux_2_28_x86_64.whl",
        ["nvidia-cuda-runtime-cu12==12.4.127"],
        [(no_rt, "pkg/a.so"), (with_rt, "pkg/b.so")],
    )
    _wheel(sub / "other.zip", ["nvidia-cuda-runtime-cu12==12.4.127"], [(no_rt, "pkg/a.so")])
    shutil.copy(no_rt, root / "loose.so")
    shutil.copy(fixture_path("units", "f3_specialised.so"), root / "f3.so")
    return str(root)


def _gpu_args():
    return [a for g in GPUS for a in ("--gpu", g)] + ["--driver", DRIVER]


def _results(doc):
    labels = [t for t in doc["targets"]]
    return {
        (r["path"], labels[r["target"]]["gpu"]): (r["verdict"], (r["runtime"] or {}).get("version"))
        for r in doc["results"]
    }


def test_check_list_scan_and_the_api_agree(tree):
    check = _results(cli_json("check", tree, *_gpu_args()))
    listed = _results(cli_json("list", tree, *_gpu_args()))
    scan_doc = cli_json("scan", tree, "--no-cache", *_gpu_args())
    names = [t["gpu"] for t in scan_doc["targets"]]
    scanned = {}
    for row in scan_doc["coverage"]["rows"]:
        for child in row["children"]:
            for name, v in zip(names, child["verdicts"]):
                scanned[(child["name"], name)] = v["verdict"]
    api = {
        (v.path, v.target.gpu.name): (v.verdict, v.runtime.version if v.runtime else None)
        for v in fi.check([tree], gpus=GPUS, driver=DRIVER)
    }
    assert check and check == listed == api
    assert {k: v[0] for k, v in check.items()} == scanned
    # the wheel one folder down names the runtime of its member without evidence of its own
    member = next(k for k in check if k[0].endswith(".whl!pkg/a.so"))
    assert check[member] == ("fail", "12.4")
    # a plain zip is no wheel: its member has no runtime, the driver check is not made from METADATA
    zipped = next(k for k in check if k[0].endswith("other.zip!pkg/a.so"))
    assert check[zipped][1] is None


def test_a_member_path_is_read_in_place(tree):
    """``check WHEEL!member``, the form the tool prints (issue 22 item 7): the member's verdicts
    are those it gets when the whole wheel is checked, in check, list --gpu, gate and the API."""
    whole = _results(cli_json("check", tree, *_gpu_args()))
    member = next(p for p, _ in whole if p.endswith(".whl!pkg/a.so"))
    alone = _results(cli_json("check", member, *_gpu_args()))
    assert alone == {k: v for k, v in whole.items() if k[0] == member}
    assert _results(cli_json("list", member, *_gpu_args())) == alone
    api = {
        (v.path, v.target.gpu.name): (v.verdict, v.runtime.version if v.runtime else None)
        for v in fi.check([member], gpus=GPUS, driver=DRIVER)
    }
    assert api == alone
    gate = fi.gate([member], require="sm_80")
    assert {f.path for f in gate.findings} <= {member}


def test_a_member_the_container_lacks_is_an_error(tree):
    whl = next(p for p, _ in _results(cli_json("check", tree, *_gpu_args())) if ".whl!" in p)
    missing = whl.split("!", 1)[0] + "!pkg/nope.so"
    assert cli("check", missing, "--gpu", "H100").code == 2
    assert cli("check", whl.split("!", 1)[0] + ".gone!pkg/a.so", "--gpu", "H100").code == 2
