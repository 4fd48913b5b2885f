"""Hostile inputs, round three (issue 23), class 6: image and package metadata.

OCI: every blob's sha256 is checked against its digest before its content is trusted (a mismatch
is an error naming the blob); metadata read from an image (manifests, indexes, configs,
conda-meta, dist-info in layers) has one memory bound per image, not only one per file; deep or
malformed JSON in ``index.json`` or ``conda-meta/*.json`` costs that package's attribution with a
note, or that input's result, never the other results and never an internal error with exit 0.

The images are built by umoci (image_tools.py's helpers); every run is a child under an
address-space limit and a timeout (``hostile_runner``).
"""

from __future__ import annotations

import gzip
import json

import pytest
from hostile_runner import run1
from image_tools import LIB, inside, layer_image, manifest_of, read_file, umoci_layout

TIMEOUT = 300  # a bound on each child (umoci images, 100 MB of conda-meta), not a speed assertion


def scan_json(tmp_path, *args):
    """``scan --no-cache --format json ARGS`` in a child under the limits: (code, report, stderr)."""
    r = run1(tmp_path, "scan", "--no-cache", "--format", "json", *args, timeout=TIMEOUT)
    return r.code, json.loads(r.out), r.stderr


@pytest.mark.slow
def test_every_blob_is_checked_against_its_digest(tmp_path):
    lay = umoci_layout(tmp_path)
    _d, manifest = manifest_of(lay, "t")
    layer = manifest["layers"][0]["digest"]
    blob = tmp_path / "L" / "blobs" / "sha256" / layer[7:]
    data = bytearray(gzip.decompress(blob.read_bytes()))
    at = data.find(b"\x7fELF") + 200
    data[at] ^= 0xFF  # one byte of the library, a valid gzip stream of the same kind
    blob.write_bytes(gzip.compress(bytes(data)))
    for args in ([lay], [f"{lay}:t"]):
        rc, doc, err = scan_json(tmp_path, *args)
        assert f"layer {layer}: its bytes hash to sha256:" in err, err
        assert not any(f["path"].endswith("libx.so") and f["fatbins"] for f in doc["files"])
    rc, doc, err = scan_json(tmp_path, lay)  # the other images of the layout are still read
    assert [inside(f["path"]) for f in doc["files"] if not f["error"]] == []  # t2 shares the layer
    cfg = manifest["config"]["digest"]
    (tmp_path / "L" / "blobs" / "sha256" / cfg[7:]).write_text('{"architecture": "amd64", "os": "linux"}')
    r = run1(tmp_path, "list", f"{lay}:t", timeout=TIMEOUT)
    assert f"image config {cfg}: its bytes hash to" in (r.out + r.err).decode() and b"Traceback" not in r.err


@pytest.mark.slow
def test_image_metadata_has_one_memory_bound_per_image(tmp_path):
    """80 conda-meta files of 1.4 MB each listing 100,000 files (a few MB compressed; read
    whole, 8 million paths: gigabytes): read up to the image's bound, then a note; under a
    1 GiB address-space limit (which the unbounded reader passes: MemoryError) the scan ends
    normally with the library reported."""

    def junk(i):
        names = b",".join(b'"lib/p%03d/f%06d"' % (i, n) for n in range(100_000))
        return b'{"name": "p%d", "version": "1", "files": [' % i + names + b"]}"

    entries = [(f"opt/conda/conda-meta/p{i}-1-0.json", junk(i)) for i in range(80)]
    ref = layer_image(tmp_path, [*entries, ("opt/conda/lib/libx.so", read_file(LIB))])
    p = run1(tmp_path, "list", "--format", "json", ref, mem=1 << 30, timeout=TIMEOUT)
    assert p.code == 0, p.stderr[-2000:]
    doc = json.loads(p.out)
    assert [inside(f["path"]) for f in doc["files"] if f["fatbins"]] == ["opt/conda/lib/libx.so"]
    notes = [n for f in doc["files"] for n in f["notes"]]
    assert any("over the image's bound" in n for n in notes), notes


@pytest.mark.slow
def test_deep_or_bad_json_costs_attribution_or_the_image_never_the_scan(tmp_path):
    deep = b'{"name": "x", "files": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    ref = layer_image(
        tmp_path,
        [
            ("opt/conda/conda-meta/deep-1-0.json", deep),
            ("opt/conda/conda-meta/bad-1-0.json", b"{not json"),
            ("opt/conda/lib/libx.so", read_file(LIB)),
        ],
    )
    r = run1(tmp_path, "list", "--format", "json", ref, timeout=TIMEOUT)
    assert r.code == 0 and b"Traceback" not in r.err
    doc = json.loads(r.out)
    assert [inside(f["path"]) for f in doc["files"] if f["fatbins"]] == ["opt/conda/lib/libx.so"]
    notes = [n for f in doc["files"] for n in f["notes"]]
    assert any("deep-1-0.json is not JSON" in n and "unattributed" in n for n in notes), notes
    assert any("bad-1-0.json is not JSON" in n for n in notes), notes
    # index.json itself deep, or not JSON: that input's error (nothing read from it: a missing
    # path's exit 2, issue 53), the other inputs' results kept
    lay = tmp_path / "M"
    other = umoci_layout(tmp_path, "N")
    for text in (b"[" * 100_000, b"{not json", b'{"manifests": 5}'):
        (lay / "index.json").write_bytes(text)
        r = run1(
            tmp_path, "scan", "--no-cache", "--strict", "--format", "json", str(lay), other, timeout=TIMEOUT
        )
        assert r.code == 2 and b"Traceback" not in r.err, r
        assert "index.json" in r.stderr
        assert sorted(inside(f["path"]) for f in json.loads(r.out)["files"] if f["fatbins"]) == [
            "usr/lib/libx.so",
            "usr/lib/liby.so",
            "usr/lib/liby.so",
        ]
