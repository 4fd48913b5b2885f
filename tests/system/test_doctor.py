"""doctor: the stack discovered from fake /proc, library folders, PATH and site-packages, and the
conditions and warnings diagnose draws from it. No GPU, driver or torch is needed."""

import os

import pytest

from fatbin_inspect.system import stack as st
from fatbin_inspect.system.diagnose import FAIL, OK, UNKNOWN, diagnose

PROC_580 = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U16)\n"
)


def write(path, text="", mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)
    os.chmod(path, mode)
    return path


def link(target, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)
    return path


@pytest.fixture
def machine(tmp_path):
    """A fake host: kernel driver 580, libcuda 580 in a lib dir, libcudart 12.8 on LD_LIBRARY_PATH,
    a cu12 wheel runtime and a torch in site-packages, nvcc 13.0 on PATH."""
    t = tmp_path
    write(t / "proc/driver/nvidia/version", PROC_580)
    lib = t / "usr/lib"
    write(lib / "libcuda.so.580.95.05")
    link("libcuda.so.580.95.05", lib / "libcuda.so.1")
    cudalib = t / "opt/cuda-12.8/lib64"
    write(cudalib / "libcudart.so.12.8.90")
    link("libcudart.so.12.8.90", cudalib / "libcudart.so.12")
    site = t / "site"
    write(site / "nvidia/cuda_runtime/lib/libcudart.so.12")
    write(
        site / "nvidia_cuda_runtime_cu12-12.4.127.dist-info/RECORD",
        "nvidia/cuda_runtime/lib/libcudart.so.12,sha256=x,1\nnvidia/__init__.py,,\n",
    )
    write(site / "torch/version.py", "__version__ = '2.8.0+cu128'\ncuda: Optional[str] = '12.8'\n")
    bindir = t / "bin"
    write(bindir / "nvcc", "#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n", 0o755)
    env = {
        "PATH": str(bindir),
        "LD_LIBRARY_PATH": f"{cudalib}:/home/u/lib",
        "CUDA_MODULE_LOADING": "EAGER",
        "CUDA_CACHE_MAXSIZE": "4294967296",
        "HOME": "/home/u",
    }
    roots = st.Roots(
        proc=str(t / "proc"),
        etc=str(t / "etc"),
        env=env,
        lib_dirs=(str(lib),),
        site_dirs=(str(site),),
        ldconfig="",
    )
    return t, roots


def h200():
    return [st.LocalGpu(0, "NVIDIA H200", "9.0", False)], "580.95.05", None


def no_gpu():
    return [], None, "no GPU found (nvml: NVML unavailable)"


def api(version):
    return lambda path: (version, None)


def discover(roots, gpus=h200, driver_api=13000, runtime_api=None):
    return st.discover(
        roots,
        gpu_probe=gpus,
        driver_api=api(driver_api),
        runtime_api=lambda p: runtime_api,
        torch_archs=False,
    )


def test_every_layer_is_found(machine):
    t, roots = machine
    s = discover(roots)
    assert s.kernel_driver == st.KernelDriver("580.95.05", str(t / "proc/driver/nvidia/version"))
    assert s.user_driver.path == str(t / "usr/lib/libcuda.so.1")
    assert s.user_driver.build == "580.95.05" and s.user_driver.api_version == 13000
    assert [(r.version, r.found_via, r.distribution) for r in s.runtimes] == [
        ("12.8", "LD_LIBRARY_PATH", None),
        ("12.4", "site-packages", "nvidia-cuda-runtime-cu12 12.4.127"),
    ]
    assert s.nvcc == st.Nvcc(str(t / "bin/nvcc"), "13.0.88")
    assert (s.torch.version, s.torch.cuda) == ("2.8.0+cu128", "12.8")
    env = {e.name: e.value for e in s.env}
    assert env == {
        "CUDA_MODULE_LOADING": "EAGER",
        "CUDA_CACHE_MAXSIZE": "4294967296",
        "LD_LIBRARY_PATH": str(t / "opt/cuda-12.8/lib64"),
    }
    assert s.missing == ()


def test_conditions_hold_and_nvcc_mismatch_is_warned(machine):
    _t, roots = machine
    d = diagnose(discover(roots))
    assert (d.driver_cuda, d.driver_cuda_from, d.max_ptx_isa) == ("13.0", "cuDriverGetVersion", "9.0")
    assert [c.status for c in d.conditions] == [OK, OK]
    assert "12.8" in d.conditions[0].text and "H200" in d.conditions[1].text
    codes = [w.code for w in d.warnings]
    assert "nvcc-differs-from-runtime" in codes and "runtime-newer-than-driver" not in codes


def test_runtime_newer_than_driver_fails_condition_one(machine):
    t, roots = machine
    write(t / "proc/driver/nvidia/version", PROC_580.replace("580.95.05", "550.54.14"))
    d = diagnose(discover(roots, driver_api=12040))
    assert d.driver_cuda == "12.4"
    assert (
        d.conditions[0].status == OK and d.conditions[0].rule == "R-MVC"
    )  # 12.8 on 12.4: minor-version compat
    assert "runtime-newer-than-driver" in [w.code for w in d.warnings]
    assert "nvcc-newer-than-driver" in [w.code for w in d.warnings]
    d = diagnose(discover(roots, driver_api=None))  # libcuda unusable: the branch decides
    assert d.driver_cuda_from == "driver branch R550"
    os.remove(t / "opt/cuda-12.8/lib64/libcudart.so.12.8.90")
    write(t / "opt/cuda-12.8/lib64/libcudart.so.13.0.48")
    os.remove(t / "opt/cuda-12.8/lib64/libcudart.so.12")
    d = diagnose(discover(roots, driver_api=12040))
    assert d.conditions[0].status == FAIL and "35" in d.conditions[0].text


def test_driver_below_family_floor(machine):
    t, roots = machine
    write(t / "proc/driver/nvidia/version", PROC_580.replace("580.95.05", "520.61.05"))
    os.remove(t / "usr/lib/libcuda.so.1")
    link("libcuda.so.520.61.05", t / "usr/lib/libcuda.so.1")
    write(t / "usr/lib/libcuda.so.520.61.05")
    d = diagnose(discover(roots, driver_api=12000))
    assert d.conditions[0].status == FAIL and d.conditions[0].rule == "R-MVC"


def test_cuda_compat_package_is_a_mismatch(machine):
    t, roots = machine
    compat = t / "usr/local/cuda-13.2/compat"
    write(compat / "libcuda.so.595.45.04")
    link("libcuda.so.595.45.04", compat / "libcuda.so.1")
    roots = roots.__class__(**{**roots.__dict__, "env": {**roots.env, "LD_LIBRARY_PATH": str(compat)}})
    s = discover(roots, driver_api=13020)
    assert s.user_driver.build == "595.45.04" and s.kernel_driver.version == "580.95.05"
    d = diagnose(s)
    assert d.driver_cuda == "13.2"
    assert "compat-package" in [w.code for w in d.warnings]


def test_without_gpu_or_driver_everything_else_is_reported(machine):
    t, roots = machine
    os.remove(t / "proc/driver/nvidia/version")
    s = discover(roots, gpus=no_gpu, driver_api=None)
    assert s.gpus == () and s.kernel_driver is None
    assert s.runtimes and s.nvcc and s.torch
    assert any("kernel driver" in m for m in s.missing) and any("no GPU" in m for m in s.missing)
    d = diagnose(s)
    assert d.conditions[1].status == UNKNOWN


def test_stub_libcuda_and_jit_switch_warnings(machine):
    _t, roots = machine
    roots = roots.__class__(**{**roots.__dict__, "env": {**roots.env, "CUDA_DISABLE_PTX_JIT": "1"}})
    s = st.discover(
        roots,
        gpu_probe=h200,
        driver_api=lambda p: (None, "cuDriverGetVersion returned 34 (stub library)"),
        runtime_api=lambda p: None,
        torch_archs=False,
    )
    codes = [w.code for w in diagnose(s).warnings]
    assert "libcuda-unusable" in codes and "jit-switch" in codes


def test_ldconfig_cache_and_32bit_entries(tmp_path):
    lib64, lib32 = tmp_path / "lib64", tmp_path / "lib32"
    write(lib64 / "libcudart.so.11.8.89")
    write(lib32 / "libcudart.so.11.0")
    text = (
        f"3 libs found in cache\n\tlibcudart.so.11.0 (libc6) => {lib32}/libcudart.so.11.0\n"
        f"\tlibcudart.so.11.0 (libc6,x86-64) => {lib64}/libcudart.so.11.8.89\n"
    )
    roots = st.Roots(proc=str(tmp_path), env={}, lib_dirs=(), site_dirs=(), ldconfig=text)
    rts = st.find_runtimes(roots, st._ldconfig_entries(roots), lambda p: None)
    assert [(r.path, r.version, r.found_via) for r in rts] == [
        (f"{lib64}/libcudart.so.11.8.89", "11.8", "ldconfig")
    ]


def test_torch_archs_from_a_real_library(tmp_path):
    from conftest import fixture_path

    site = tmp_path / "site"
    write(site / "torch/version.py", "__version__ = '2.9.0'\ncuda = '13.0'\n")
    os.makedirs(site / "torch/lib")
    with (
        open(fixture_path("bin", "t12_lib_sm86_c89.so"), "rb") as src,
        open(site / "torch/lib/libtorch_cuda.so", "wb") as dst,
    ):
        dst.write(src.read())
    t = st.find_torch([str(site)])
    assert t.archs == ("sm_86", "compute_89") and t.ptx_isa is not None
    s = st.Stack(gpus=(st.LocalGpu(0, "NVIDIA GeForce RTX 3090", "8.6", False),), torch=t)
    # without a driver the torch check is not made; with one the engine's R-SEL says sm_86 runs
    proc = tmp_path / "proc/driver/nvidia/version"
    write(proc, PROC_580)
    s = st.Stack(gpus=s.gpus, torch=t, kernel_driver=st.proc_driver_version(str(tmp_path / "proc")))
    d = diagnose(s)
    assert d.conditions[1].status == OK and "sm_86" in d.conditions[1].text
    s = st.Stack(gpus=(st.LocalGpu(0, "NVIDIA A100", "8.0", False),), torch=t, kernel_driver=s.kernel_driver)
    assert diagnose(s).conditions[1].status == FAIL  # sm_86 cubin and compute_89 PTX cannot serve CC 8.0


def test_nvcc_not_executable_is_not_found(tmp_path):
    write(tmp_path / "nvcc", "#!/bin/sh\n", 0o644)
    assert st.find_nvcc(str(tmp_path)) is None


# ------------------------------------------------------------------- R-FWD and bundled ptxas (#17)
def _with_compat(t, roots, build="615.71.09", folder="usr/local/cuda-13.4/compat"):
    compat = t / folder
    write(compat / f"libcuda.so.{build}")
    link(f"libcuda.so.{build}", compat / "libcuda.so.1")
    return roots.__class__(**{**roots.__dict__, "env": {**roots.env, "LD_LIBRARY_PATH": str(compat)}})


def _gpu(name, cc):
    return lambda: ([st.LocalGpu(0, name, cc, False)], "580.95.05", None)


def _fwd(d):
    return next((c for c in d.conditions if c.rule == "R-FWD"), None)


def test_compat_package_on_a_datacenter_gpu_is_allowed(machine):
    t, roots = machine
    d = diagnose(discover(_with_compat(t, roots), driver_api=13040))
    c = _fwd(d)
    assert c is not None and c.status == OK and "cuda-compat-13-4" in c.text and "CUDA 13.4" in c.text
    assert d.driver_cuda == "13.4"


def test_compat_package_on_geforce_fails_with_804(machine):
    t, roots = machine
    s = discover(_with_compat(t, roots), gpus=_gpu("NVIDIA GeForce RTX 4090", "8.9"), driver_api=13040)
    c = _fwd(diagnose(s))
    assert c.status == FAIL and "804" in c.text and "cudaErrorCompatNotSupportedOnDevice" in c.text


def test_compat_package_on_a_new_feature_branch_follows_nvidias_table_with_a_warning(machine):
    """NVIDIA's table marks cuda-compat-13-4 compatible with R590 although its prose excludes new
    feature branches: the table decides, the condition says so (issue 22)."""
    t, roots = machine
    write(t / "proc/driver/nvidia/version", PROC_580.replace("580.95.05", "590.44.01"))
    c = _fwd(diagnose(discover(_with_compat(t, roots), driver_api=13040)))
    assert c.status == OK and "warning" in c.text and "new feature branches" in c.text


def test_compat_package_on_a_branch_outside_the_table_fails_with_803(machine):
    t, roots = machine
    write(t / "proc/driver/nvidia/version", PROC_580.replace("580.95.05", "550.54.15"))
    c = _fwd(diagnose(discover(_with_compat(t, roots), driver_api=13040)))
    assert c.status == FAIL and "803" in c.text and "no column for R550" in c.text


def test_no_compat_package_no_fwd_condition(machine):
    _t, roots = machine
    assert _fwd(diagnose(discover(roots))) is None


def test_compat_package_found_for_driver_auto(machine, monkeypatch):
    """--driver auto: the cuda-compat libcuda the loader picks becomes the target's package."""
    t, roots = machine
    roots = _with_compat(t, roots)
    udrv = st.user_driver(roots, [], api(13040))
    found = st.compat_package(udrv, "580.95.05")
    assert found.cuda == "13.4" and found.build == "615.71.09" and found.folder.endswith("cuda-13.4/compat")
    assert st.compat_package(udrv, "615.71.09") is None  # same build as the kernel driver: no package
    monkeypatch.setattr(st, "loaded_user_driver", lambda roots=None: udrv)
    assert st._local_compat("580.95.05") == ("13.4", found.folder)
    from fatbin_inspect.compat.targets import LocalDevices, resolve_targets

    local = LocalDevices(driver="580.95.05", compat=st._local_compat("580.95.05"))
    (tg,) = resolve_targets(["H100"], "auto", local=local)
    assert tg.compat.package == "cuda-compat-13-4" and tg.umd.cuda == "13.4" and tg.driver.branch == 580


def _triton(t, roots, version, ptxas_release, env_ptxas=None):
    site = t / "site"
    write(site / "triton/__init__.py", f"__version__ = '{version}'\n")
    write(
        site / "triton/backends/nvidia/bin/ptxas",
        f"#!/bin/sh\necho 'Cuda compilation tools, release {ptxas_release}, V{ptxas_release}.85'\n",
        0o755,
    )
    env = dict(roots.env)
    if env_ptxas:
        exe = write(t / "opt/ptxas", f"#!/bin/sh\necho 'Cuda compilation tools, V{env_ptxas}.9'\n", 0o755)
        env["TRITON_PTXAS_PATH"] = str(exe)
    return roots.__class__(**{**roots.__dict__, "env": env})


def _ptxas_warnings(d):
    return [w.text for w in d.warnings if w.code == "ptxas-too-old"]


@pytest.mark.parametrize(
    "gpu,cc,release,warned",
    [
        ("NVIDIA GeForce RTX 5090", "12.0", "12.6", True),  # 12.6 cannot target sm_120
        ("NVIDIA GeForce RTX 5090", "12.0", "12.8", False),
        ("NVIDIA Thor", "11.0", "12.8", True),  # 12.8 knows sm_101, not sm_110
        ("NVIDIA H200", "9.0", "12.6", False),
    ],
)
def test_triton_ptxas_too_old_for_the_gpu(machine, gpu, cc, release, warned):
    t, roots = machine
    s = discover(_triton(t, roots, "3.1.0", release), gpus=_gpu(gpu, cc))
    assert [p.version for p in s.ptxas] == [f"{release}.85"] and "triton 3.1.0" in s.ptxas[0].via
    texts = _ptxas_warnings(diagnose(s))
    assert bool(texts) is warned, texts
    if warned:
        assert f"sm_{cc.replace('.', '')}" in texts[0] and "TRITON_PTXAS_PATH" in texts[0]


def test_triton_ptxas_path_overrides_the_bundled_one(machine):
    t, roots = machine
    s = discover(
        _triton(t, roots, "3.1.0", "12.6", env_ptxas="13.0"), gpus=_gpu("NVIDIA GeForce RTX 5090", "12.0")
    )
    assert s.ptxas[0].via == "TRITON_PTXAS_PATH" and len(s.ptxas) == 2
    assert _ptxas_warnings(diagnose(s)) == []


# ------------------------------------------------------------ the published doctor.schema.json
def _doctor_schema():
    import json
    from importlib import resources

    return json.loads(resources.files("fatbin_inspect").joinpath("schemas/doctor.schema.json").read_text())


def _validated(doc):
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(_doctor_schema())
    jsonschema.validate(doc, _doctor_schema())
    return doc


def test_this_machines_doctor_report_validates_against_the_schema(tmp_path):
    import json
    import subprocess
    import sys

    out = tmp_path / "doctor.json"
    proc = subprocess.run(
        [sys.executable, "-m", "fatbin_inspect", "doctor", "--format", "json", "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode in (0, 1, 4), proc.stderr  # 4: no GPU or driver on this machine
    _validated(json.loads(out.read_text()))


@pytest.mark.parametrize("variant", ["plain", "compat", "triton", "no-gpu"])
def test_doctor_documents_of_every_layer_validate_and_are_target_files(machine, tmp_path, variant):
    import json

    from fatbin_inspect.judging import fleet
    from fatbin_inspect.render.doctor_json import doctor_document

    t, roots = machine
    gpus = no_gpu if variant == "no-gpu" else h200
    if variant == "compat":
        roots = _with_compat(t, roots)
    if variant == "triton":
        _triton(t, roots, "3.4.0", "12.8")
    s = discover(roots, gpus=gpus, driver_api=13040 if variant == "compat" else 13000)
    doc = _validated(json.loads(json.dumps(doctor_document(s, diagnose(s)))))
    assert bool(doc["stack"]["gpus"]) == (variant != "no-gpu")
    path = tmp_path / "doctor-node7.json"
    path.write_text(json.dumps(doc))
    targets = fleet.read_targets(str(path), None)
    assert [(x.gpu.name, x.driver.version) for x in targets] == (
        [] if variant == "no-gpu" else [("NVIDIA H200", "580.95.05")]
    )


def test_the_schema_refuses_what_targets_cannot_read():
    import jsonschema

    doc = {
        "schema_version": 1,
        "tool": {"name": "fatbin-inspect", "version": "0"},
        "stack": {"gpus": [{"name": 1}]},
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, _doctor_schema())
