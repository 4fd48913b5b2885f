"""The gate reads unchanged files from the scan cache (issue 25 item 12): a second gate of the same
inputs reads no file, its outputs are byte-identical to a cold and an uncached run, ``--no-cache``
neither reads nor writes it, a file that gave an error record or changed is read again."""

import os
import shutil
import zipfile

import pytest
from conftest import cli, fixture_path

from fatbin_inspect import api
from fatbin_inspect.judging import inputs
from fatbin_inspect.release.policy import Policy
from fatbin_inspect.scanning.cache import CACHE_VERSION


def tree(tmp_path):
    """A folder with loose libraries, a wheel holding two, a text file and a corrupt ELF."""
    root = tmp_path / "dist"
    root.mkdir()
    for name in ("f1_full.so", "f4_gap.so", "ext_hopper.so"):
        shutil.copy(fixture_path("units", name), root / name)
    with zipfile.ZipFile(root / "pkg-1.0-py3-none-manylinux_2_28_x86_64.whl", "w") as z:
        z.writestr("pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
        z.write(fixture_path("units", "f3_specialised.so"), "pkg/f3.so")
        z.write(fixture_path("units", "f5_dropped_gen.so"), "pkg/f5.so")
    (root / "README.txt").write_text("no device code\n")
    return root


def corrupt(root):
    data = (root / "f1_full.so").read_bytes()
    (root / "bad.so").write_bytes(data[: len(data) // 2])  # its section headers cut off


def counting(monkeypatch):
    """Count the files the gate hands to the inventory."""
    seen = []
    real = inputs.inspect_path

    def inspect(path, opts):
        seen.append(os.path.basename(path))
        return real(path, opts)

    monkeypatch.setattr(inputs, "inspect_path", inspect)
    return seen


def gate(root, cache):
    return api.gate([str(root)], Policy(), gpus="H100,T4", driver="535", cache_dir=cache)


def test_second_gate_reads_from_the_cache(tmp_path, monkeypatch):
    root, cache = tree(tmp_path), str(tmp_path / "cache")
    seen = counting(monkeypatch)
    cold = gate(root, cache)
    assert sorted(seen) == sorted(os.listdir(root))
    assert os.path.isfile(os.path.join(cache, f"scan-v{CACHE_VERSION}.sqlite3"))
    seen.clear()
    warm = gate(root, cache)
    assert seen == []  # every file came from the cache
    assert warm == cold == gate(root, None)
    assert cold.findings  # (f4_gap fails on T4: something to compare)


def test_error_records_and_changed_files_are_read_again(tmp_path, monkeypatch):
    root, cache = tree(tmp_path), str(tmp_path / "cache")
    corrupt(root)
    seen = counting(monkeypatch)
    first = gate(root, cache)
    assert any(f.rule_id == "FBI008" and f.path.endswith("bad.so") for f in first.findings)
    seen.clear()
    assert gate(root, cache) == first
    assert seen == ["bad.so"]  # its error record was not cached
    seen.clear()
    shutil.copy(fixture_path("units", "f2_sm90a_only.so"), root / "f1_full.so")  # same name, new bytes
    third = gate(root, cache)
    assert sorted(seen) == ["bad.so", "f1_full.so"]
    assert third != first


def test_a_record_the_cache_cannot_give_is_read(tmp_path, monkeypatch):
    """A row the cache no longer validates is a miss: the file is read again."""
    root, cache = tree(tmp_path), str(tmp_path / "cache")
    first = gate(root, cache)
    seen = counting(monkeypatch)
    from fatbin_inspect.scanning import cache as cache_mod

    monkeypatch.setattr(cache_mod.Hit, "reports", lambda self, shown: cache_mod.MISS)
    assert gate(root, cache) == first
    assert sorted(seen) == sorted(os.listdir(root))


@pytest.mark.parametrize("fmt", ["json", "sarif", "table"])
def test_cli_outputs_identical_cold_warm_uncached(tmp_path, monkeypatch, fmt):
    root, cache = tree(tmp_path), tmp_path / "cache"
    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(cache))
    args = ["gate", str(root), "--gpu", "H100", "--gpu", "T4", "--min-driver", "535", "--isolated"]
    args += ["--format", fmt]
    uncached = cli(*args, "--no-cache")
    assert not cache.exists()  # --no-cache writes nothing
    cold = cli(*args)
    seen = counting(monkeypatch)
    warm = cli(*args)
    assert seen == []
    assert (uncached.code, uncached.out) == (cold.code, cold.out) == (warm.code, warm.out)
    assert cold.code == 1


def test_no_cache_reads_nothing_from_it(tmp_path, monkeypatch):
    root, cache = tree(tmp_path), tmp_path / "cache"
    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(cache))
    args = ["gate", str(root), "--gpu", "H100", "--isolated", "--format", "json"]
    cli(*args)
    seen = counting(monkeypatch)
    cli(*args, "--no-cache")
    assert sorted(seen) == sorted(os.listdir(root))
    seen.clear()
    monkeypatch.setenv("FATBIN_INSPECT_NO_CACHE", "1")
    cli(*args)
    assert sorted(seen) == sorted(os.listdir(root))


def test_gate_and_scan_keep_rows_of_their_own(tmp_path, monkeypatch):
    """Alternating gate and scan over the same files: each finds its own rows (one per path and
    options), so neither reads a file again; before cache v14 each overwrote the other's."""
    from fatbin_inspect.scanning import ScanOptions, scan

    root, cache = tree(tmp_path), str(tmp_path / "cache")
    seen = counting(monkeypatch)
    opts = ScanOptions(jobs=1, cache_dir=cache)
    cold_scan, cold_gate = scan([str(root)], opts), gate(root, cache)
    assert cold_scan.stats.cache_hits == 0
    seen.clear()
    warm_scan = scan([str(root)], opts)
    warm_gate = gate(root, cache)
    assert seen == []  # the gate's rows outlived the scan between them
    assert warm_scan.stats.cache_hits == warm_scan.stats.inspected > 0  # and the scan's the gate
    assert warm_gate == cold_gate
    assert [r.path for r in warm_scan.reports] == [r.path for r in cold_scan.reports]
