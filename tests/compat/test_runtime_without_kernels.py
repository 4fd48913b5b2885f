"""A runtime without kernels (issue 56 item 3, R-RT 3): a library with no device code that links
the CUDA runtime statically (bindings, launchers, plugins) needs a driver that serves that
runtime, so it fails with 35 on an older driver and says where its version came from.

The plugin is linked here by gcc against the CUDA 13.0 toolkit's own ``libcudart_static.a`` (one
function calling ``cudaGetDeviceCount``; ~1 MB, too large to commit as a fixture): no fatbin, no
``DT_NEEDED libcudart``, only the static cudart's marker and its driver entry-point requests.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest
from conftest import cli

from fatbin_inspect.containers import layout
from fatbin_inspect.containers.cudart_version import static_cudart_version
from fatbin_inspect.formats.binio import Blob

TOOLKIT = pathlib.Path("/usr/local/cuda-13.0")
STATIC = TOOLKIT / "lib" / "libcudart_static.a"
SOURCE = "#include <cuda_runtime_api.h>\nint plugin_devices(void) { int n = 0; cudaGetDeviceCount(&n); return n; }\n"


def _plugin(tmp_path: pathlib.Path, static: bool = True) -> str:
    if shutil.which("gcc") is None or not STATIC.exists():
        pytest.skip(f"needs gcc and the CUDA 13.0 toolkit's static cudart ({STATIC})")
    src = tmp_path / "plug.c"
    src.write_text(SOURCE)
    out = tmp_path / ("libplug.so" if static else "libplug_shared.so")
    cudart = [str(STATIC), "-lpthread", "-ldl", "-lrt"] if static else [f"-L{TOOLKIT / 'lib'}", "-lcudart"]
    cmd = ["gcc", "-shared", "-fPIC", "-O2", f"-I{TOOLKIT / 'include'}", "-o", str(out), str(src), *cudart]
    subprocess.run(cmd, check=True, capture_output=True)
    return str(out)


def test_the_static_cudart_names_its_release(tmp_path: pathlib.Path) -> None:
    data = open(_plugin(tmp_path), "rb").read()
    blob = Blob(data)
    found = static_cudart_version(blob, layout("elf", blob), "x86_64")
    assert found is not None and found.version == "13.0" and found.requests >= 100
    assert static_cudart_version(blob, layout("elf", blob), "aarch64") is None  # other CPUs: not read


def test_a_plugin_without_kernels_needs_a_driver_for_its_runtime(tmp_path: pathlib.Path) -> None:
    plug = _plugin(tmp_path)
    doc = cli("check", plug, "--gpu", "H100", "--driver", "535", "--format", "json", codes=(1,)).json()
    (r,) = doc["results"]
    assert (r["verdict"], r["error"]["code"], r["rule"]) == ("fail", 35, "R-DRV")
    assert r["runtime"]["version"] == "13" and "cuGetProcAddress" in r["runtime"]["source"]
    assert "CUDA 13.0" in r["runtime"]["source"]
    doc = cli("check", plug, "--gpu", "H100", "--driver", "580", "--format", "json").json()
    (r,) = doc["results"]
    assert (r["verdict"], r["rule"], r["runtime"]["version"]) == ("no-device-code", "R-DRV", "13")
    table = cli("check", plug, "--gpu", "H100", "--driver", "535", codes=(1,)).out
    assert "35 cudaErrorInsufficientDriver" in table and "static cudart" in table


def test_without_the_static_cudart_nothing_changes(tmp_path: pathlib.Path) -> None:
    """Linked dynamically, the soname is the evidence; no cudart at all, no runtime is claimed."""
    shared = _plugin(tmp_path, static=False)
    (r,) = cli("check", shared, "--gpu", "H100", "--driver", "535", "--format", "json", codes=(1,)).json()[
        "results"
    ]
    assert (r["verdict"], r["error"]["code"]) == ("fail", 35) and r["runtime"]["source"].startswith(
        "DT_NEEDED"
    )
    plain = tmp_path / "libplain.so"
    (tmp_path / "plain.c").write_text("int plain(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(plain), str(tmp_path / "plain.c")], check=True)
    (r,) = cli("check", str(plain), "--gpu", "H100", "--driver", "535", "--format", "json").json()["results"]
    assert (r["verdict"], r["runtime"], r["reason"]) == (
        "no-device-code",
        None,
        "no CUDA device code and no CUDA runtime linked",
    )


def test_a_wheel_member_without_kernels_is_judged(tmp_path: pathlib.Path) -> None:
    """Bindings live in wheels: a member with a static cudart whose version is known is kept
    (members without device code are otherwise left out of a wheel's records)."""
    import zipfile

    plug = _plugin(tmp_path)
    whl = tmp_path / "plug-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("plug-1.0.dist-info/METADATA", "Name: plug\nVersion: 1.0\n\n")
        z.write(plug, "plug/_runtime.so")
        z.writestr("plug/__init__.py", "")
    doc = cli("check", str(whl), "--gpu", "H100", "--driver", "535", "--format", "json", codes=(1,)).json()
    (r,) = doc["results"]
    assert r["path"].endswith("!plug/_runtime.so") and (r["verdict"], r["error"]["code"]) == ("fail", 35)
