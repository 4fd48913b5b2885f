"""conda packages (.conda, .tar.bz2) and OCI images, read in place; built here from the fixtures."""

import glob
import json
import os

import pytest
from builders import conda_index, conda_package
from conftest import fixture_path, read_file

from fatbin_inspect.compat import runtime
from fatbin_inspect.containers import conda
from fatbin_inspect.inventory.reader import inspect_path
from fatbin_inspect.scanning import ScanOptions, scan

SM80 = fixture_path("bin", "t01_exe_sm80")
LIB86 = fixture_path("bin", "t12_lib_sm86_c89.so")
FATBIN = fixture_path("bin", "t13_raw_sm75_c75_sm120.fatbin")


def _cupy_like(
    tmp_path, fmt, depends=("cuda-version >=12.4,<13.0a0", "libgcc >=13", "python_abi 3.11.* *_cp311")
):
    index = conda_index("cupy-core", "13.3.0", "py311h5eee18b_2", depends)
    files = [
        ("lib/python3.11/site-packages/cupy/_core/core.cpython-311-x86_64-linux-gnu.so", read_file(LIB86)),
        ("bin/cupy_probe", read_file(SM80)),  # extensionless: found by content
        ("share/cupy/kernels.dat", read_file(FATBIN)),  # a fatbin under a data name
        ("lib/python3.11/site-packages/cupy/__init__.py", b"import os\n" * 40),
    ]
    p = tmp_path / f"cupy-core-13.3.0-py311h5eee18b_2.{fmt}"
    p.write_bytes(conda_package(index, files, fmt))
    return p


@pytest.mark.parametrize("fmt", ["conda", "tar.bz2"])
def test_conda_package_read_in_place_and_attributed(tmp_path, fmt):
    pkg = _cupy_like(tmp_path, fmt)
    before = sorted(os.listdir(tmp_path))
    recs = list(inspect_path(str(pkg)))
    assert sorted(os.listdir(tmp_path)) == before  # nothing extracted
    own = recs[0]
    assert own.path == str(pkg) and own.format == "conda" and own.error is None
    assert (own.package.name, own.package.version, own.package.build, own.package.subdir) == (
        "cupy-core",
        "13.3.0",
        "py311h5eee18b_2",
        "linux-64",
    )
    assert own.package.cuda == "12.4" and "cuda-version >=12.4" in own.package.cuda_source
    assert any("declares CUDA 12.4" in n for n in own.notes) and any("4 files listed" in n for n in own.notes)
    members = {r.path.split("!", 1)[1]: r for r in recs[1:]}
    assert sorted(members) == [
        "bin/cupy_probe",
        "lib/python3.11/site-packages/cupy/_core/core.cpython-311-x86_64-linux-gnu.so",
        "share/cupy/kernels.dat",
    ]
    assert all(r.package == own.package for r in members.values())
    res = scan([str(pkg)], ScanOptions(jobs=1, cache_dir=None))
    assert {r.distribution for r in res.reports} == {"cupy-core 13.3.0"}


def test_declared_cuda_is_runtime_evidence_where_no_cudart_is_linked(tmp_path):
    pkg = _cupy_like(tmp_path, "conda")
    recs = {r.path.rsplit("!", 1)[-1]: r for r in inspect_path(str(pkg))}
    fat = recs["share/cupy/kernels.dat"]  # a raw fatbin links nothing
    assert fat.needs == ()
    need = runtime.for_file(fat)
    assert (need.version, need.confidence) == ("12.4", "medium") and "cuda-version" in need.source
    exe = recs["bin/cupy_probe"]  # links libcudart.so.13: the binary's own evidence wins
    assert runtime.for_file(exe).source.startswith("DT_NEEDED")


@pytest.mark.parametrize(
    "depends,build,want",
    [
        (["cuda-version >=12.4,<13.0a0"], "py311_0", "12.4"),
        (["cuda-version 11.8.*"], "py311_0", "11.8"),
        (["cuda-version <13"], "cuda126py311h1_0", "12.6"),  # an upper bound alone says nothing
        (["__cuda >=12.0"], "py311_0", "12.0"),
        (["python >=3.11"], "cuda120_py311h9f2_1", "12.0"),
        ([], "py3.11_cuda12.4_cudnn9.1.0_0", "12.4"),
        ([], "cuda11_py311h0", "11"),
        ([], "py311h5eee18b_2", None),
    ],
)
def test_declared_cuda_from_depends_and_build_string(depends, build, want):
    assert conda.declared_cuda({"depends": depends, "build": build})[0] == want


def test_plain_tar_bz2_and_bz2_data_are_not_packages(tmp_path):
    import bz2

    from builders import tar_archive

    t = tmp_path / "layer.tar.bz2"
    t.write_bytes(bz2.compress(tar_archive([("usr/bin/app", read_file(SM80))])))
    recs = list(inspect_path(str(t)))
    assert recs[0].format == "tar" and recs[0].package is None and recs[0].error is None
    assert [r.path.split("!")[1] for r in recs[1:]] == ["usr/bin/app"]
    d = tmp_path / "data.bz2"
    d.write_bytes(bz2.compress(b"plain data " * 1000))
    (rec,) = inspect_path(str(d))
    assert rec.error is None and "holds no tar" in rec.notes[0]


def test_conda_json_record_validates(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from fatbin_inspect.render.inventory_json import inventory_document

    pkg = _cupy_like(tmp_path, "conda")
    doc = json.loads(json.dumps(inventory_document(inspect_path(str(pkg)))))
    with open(os.path.join(os.path.dirname(conda.__file__), "..", "schemas", "inventory.schema.json")) as fh:
        jsonschema.validate(doc, json.load(fh))
    assert doc["files"][0]["package"]["cuda"] == "12.4"


def test_conda_attribution_survives_the_summary_cache(tmp_path):
    pkg = _cupy_like(tmp_path, "tar.bz2")
    opts = ScanOptions(jobs=1, cache_dir=str(tmp_path / "cache"), summary=True)
    cold, warm = scan([str(pkg)], opts), scan([str(pkg)], opts)
    assert warm.stats.cache_hits == 1
    for res in (cold, warm):
        assert {r.distribution for r in res.reports} == {"cupy-core 13.3.0"} and len(res.reports) == 3


# ------------------------------------------------------------------------------ OCI images
from builders import layer_tar, oci_layout, tar_of_dir  # noqa: E402

SM90 = fixture_path("bin", "t04_exe_sm90a_c90a")
SP = "usr/lib/python3.11/site-packages"


def _image(tmp_path, fmt="dir", **kw):
    """Three layers: a base with two libraries and a dist-info, one deleting a library with a
    whiteout and making a folder opaque, one overriding the other library with a newer build."""
    base = layer_tar(
        [
            ("usr", None),
            ("usr/lib", None),
            ("usr/lib/libold.so", read_file(SM80)),
            ("usr/lib/libcuda_app.so", read_file(SM80)),
            ("opt/vendor/libvendor.so", read_file(LIB86)),
            (f"{SP}/gpu/_ext.so", read_file(FATBIN)),
            (f"{SP}/gpu-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: gpu\nVersion: 1.0\n\n"),
            (f"{SP}/gpu-1.0.dist-info/RECORD", b"gpu/_ext.so,sha256=x,1\ngpu-1.0.dist-info/RECORD,,\n"),
            ("etc/escape", ("symlink", "../../../../etc/passwd")),
        ]
    )
    delete = layer_tar(
        [("usr/lib/.wh.libold.so", b""), ("opt/vendor/.wh..wh..opq", b""), ("opt/vendor/README", b"x")]
    )
    override = layer_tar([("usr/lib/libcuda_app.so", read_file(SM90))], compress="zstd")
    root = tmp_path / "layout"
    oci_layout(str(root), [base, delete, override], **kw)
    if fmt == "dir":
        return root
    t = tmp_path / "image.tar"
    t.write_bytes(tar_of_dir(str(root)))
    return t


def _files(recs, top):
    out = {}
    for r in recs:
        if r.path != str(top):
            _, layer, member = r.path.split("!", 2)
            out[member] = (layer, r)
    return out


@pytest.mark.parametrize("fmt,docker", [("dir", False), ("tar", False), ("tar", True)])
def test_oci_image_final_filesystem_with_whiteouts_and_layers(tmp_path, fmt, docker):
    img = _image(tmp_path, fmt, docker_manifest=docker)
    recs = list(inspect_path(str(img)))
    own = recs[0]
    assert own.path == str(img) and own.format == "oci" and own.error is None, own
    files = _files(recs, img)
    assert sorted(files) == ["usr/lib/libcuda_app.so", f"{SP}/gpu/_ext.so"]  # libold deleted, vendor opaque
    layer, app = files["usr/lib/libcuda_app.so"]
    index = json.loads((tmp_path / "layout" / "index.json").read_text())
    manifest = json.loads(
        (
            tmp_path / "layout" / index["manifests"][0]["digest"].replace("sha256:", "blobs/sha256/")
        ).read_text()
    )
    top = manifest["layers"][2]["digest"].replace("sha256:", "blobs/sha256/")
    assert layer == top  # the override, from the last layer
    assert {e.arch for e in app.entries} >= {"sm_90a"} and "sm_80" not in {e.arch for e in app.entries}
    ext_layer, ext = files[f"{SP}/gpu/_ext.so"]
    assert ext_layer == manifest["layers"][0]["digest"].replace("sha256:", "blobs/sha256/")
    assert ext.package.label == "gpu 1.0" and app.package is None
    assert any("3 layers, 2 whiteouts" in n and "1 links not followed" in n for n in own.notes), own.notes
    res = scan([str(img)], ScanOptions(jobs=1, cache_dir=str(tmp_path / "cache")))
    dists = {r.path.rsplit("!", 1)[1]: r.distribution for r in res.reports}
    assert dists == {f"{SP}/gpu/_ext.so": "gpu 1.0", "usr/lib/libcuda_app.so": None}
    warm = scan([str(img)], ScanOptions(jobs=1, cache_dir=str(tmp_path / "cache")))
    assert warm.stats.cache_hits == 1 and warm.reports == res.reports


def test_oci_multi_platform_index_default_and_platform_option(tmp_path):
    from fatbin_inspect.inventory.options import Options

    img = _image(tmp_path, platforms=("linux/arm64", "linux/amd64"))
    own = next(iter(inspect_path(str(img))))
    assert any("linux/amd64 scanned" in n for n in own.notes)
    own = next(iter(inspect_path(str(img), Options(platform="linux/arm64"))))
    assert own.error is None and any("linux/arm64: 3 layers" in n for n in own.notes), own.notes
    own = next(iter(inspect_path(str(img), Options(platform="windows/amd64"))))
    assert "no windows/amd64 image" in own.error.message


def _corpus_wheel(prefix):
    from conftest import CORPUS

    hits = sorted(glob.glob(os.path.join(os.environ.get("FATBIN_INSPECT_CORPUS", CORPUS), prefix + "*.whl")))
    return hits[0] if hits else None


@pytest.mark.slow
@pytest.mark.corpus
def test_real_wheel_tree_as_an_image_layer(tmp_path):
    """A real wheel installed into an image layer reads like the wheel itself, and the image's
    own dist-info RECORD attributes every file to the distribution."""
    import zipfile

    from fatbin_inspect.scanning.distributions import wheel_distribution

    whl = _corpus_wheel("nvidia_cuda_cupti-") or _corpus_wheel("jax_cuda12_plugin-")
    if whl is None:
        pytest.skip(
            "no nvidia_cuda_cupti or jax_cuda12_plugin wheel in .cache/corpus (scripts/fetch_corpus.sh)"
        )
    with zipfile.ZipFile(whl) as zf:
        members = [(f"{SP}/{i.filename}", zf.read(i)) for i in zf.infolist() if not i.is_dir()]
    image = _image(tmp_path)  # the three fixture layers, then the wheel's tree on top
    root = tmp_path / "with_wheel"
    index = json.loads((image / "index.json").read_text())
    manifest = json.loads(
        (image / index["manifests"][0]["digest"].replace("sha256:", "blobs/sha256/")).read_text()
    )
    lower = [
        (image / lay["digest"].replace("sha256:", "blobs/sha256/")).read_bytes() for lay in manifest["layers"]
    ]
    oci_layout(str(root), [*lower, layer_tar(members)])
    t = tmp_path / "with_wheel.tar"
    t.write_bytes(tar_of_dir(str(root)))
    res = scan([str(t)], ScanOptions(jobs=1, cache_dir=None))
    direct = scan([whl], ScanOptions(jobs=1, cache_dir=None))
    want = {r.path.split("!", 1)[1]: r for r in direct.reports}
    got = {
        r.path.split("!", 2)[2][len(SP) + 1 :]: r
        for r in res.reports
        if SP in r.path and "gpu/" not in r.path
    }
    assert want and sorted(got) == sorted(want)
    for name, r in got.items():
        assert r.fatbins == want[name].fatbins and r.needs == want[name].needs, name
        assert r.distribution.lower() == wheel_distribution(whl).lower(), (name, r.distribution)


def test_legacy_docker_save_layers_with_whiteouts(tmp_path):
    """``docker save`` before Docker 25: manifest.json naming ``<id>/layer.tar``, bottom first."""
    import io
    import tarfile

    layers = [
        layer_tar(
            [("usr/lib/libgone.so", read_file(SM80)), ("usr/lib/libkept.so", read_file(LIB86))], compress=None
        ),
        layer_tar([("usr/lib/.wh.libgone.so", b"")], compress=None),
    ]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        names = [f"{i:064x}/layer.tar" for i in (1, 2)]
        manifest = json.dumps([{"Config": "c.json", "RepoTags": ["app:old"], "Layers": names}]).encode()
        for name, data in [*zip(names, layers, strict=True), ("manifest.json", manifest)]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    t = tmp_path / "old.tar"
    t.write_bytes(buf.getvalue())
    recs = list(inspect_path(str(t)))
    assert recs[0].format == "oci" and recs[0].error is None
    assert any("image app:old: 2 layers, 1 whiteouts, 1 files replaced" in n for n in recs[0].notes)
    assert [r.path.split("!", 1)[1] for r in recs[1:]] == [f"{1:064x}/layer.tar!usr/lib/libkept.so"]
