"""The `list` command: table, JSON contract (validated against the shipped schema), errors, extract."""

import json
import os
from importlib import resources

import builders as B
import jsonschema
import pytest
from conftest import cli, fixture_path


@pytest.fixture(scope="module")
def schema():
    return json.loads(resources.files("fatbin_inspect").joinpath("schemas/inventory.schema.json").read_text())


def test_default_command_is_list_and_table_shows_entries():
    res = cli(fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90"))
    assert res.code == 0
    assert "compute_90" in res.out and "sm_75" in res.out and ".nv_fatbin" in res.out


def test_json_validates_against_schema_for_every_fixture(schema):
    res = cli(fixture_path("bin"), fixture_path("compat"), "--kernels", "--format", "json")
    doc = res.json()
    jsonschema.validate(doc, schema)
    assert doc["schema_version"] == 1 and doc["tool"]["name"] == "fatbin-inspect"
    paths = [f["path"] for f in doc["files"]]
    assert any(p.endswith("t10_rdc_lib_sm80.a!rdc_a.o") for p in paths)
    cubin = [f for f in doc["files"] if f["path"].endswith("t14_sm90a.cubin")][0]
    assert cubin["format"] == "cubin" and cubin["fatbins"][0]["section"] is None
    assert len(cubin["fatbins"]) == 1 and len(cubin["fatbins"][0]["entries"]) == 1


def test_jsonl_one_record_per_line():
    res = cli(fixture_path("bin", "t01_exe_sm80"), fixture_path("bin", "t15_c90a.ptx"), "--format", "jsonl")
    lines = res.out.strip().splitlines()
    assert len(lines) == 2 and all(json.loads(line)["schema_version"] == 1 for line in lines)


def test_bad_input_one_line_error_scan_goes_on(tmp_path, schema):
    bad = tmp_path / "broken.so"
    data = B.host_elf([(".nv_fatbin", B.sample_fatbin()[:40])])
    bad.write_bytes(data)
    res = cli(bad, fixture_path("bin", "t01_exe_sm80"), "--format", "json")
    assert res.code == 0
    err_lines = [line for line in res.err.splitlines() if line]
    assert len(err_lines) == 1 and str(bad) in err_lines[0] and "offset 0x" in err_lines[0]
    doc = res.json()
    jsonschema.validate(doc, schema)
    assert doc["files"][0]["error"]["offset"] is not None and doc["files"][1]["error"] is None
    res = cli(bad, "--strict", "--format", "json")
    assert res.code == 3


def test_not_a_binary_is_unknown_without_error(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello")
    res = cli(str(p), "--format", "json")
    (f,) = res.json()["files"]
    assert f["format"] == "unknown" and f["fatbins"] == [] and f["error"] is None


def test_extract_writes_decompressed_images(tmp_path):
    out = tmp_path / "out"
    res = cli(
        "extract",
        fixture_path("bin", "t06_exe_compress_all"),
        "--kind",
        "sass",
        "--arch",
        "sm_80",
        "-d",
        str(out),
    )
    assert res.code == 0
    files = sorted(os.listdir(out))
    assert len(files) == 2 and all(f.endswith(".sm_80.cubin") for f in files)
    for f in files:
        data = (out / f).read_bytes()
        assert data[:4] == b"\x7fELF" and data[18] == 190  # decompressed device ELF
    res = cli("extract", fixture_path("bin", "t08_exe_mode_speed_lz4"), "--kind", "ptx", "-d", str(out / "p"))
    (ptx,) = os.listdir(out / "p")
    text = (out / "p" / ptx).read_bytes()
    assert text.lstrip().startswith(b".version") or b".version 9.0" in text
    assert b"\0" not in text


@pytest.mark.parametrize(
    "arch,expect",
    [
        ("80", {"sm_80.cubin", "compute_80.ptx"}),  # a bare number: the cubin and the PTX of that SM
        ("8.0", {"sm_80.cubin", "compute_80.ptx"}),
        ("SM_80", {"sm_80.cubin"}),  # a named target: that image only
        ("compute_80", {"compute_80.ptx"}),
        ("90", set()),
    ],
)
def test_extract_arch_spellings(tmp_path, arch, expect):
    res = cli("extract", fixture_path("bin", "t01_exe_sm80"), "--arch", arch, "-d", str(tmp_path))
    assert res.code == 0, res.err
    assert {f.split(".", 3)[-1] for f in os.listdir(tmp_path)} == expect


def test_extract_rejects_a_bad_arch(tmp_path):
    res = cli("extract", fixture_path("bin", "t01_exe_sm80"), "--arch", "sm_8o", "-d", str(tmp_path))
    assert res.code == 2 and "--arch: not an architecture" in res.err


def test_version_and_help():
    assert cli("--version").out.startswith("fatbin-inspect")
    assert "list" in cli("--help").out


def test_every_option_has_an_environment_default(monkeypatch):
    monkeypatch.setenv("FATBIN_INSPECT_LIST_ENTRIES", "summary")
    res = cli(fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90"))
    assert any(
        line.split()[:3] == ["kind", "arch", "entries"] for line in res.out.splitlines() if line.strip()
    )
    assert ".nv_fatbin@" not in res.out + res.err
    monkeypatch.setenv("FATBIN_INSPECT_FORMAT", "json")
    assert cli(fixture_path("bin", "t01_exe_sm80")).json()["schema_version"] == 1


def test_kernels_json_encoded_in_workers_is_the_same_document(monkeypatch, schema):
    # large files take the path where worker processes decode *and* encode their fatbins
    from fatbin_inspect.inventory import decoding
    from fatbin_inspect.inventory.options import Options
    from fatbin_inspect.inventory.reader import inspect_path
    from fatbin_inspect.render import inventory_json

    files = [
        fixture_path("bin", "t05_exe_af_targets"),
        fixture_path("bin", "t10_rdc_lib_sm80.a"),
        fixture_path("bin", "t15_c90a.ptx"),
    ]
    expected = inventory_json.inventory_document(
        [r for f in files for r in inspect_path(f, Options(kernels=True))]
    )
    monkeypatch.setattr(decoding, "PARALLEL_MIN_BYTES", 0)
    doc = cli(*files, "--kernels", "--format", "json").json()
    jsonschema.validate(doc, schema)
    assert doc == json.loads(json.dumps(expected))
