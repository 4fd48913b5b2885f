"""``--format cyclonedx`` of scan, list and gate (docs/sbom.md): CycloneDX 1.6 documents checked by
cyclonedx-python-lib's strict JSON-schema validator, SHA-256 digests checked against hashlib over
the bytes (zipfile for wheel members), purls, the ``fatbin-inspect:`` properties against the JSON
inventory and cuobjdump, reproducible output, and no hashing on the other formats."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest
from builders import conda_index, conda_package, layer_tar, oci_layout
from conftest import CORPUS, cli, fixture_path, read_file

pytest.importorskip("cyclonedx", reason="pip install 'cyclonedx-python-lib[json-validation]'")

SM80 = fixture_path("bin", "t01_exe_sm80")
MULTI = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")
LIB86 = fixture_path("bin", "t12_lib_sm86_c89.so")
EPOCH = "1700000000"
NS = "fatbin-inspect:"


def run(args, env=None, code=0):
    """stdout of conftest's ``cli(*args)`` at a fixed ``SOURCE_DATE_EPOCH``, exit ``code`` asserted."""
    return cli(*args, env={"SOURCE_DATE_EPOCH": EPOCH, "NO_COLOR": "1", **(env or {})}, codes=code).out


def validate(text: str) -> dict:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    assert error is None, error
    doc = json.loads(text)
    assert doc["bomFormat"] == "CycloneDX" and doc["specVersion"] == "1.6"
    return doc


def files_of(doc: dict) -> dict[str, dict]:
    """Every file component, nested or not, by its ``fatbin-inspect:path``."""
    out = {}
    for c in doc["components"]:
        for f in [c, *c.get("components", [])]:
            if f["type"] == "file":
                out[props(f)[NS + "path"]] = f
    return out


def props(component: dict) -> dict[str, str]:
    return {p["name"]: p["value"] for p in component.get("properties", [])}


def sha256_file(path) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def sha(component: dict) -> str | None:
    hashes = {h["alg"]: h["content"] for h in component.get("hashes", [])}
    return hashes.get("SHA-256")


def make_wheel(folder, name: str, version: str, members: dict[str, bytes]) -> str:
    """A wheel as pip installs one: ``NAME-VERSION.dist-info`` with METADATA, WHEEL and RECORD."""
    from builders import wheel_file

    return wheel_file(folder, name, version, members)


# ------------------------------------------------------------------------------------ list
def test_list_of_fixtures_validates_with_hashes_and_the_inventorys_archs(tmp_path):
    paths = [SM80, MULTI, LIB86, fixture_path("bin", "t15_c90a.ptx"), fixture_path("bin", "t14_sm90a.cubin")]
    doc = validate(run(["list", *paths, "--format", "cyclonedx"]))
    files = files_of(doc)
    assert sorted(files) == sorted(paths)
    inventory = json.loads(run(["list", *paths, "--format", "json"]))
    for rec in inventory["files"]:
        f = files[rec["path"]]
        assert f["bom-ref"] == "file:" + rec["path"] and f["name"] == rec["path"]
        assert sha(f) == sha256_file(rec["path"])
        entries = [e for fb in rec["fatbins"] for e in fb["entries"]]
        p = props(f)
        for kind, key in (("sass", "sass-archs"), ("ptx", "ptx-archs")):
            want = {e["arch"] for e in entries if e["kind"] == kind}
            assert set(p.get(NS + key, "").split(",")) - {""} == want, (rec["path"], kind)
        isas = {e["ptx_isa"] for e in entries if e["kind"] == "ptx"}
        assert set(p.get(NS + "ptx-isa", "").split(",")) - {""} == isas
        assert p[NS + "format"] == rec["format"] and p[NS + "fatbins"] == str(len(rec["fatbins"]))
    assert props(files[SM80])[NS + "needs"] == "libcudart.so.13"
    assert props(files[SM80])[NS + "runtime"] == "13"
    assert props(doc["metadata"])[NS + "command"] == "list"
    assert doc["metadata"]["tools"]["components"][0]["name"] == "fatbin-inspect"


def test_list_with_a_gpu_carries_the_verdicts_of_check(tmp_path):
    args = [SM80, MULTI, LIB86, "--gpu", "T4", "--driver", "470"]
    doc = validate(run(["list", *args, "--format", "cyclonedx"]))
    checked = json.loads(run(["check", *args, "--format", "json"], code=1))
    label = props(doc["metadata"])[NS + "target"]
    assert label.startswith("Tesla T4") and "470" in label
    files = files_of(doc)
    results = {r["path"]: r for r in checked["results"]}
    assert set(results) == set(files)
    for path, r in results.items():
        p = props(files[path])
        assert p[NS + f"verdict:{label}"] == r["verdict"]
        assert p.get(NS + "runtime") == (r["runtime"] or {}).get("version")
        if r["verdict"] != "native":
            assert (
                str(r["error"]["code"]) in p[NS + f"reason:{label}"]
                and r["rule"] in p[NS + f"reason:{label}"]
            )
    assert "35 cudaErrorInsufficientDriver" in props(files[SM80])[NS + f"reason:{label}"]


def test_wheel_members_are_nested_under_the_pypi_package(tmp_path):
    wheel = make_wheel(tmp_path, "Alpha_GPU", "1.2.3+cu130", {"alpha/lib/libalpha.so": read_file(MULTI)})
    loose = tmp_path / "libloose.so"
    shutil.copy(SM80, loose)
    doc = validate(run(["list", wheel, str(loose), "--format", "cyclonedx"]))
    (pkg,) = [c for c in doc["components"] if c["type"] == "library"]
    assert pkg["purl"] == pkg["bom-ref"] == "pkg:pypi/alpha-gpu@1.2.3%2Bcu130"
    assert (pkg["name"], pkg["version"]) == ("alpha-gpu", "1.2.3+cu130")
    assert sha(pkg) == sha256_file(wheel)  # the wheel itself was an input
    (member,) = pkg["components"]
    assert member["name"] == "alpha/lib/libalpha.so"
    with zipfile.ZipFile(wheel) as zf:
        assert sha(member) == hashlib.sha256(zf.read("alpha/lib/libalpha.so")).hexdigest()
    top = [c for c in doc["components"] if c["type"] == "file"]
    assert [props(c)[NS + "path"] for c in top] == [str(loose)]


@pytest.mark.slow
def test_conda_package_built_by_conda_package_handling_has_a_conda_purl(tmp_path):
    cph = shutil.which("cph")
    if cph is None:
        pytest.skip("conda-package-handling not installed (pip install conda-package-handling)")
    src = tmp_path / "src"
    (src / "info").mkdir(parents=True)
    (src / "lib").mkdir()
    shutil.copy(LIB86, src / "lib" / "libcuthing.so")
    index = conda_index("cuthing", "2.0.1", "cuda124h1234567_0", ["cuda-version >=12.4,<13.0a0"])
    (src / "info" / "index.json").write_text(json.dumps(index))
    (src / "info" / "files").write_text("lib/libcuthing.so\n")
    out = tmp_path / "out"
    out.mkdir()
    for ext in (".conda", ".tar.bz2"):
        name = f"cuthing-2.0.1-cuda124h1234567_0{ext}"
        subprocess.run(
            [cph, "create", str(src), name, "--out-folder", str(out)], check=True, capture_output=True
        )
    for ext in (".conda", ".tar.bz2"):
        pkg_file = out / f"cuthing-2.0.1-cuda124h1234567_0{ext}"
        doc = validate(run(["list", str(pkg_file), "--format", "cyclonedx"]))
        (pkg,) = doc["components"]
        assert pkg["purl"] == "pkg:conda/cuthing@2.0.1?build=cuda124h1234567_0&subdir=linux-64", ext
        assert sha(pkg) == sha256_file(pkg_file)
        assert props(pkg)[NS + "declared-cuda"] == "12.4"
        (member,) = pkg["components"]
        assert member["name"] == "lib/libcuthing.so" and sha(member) == sha256_file(LIB86)
        assert props(member)[NS + "runtime"] == "13"  # it links libcudart.so.13: stronger evidence (R-RT)


def test_a_path_that_is_not_utf8_still_gives_a_valid_document(tmp_path):
    if sys.platform == "darwin":
        pytest.skip("macOS file systems refuse names that are not UTF-8")
    folder = tmp_path / "d"
    folder.mkdir()
    odd = os.path.join(os.fsencode(folder), b"lib\xff.so")
    shutil.copy(SM80, odd)
    doc = validate(run(["list", str(folder), "--format", "cyclonedx"]))
    (f,) = files_of(doc).values()
    assert f["name"].endswith("lib\ufffd.so") and sha(f) == sha256_file(odd)


def test_an_unreadable_member_is_a_component_with_its_error(tmp_path):
    bad = tmp_path / "bad.whl"
    good = read_file(SM80)
    cut = good[: len(good) // 2]
    wheel = make_wheel(tmp_path, "broken", "1.0", {"broken/libcut.so": cut})
    shutil.move(wheel, bad)
    doc = validate(run(["list", str(bad), "--format", "cyclonedx", "--strict"], code=3))
    errors = [props(f).get(NS + "error") for f in files_of(doc).values()]
    assert any(errors), doc


# ------------------------------------------------------------------------------------ output
def test_the_same_input_gives_the_same_document(tmp_path):
    args = ["list", SM80, MULTI, "--format", "cyclonedx"]
    one, two = run(args), run(args)
    assert one == two
    assert json.loads(one)["metadata"]["timestamp"] == "2023-11-14T22:13:20+00:00"
    a, b = run(args, env={"SOURCE_DATE_EPOCH": ""}), run(args, env={"SOURCE_DATE_EPOCH": "1"})
    assert json.loads(a)["serialNumber"] == json.loads(b)["serialNumber"] == json.loads(one)["serialNumber"]
    other = json.loads(run(["list", SM80, "--format", "cyclonedx"]))
    assert other["serialNumber"] != json.loads(one)["serialNumber"]


def test_a_bad_source_date_epoch_is_one_line(tmp_path):
    res = cli("list", SM80, "--format", "cyclonedx", env={"SOURCE_DATE_EPOCH": "yesterday"})
    assert res.code == 2 and res.out == ""
    assert res.err.strip().splitlines() == [
        "fatbin-inspect: SOURCE_DATE_EPOCH: not a number of seconds since 1970: 'yesterday'"
    ]


def test_without_the_library_it_is_a_usage_error_before_reading(monkeypatch):
    monkeypatch.setitem(sys.modules, "cyclonedx.output.json", None)  # import fails

    def never(*a, **k):
        raise AssertionError("an input was read")

    monkeypatch.setattr("fatbin_inspect.judging.inputs.iter_reports", never)
    res = cli("list", SM80, "--format", "cyclonedx")  # an input read: an internal error, the test fails
    assert res.code == 2
    assert "pip install 'fatbin-inspect[sbom]'" in res.err


def test_no_other_format_hashes(tmp_path, monkeypatch):
    from fatbin_inspect.inventory import reader

    def never(blob):
        raise AssertionError("hashed")

    monkeypatch.setattr(reader, "sha256_of", never)
    wheel = make_wheel(tmp_path, "alpha", "1.0", {"alpha/lib.so": read_file(MULTI)})
    for fmt in ("table", "json", "jsonl"):
        run(["list", wheel, SM80, "--format", fmt])
    env = {"FATBIN_INSPECT_CACHE_DIR": str(tmp_path / "cache")}
    for fmt in ("table", "json"):
        run(["scan", wheel, "-j", "1", "--format", fmt], env=env)
    assert all(r.sha256 is None for r in reader.inspect_path(wheel))


# ------------------------------------------------------------------------------------ scan
def _site(tmp_path):
    site = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    info = site / "alpha_gpu-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: alpha-gpu\nVersion: 1.2.3\n")
    (site / "alpha" / "lib").mkdir(parents=True)
    shutil.copy(MULTI, site / "alpha" / "lib" / "libalpha.so")
    shutil.copy(LIB86, site / "alpha" / "lib" / "libalpha86.so")
    (info / "RECORD").write_text(
        "alpha/lib/libalpha.so,,\nalpha/lib/libalpha86.so,,\nalpha_gpu-1.2.3.dist-info/RECORD,,\n"
    )
    (site / "stray").mkdir()
    shutil.copy(SM80, site / "stray" / "libstray.so")
    return site


def test_scan_groups_by_distribution_and_the_cache_keeps_the_hashes(tmp_path):
    site = _site(tmp_path)
    env = {"FATBIN_INSPECT_CACHE_DIR": str(tmp_path / "cache")}
    args = ["scan", str(site), "-j", "1", "--format", "cyclonedx"]
    cold = run(args, env=env)
    warm = run(args, env=env)
    assert cold == warm  # the second one from the cache
    doc = validate(cold)
    (pkg,) = [c for c in doc["components"] if c["type"] == "library"]
    assert pkg["purl"] == "pkg:pypi/alpha-gpu@1.2.3"
    assert sorted(c["name"] for c in pkg["components"]) == sorted(
        str(site / "alpha" / "lib" / n) for n in ("libalpha.so", "libalpha86.so")
    )
    for f in files_of(doc).values():
        assert sha(f) == sha256_file(props(f)[NS + "path"])
    assert [props(c)[NS + "path"] for c in doc["components"] if c["type"] == "file"] == [
        str(site / "stray" / "libstray.so")
    ]


def test_scan_with_targets_has_the_rows_verdicts(tmp_path):
    site = _site(tmp_path)
    env = {"FATBIN_INSPECT_CACHE_DIR": str(tmp_path / "cache")}
    base = ["scan", str(site), "-j", "1", "--gpu", "RTX 3090", "--gpu", "GTX 1080", "--driver", "580"]
    doc = validate(run([*base, "--format", "cyclonedx"], env=env, code=1))
    rows = json.loads(run([*base, "--format", "json"], env=env, code=1))["coverage"]
    labels = rows["targets"]
    meta = doc["metadata"]["properties"]
    assert sorted(p["value"] for p in meta if p["name"] == NS + "target") == sorted(labels)
    (pkg,) = [c for c in doc["components"] if c["type"] == "library"]
    row = next(r for r in rows["rows"] if r["name"] == "alpha-gpu 1.2.3")
    for label, v in zip(labels, row["verdicts"]):
        assert props(pkg)[NS + f"verdict:{label}"] == v["verdict"]
        for child in row["children"]:
            f = files_of(doc)[child["name"]]
            assert props(f)[NS + f"verdict:{label}"] == child["verdicts"][labels.index(label)]["verdict"]
    assert {props(pkg)[NS + f"verdict:{label}"] for label in labels} == {"native", "fail"}


def test_scan_of_a_conda_prefix_gives_conda_purls(tmp_path):
    prefix = tmp_path / "conda"
    (prefix / "conda-meta").mkdir(parents=True)
    (prefix / "lib").mkdir()
    shutil.copy(SM80, prefix / "lib" / "libcuthing.so")
    (prefix / "conda-meta" / "cuthing-12.1-h0_1.json").write_text(
        json.dumps({"name": "cuthing", "version": "12.1", "build": "h0_1", "files": ["lib/libcuthing.so"]})
    )
    env = {"FATBIN_INSPECT_CACHE_DIR": str(tmp_path / "cache")}
    doc = validate(run(["scan", str(prefix), "-j", "1", "--format", "cyclonedx"], env=env))
    (pkg,) = doc["components"]
    assert pkg["purl"] == "pkg:conda/cuthing@12.1?build=h0_1"


def test_scan_of_a_conda_package_inside_a_wheel_folder(tmp_path):
    pkg_file = tmp_path / "cuthing-1.0-h0_0.conda"
    pkg_file.write_bytes(
        conda_package(conda_index("cuthing", "1.0", "h0_0", []), [("lib/libcuthing.so", read_file(SM80))])
    )
    env = {"FATBIN_INSPECT_CACHE_DIR": str(tmp_path / "cache")}
    doc = validate(run(["scan", str(pkg_file), "-j", "1", "--format", "cyclonedx"], env=env))
    (pkg,) = doc["components"]
    assert pkg["purl"] == "pkg:conda/cuthing@1.0?build=h0_0&subdir=linux-64"
    (member,) = pkg["components"]
    assert sha(member) == sha256_file(SM80)


def test_scan_of_an_image_attributes_by_the_images_own_record(tmp_path):
    site = "usr/lib/python3/site-packages"
    layer = layer_tar(
        [
            (f"{site}/alpha/lib/liba.so", read_file(LIB86)),
            (
                f"{site}/alpha_gpu-1.0.dist-info/METADATA",
                b"Metadata-Version: 2.1\nName: alpha-gpu\nVersion: 1.0\n",
            ),
            (
                f"{site}/alpha_gpu-1.0.dist-info/RECORD",
                b"alpha/lib/liba.so,,\nalpha_gpu-1.0.dist-info/RECORD,,\n",
            ),
            ("opt/x/libx.so", read_file(SM80)),
        ]
    )
    oci_layout(tmp_path / "img", [layer])
    doc = validate(run(["scan", str(tmp_path / "img"), "-j", "1", "--no-cache", "--format", "cyclonedx"]))
    (pkg,) = [c for c in doc["components"] if c["type"] == "library"]
    assert pkg["purl"] == "pkg:pypi/alpha-gpu@1.0"
    (member,) = pkg["components"]
    assert member["name"] == f"{site}/alpha/lib/liba.so" and sha(member) == sha256_file(LIB86)
    (loose,) = [c for c in doc["components"] if c["type"] == "file"]
    assert loose["name"] == "opt/x/libx.so" and sha(loose) == sha256_file(SM80)


# ------------------------------------------------------------------------------------ gate
def test_gate_carries_its_findings_per_file_and_target(tmp_path):
    alpha = make_wheel(
        tmp_path, "alpha", "1.0", {"alpha/lib80.so": read_file(SM80), "alpha/lib.so": read_file(MULTI)}
    )
    beta = make_wheel(tmp_path, "beta", "2.0", {"beta/lib80.so": read_file(SM80)})
    base = ["gate", alpha, beta, "--isolated", "--require", "sm_75,sm_90"]
    doc = validate(run([*base, "--format", "cyclonedx"], code=1))
    report = json.loads(run([*base, "--format", "json"], code=1))
    meta = props(doc["metadata"])
    assert meta[NS + "command"] == "gate" and meta[NS + "gate"] == "fail"
    files = {props(f)[NS + "path"]: props(f) for f in files_of(doc).values()}
    assert set(files) == {f"{alpha}!alpha/lib80.so", f"{alpha}!alpha/lib.so", f"{beta}!beta/lib80.so"}
    for path, p in files.items():
        for target in ("sm_75", "sm_90"):
            hits = [f for f in report["findings"] if f["path"] == path and f["target"] == target]
            want = ", ".join(f"{f['rule_id']} {f['severity']}" for f in hits) or "pass"
            assert p[NS + f"gate:{target}"] == want, (path, target)
    assert files[f"{beta}!beta/lib80.so"][NS + "gate:sm_75"].startswith("FBI001 error")
    assert files[f"{alpha}!alpha/lib.so"][NS + "gate:sm_75"] == "pass"
    # alpha's sm_80 library is set aside on sm_75 (R-UNIT: its sibling covers it): a note
    assert files[f"{alpha}!alpha/lib80.so"][NS + "gate:sm_75"] == "FBI014 note"
    assert run([*base, "--format", "cyclonedx", "--exit-zero"])  # exit 0, same document kind
    clean = validate(run(["gate", alpha, "--isolated", "--require", "sm_80", "--format", "cyclonedx"]))
    assert props(clean["metadata"])[NS + "gate"] == "pass"


def test_check_and_diff_do_not_offer_it():
    import click

    from fatbin_inspect.cli.main import cli as group

    choices = {}
    for name in ("check", "diff", "scan", "list", "gate"):
        cmd = group.get_command(click.Context(group), name)
        opts = {o: p for p in cmd.params for o in getattr(p, "opts", ())}
        choices[name] = list(opts["--format"].type.choices)
    assert all("cyclonedx" in choices[n] for n in ("scan", "list", "gate"))
    assert not any("cyclonedx" in choices[n] for n in ("check", "diff"))


# ------------------------------------------------------------------------------------ corpus
@pytest.mark.corpus
@pytest.mark.slow
def test_real_wheel_validates_and_agrees_with_cuobjdump_and_zipfile(tmp_path, cuobjdump):
    wheels = (
        sorted(f for f in os.listdir(CORPUS) if f.startswith("torchvision-")) if os.path.isdir(CORPUS) else []
    )
    if not wheels:
        pytest.skip(f"torchvision-*.whl not in {CORPUS} (scripts/fetch_corpus.sh)")
    wheel = os.path.join(CORPUS, wheels[0])
    doc = validate(run(["list", wheel, "--gpu", "H100", "--driver", "580", "--format", "cyclonedx"]))
    (pkg,) = doc["components"]
    assert pkg["purl"].startswith("pkg:pypi/torchvision@") and sha(pkg) == sha256_file(wheel)
    assert pkg["components"]
    with zipfile.ZipFile(wheel) as zf:
        for member in pkg["components"]:
            name = member["name"]
            data = zf.read(name)
            assert sha(member) == hashlib.sha256(data).hexdigest(), name
            one = tmp_path / os.path.basename(name)
            one.write_bytes(data)
            out = subprocess.run(
                [cuobjdump, "-lelf", "-lptx", str(one)], capture_output=True, text=True, check=True
            ).stdout
            elf = {line.rsplit(".", 2)[-2] for line in out.splitlines() if line.startswith("ELF file")}
            ptx = {line.rsplit(".", 2)[-2] for line in out.splitlines() if line.startswith("PTX file")}
            p = props(member)
            assert set(p[NS + "sass-archs"].split(",")) == elf, name
            assert set(p.get(NS + "ptx-archs", "").split(",")) - {""} == {
                a.replace("sm_", "compute_") for a in ptx
            }
            assert p[NS + "verdict:" + props(doc["metadata"])[NS + "target"]] in ("native", "jit", "fail")
