"""The gate on R-FILE/R-UNIT verdicts (fixtures/units), and its option and nothing-to-check semantics."""

import zipfile

import builders as B
from conftest import cli, fixture_path


def gate(*args):
    res = cli("gate", "--isolated", "--format", "json", *args)
    doc = res.json() if res.out.startswith("{") else None
    return res, doc


def rules(doc, path_end=""):
    return sorted(
        (f["rule_id"], f["target"], f["severity"])
        for f in doc["findings"]
        if (f["path"] or "").endswith(path_end)
    )


def wheel(tmp_path, name, files, requires=()):
    path = tmp_path / f"{name}-1.0-py3-none-linux_x86_64.whl"
    meta = f"Name: {name}\nVersion: 1.0\n" + "".join(f"Requires-Dist: {r}\n" for r in requires) + "\n"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}-1.0.dist-info/METADATA", meta)
        for arc, data in files:
            z.writestr(f"{name}/{arc}", data)
    return str(path)


def unit(name):
    with open(fixture_path("units", name), "rb") as fh:
        return name, fh.read()


def test_fatbins_made_for_other_gpus_are_a_note_not_fbi001():
    res, doc = gate(fixture_path("units", "f3_specialised.so"), "--require", "sm_90")
    assert res.code == 0, res.err
    assert rules(doc) == [("FBI014", "sm_90", "note")]
    (f,) = doc["findings"]
    assert "3 fatbins are specialised for other GPUs" in f["message"]


def test_a_gap_is_fbi001():
    res, doc = gate(fixture_path("units", "f4_gap.so"), "--require", "sm_90")
    assert res.code == 1
    msg = next(f["message"] for f in doc["findings"] if f["rule_id"] == "FBI001")
    assert msg.startswith("sm_90: no loadable SASS or PTX in 1 of 2 fatbins")


def test_repeated_and_comma_options_accumulate():
    res, doc = gate(
        fixture_path("units", "f1_full.so"),
        "--require",
        "sm_80",
        "--require",
        "sm_90,sm_120",
        "--gpu",
        "H100",
    )
    assert res.code == 0, res.err
    assert set(doc["targets"]) >= {"sm_80", "sm_90", "sm_120"} and any("H100" in t for t in doc["targets"])
    _, doc = gate(fixture_path("units", "f1_full.so"), "--forbid", "sm_80", "--forbid", "sm_100")
    assert {f["arch"] for f in doc["findings"] if f["rule_id"] == "FBI007"} == {"sm_80", "sm_100"}
    _, doc = gate(
        fixture_path("units", "f1_full.so"),
        "--forbid",
        "sm_80,sm_100",
        "--disable",
        "FBI007",
        "--disable",
        "FBI015",
    )
    assert doc["findings"] == []


def test_require_exact_asks_for_the_arch_itself():
    path = fixture_path("units", "f1_full.so")  # sm_80 cubins load on 8.6, but none is built for it
    res, doc = gate(path, "--require", "sm_86")
    assert res.code == 0 and rules(doc) == []
    res, doc = gate(path, "--require", "sm_86", "--require-exact")
    assert res.code == 1 and rules(doc) == [("FBI016", "sm_86", "error")]
    assert "(they load through sm_80)" in doc["findings"][0]["message"]


def test_a_file_for_other_gpus_is_set_aside_within_its_distribution(tmp_path):
    w = wheel(tmp_path, "extdist", [unit("ext_generic.so"), unit("ext_hopper.so")])
    res, doc = gate(w, "--require", "sm_80")
    assert res.code == 0, res.err
    assert rules(doc, "ext_hopper.so") == [("FBI014", "sm_80", "note")]
    # alone, the Hopper-only library does fail on an A100-class requirement
    res, doc = gate(fixture_path("units", "ext_hopper.so"), "--require", "sm_80")
    assert rules(doc) == [("FBI001", "sm_80", "error")]


def test_nothing_to_check_is_a_finding(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    res, doc = gate(str(empty), "--require", "sm_80")
    assert res.code == 1 and rules(doc) == [("FBI015", None, "error")]
    cpu = wheel(tmp_path, "foo_cu12", [("x.so", b"\x7fELF not really")], ["nvidia-cuda-runtime-cu12"])
    res, doc = gate(cpu, str(fixture_path("units", "f1_full.so")), "--require", "sm_80")
    assert [f["path"] for f in doc["findings"] if f["rule_id"] == "FBI015"] == [cpu]
    res, doc = gate(str(empty), "--require", "sm_80", "--disable", "FBI015")
    assert res.code == 0


def test_min_driver_uses_the_runtime_check_finds(tmp_path):
    # no cudart linked: the wheel's requirement names CUDA 13 (R-RT 4), as check finds it
    lib = B.arch_library(B.arch_fatbin(["80", "90"]))
    w = wheel(tmp_path, "cu13lib", [("lib.so", lib)], ["nvidia-cuda-runtime==13.0.*"])
    res, doc = gate(w, "--require", "sm_90", "--min-driver", "570")
    assert ("FBI004", None, "error") in rules(doc), res.err
    check = cli("check", w, "--gpu", "H100", "--driver", "570", "--format", "json")
    assert check.json()["results"][0]["error"]["code"] == 35


def test_extension_cuda_major_beside_torch(tmp_path):
    site = tmp_path / "site"
    (site / "torch" / "lib").mkdir(parents=True)
    (site / "ext").mkdir()
    with open(fixture_path("units", "libvar_cuda130.so"), "rb") as fh:  # links libcudart.so.13
        (site / "torch" / "lib" / "libtorch_cuda.so").write_bytes(fh.read())
    with open(fixture_path("units", "libvar_cuda126.so"), "rb") as fh:  # links libcudart.so.12
        (site / "ext" / "_C.so").write_bytes(fh.read())
    res, doc = gate(str(site), "--match", "torch")
    (f,) = [f for f in doc["findings"] if f["rule_id"] == "FBI017"]
    assert f["path"].endswith("_C.so") and "CUDA 12" in f["message"] and "CUDA 13" in f["message"]


def test_jetson_with_a_desktop_driver_number_is_warned():
    res, doc = gate(fixture_path("units", "f1_full.so"), "--gpu", "Jetson AGX Orin", "--min-driver", "580")
    assert ("FBI018", "warning") in {(f["rule_id"], f["severity"]) for f in doc["findings"]}
    res = cli("check", fixture_path("units", "f1_full.so"), "--gpu", "Jetson AGX Orin", "--driver", "580")
    assert "desktop driver number" in res.out


def test_alternative_builds_count_as_one(tmp_path):
    w = wheel(tmp_path, "vardist", [unit("libvar_cuda126.so"), unit("libvar_cuda130.so")])
    # R575: the CUDA 13 build needs R580, the CUDA 12 one is what the package loads there
    res, doc = gate(w, "--require", "sm_90", "--min-driver", "575")
    assert res.code == 0, res.err
    assert rules(doc, "libvar_cuda130.so") == [("FBI004", None, "note")]
    assert "libvar_cuda126.so is the one loaded there" in doc["findings"][0]["message"]
    # an RTX 5090: only the CUDA 13 build has sm_120; the other's FBI001 is a note
    res, doc = gate(w, "--gpu", "RTX 5090", "--min-driver", "580")
    assert res.code == 0 and [f["rule_id"] for f in doc["findings"]] == ["FBI001"]
    assert doc["findings"][0]["severity"] == "note"
    # alone, the CUDA 12 build does fail there
    res, _ = gate(fixture_path("units", "libvar_cuda126.so"), "--gpu", "RTX 5090", "--min-driver", "580")
    assert res.code == 1
