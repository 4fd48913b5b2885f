"""Packages judged straight from a package index: a real index server (pypiserver) and a
server without ranges (the standard library's http.server) on 127.0.0.1, serving wheels these
tests build and, corpus-marked, the real wheels of .cache/corpus; ``pip download`` as the
reference for which file is chosen. pip's own configuration is set aside (``PIP_CONFIG_FILE``
is os.devnull): the tests name their index."""

import hashlib
import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest
from conftest import BIN, CORPUS, ROOT, cli, fixture_path, read_file
from index_servers import build_sdist, build_wheel, pypiserver, static_index, static_server

from fatbin_inspect.containers.index import config
from fatbin_inspect.judging import index_inputs
from fatbin_inspect.judging.inputs import verdict_options

X86 = "manylinux_2_17_x86_64.manylinux2014_x86_64"
H100_580 = ["--gpu", "H100", "--driver", "580", "--format", "json"]
ISOLATED = {
    "PIP_CONFIG_FILE": os.devnull,
    "PIP_INDEX_URL": None,
    "PIP_EXTRA_INDEX_URL": None,
    "PIP_FIND_LINKS": None,
}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    """demo-cuda 1.0 (x86_64: sm_75/80/90 + compute_90; aarch64: a raw fatbin of sm_100/120),
    2.0 (cp311/cp312 x86_64: sm_80 only, CUDA 12.8 runtime declared; a pure fallback), 3.0
    (an sdist only)."""
    d = str(tmp_path_factory.mktemp("wheels"))
    filler = {"demo_cuda/big.py": os.urandom(300 << 10).hex().encode()}  # Python: never fetched
    so = {**filler, "demo_cuda/_ext.so": read_file(os.path.join(BIN, "t02_exe_sm75_sm80_sm90_c90"))}
    made = [
        build_wheel(d, "demo-cuda", "1.0", f"py3-none-{X86}", so),
        build_wheel(
            d,
            "demo-cuda",
            "1.0",
            "py3-none-manylinux_2_28_aarch64",
            {
                "demo_cuda/k.fatbin": read_file(
                    fixture_path("bin", "v1_sm100_sm100a_sm103f_c120_c120a_c120f.fatbin")
                )
            },
        ),
    ]
    sm80 = {
        "demo_cuda/_ext.so": read_file(os.path.join(BIN, "t01_exe_sm80")),
        "demo_cuda/k.fatbin": read_file(os.path.join(BIN, "t13_raw_sm75_c75_sm120.fatbin")),
    }
    runtime = ("nvidia-cuda-runtime-cu12==12.8.*",)
    for py in ("cp311", "cp312"):
        made.append(build_wheel(d, "demo-cuda", "2.0", f"{py}-{py}-manylinux_2_28_x86_64", sm80, runtime))
    made.append(build_wheel(d, "demo-cuda", "2.0", "py3-none-any", {}))
    build_sdist(d, "demo-cuda", "3.0")
    return d, made


@pytest.fixture(scope="module")
def index(wheels):
    try:
        server = pypiserver(wheels[0])
    except FileNotFoundError:
        pytest.skip("pypi-server not installed (pip install pypiserver)")
    yield server.url + "/simple/"
    server.stop()


@pytest.fixture(scope="module")
def no_ranges(wheels, tmp_path_factory):
    """A static index behind http.server (no Range support); ``/private/`` answers 401."""
    root = str(tmp_path_factory.mktemp("static"))
    static_index(root, wheels[1])
    bad = os.path.join(root, "private")
    os.makedirs(bad)
    server = static_server(root)
    yield server.url
    server.stop()


@pytest.fixture()
def isolated(tmp_path, monkeypatch):
    for k, v in ISOLATED.items():
        if v is None:
            monkeypatch.delenv(k, raising=False)
        else:
            monkeypatch.setenv(k, v)
    monkeypatch.setenv("FATBIN_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _source(index_url: str, **kw) -> index_inputs.IndexSource:
    src = index_inputs.IndexSource(config.resolve(config.Overrides(index_url)), **kw)
    index_inputs.use(src)
    return src


def _pinned(spec: str, server: str) -> list[str]:
    """``check pkg:pypi/SPEC`` from ``server``'s index for Python 3.11."""
    return ["check", f"pkg:pypi/{spec}", "--index-url", server + "/simple/", "--python", "3.11"]


def _results(ran) -> dict:
    doc = ran.json()
    names = [t["gpu"] for t in doc["targets"]]
    return {
        (r["path"].split("!", 1)[-1], names[r["target"]]): (r["verdict"], r["rule"]) for r in doc["results"]
    }


@pytest.mark.parametrize(
    "platform, python",
    [
        ("manylinux_2_28_x86_64", "3.11"),
        ("manylinux_2_28_x86_64", "3.12"),
        ("manylinux2014_x86_64", "3.10"),
        ("manylinux_2_28_aarch64", "3.11"),
        ("manylinux2014_aarch64", "3.12"),
    ],
)
def test_file_choice_equals_pip_download(index, isolated, platform, python):
    """The same file as ``pip download --only-binary=:all: --platform P --python-version V``."""
    out = isolated / "dl"
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
    for k in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"):
        env.pop(k, None)
    ran = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--platform", platform,
         "--python-version", python, "--index-url", index, "-d", str(out), "-q", "demo-cuda"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    (pips,) = os.listdir(out)
    src = _source(index, python=python, platforms=(platform,))
    chosen = src.choose(index_inputs.releases_of("pkg:pypi/demo-cuda")[0][0], src.platform_for(None))
    assert chosen.file is not None and chosen.file.filename == pips


def test_check_from_index_equals_check_of_the_file(index, wheels, isolated):
    url = "pkg:pypi/demo-cuda@1.0"
    targets = ["--gpu", "H100", "--gpu", "RTX 5090", "--gpu", "GTX 1080", "--driver", "580"]
    remote = cli("check", url, "--index-url", index, *targets, "--format", "json", codes=(0, 1))
    local = cli("check", wheels[1][0], *targets, "--format", "json", codes=(0, 1))
    assert _results(remote) == _results(local) and _results(remote)
    assert remote.json()["results"][0]["path"].startswith(index.replace("/simple/", "/packages/"))


def test_each_host_cpu_is_judged_on_its_own_wheel(index, isolated):
    """GB10 is an aarch64 host: its verdict comes from the aarch64 wheel (sm_120 code), the
    H100's (host not known: this machine's x86_64) from the x86_64 wheel."""
    ran = cli(
        "check",
        "pkg:pypi/demo-cuda@1.0",
        "--index-url",
        index,
        "--gpu",
        "GB10",
        "--gpu",
        "H100",
        "--driver",
        "580",
        "--format",
        "json",
        codes=(0, 1),
    )
    got = _results(ran)
    assert set(got) == {("demo_cuda/k.fatbin", "NVIDIA GB10"), ("demo_cuda/_ext.so", "NVIDIA H100")}
    assert got[("demo_cuda/_ext.so", "NVIDIA H100")] == ("native", "R-SASS-1")
    assert got[("demo_cuda/k.fatbin", "NVIDIA GB10")][0] in ("native", "jit")


def test_only_members_with_device_code_are_fetched_and_the_second_read_fetches_nothing(
    index, wheels, isolated
):
    src = _source(index)
    (fetched,) = index_inputs.fetch_all("pkg:pypi/demo-cuda@1.0", verdict_options(False), ["x86_64"])
    whole = os.path.getsize(wheels[1][0])
    import zipfile

    with zipfile.ZipFile(wheels[1][0]) as zf:
        so = zf.getinfo("demo_cuda/_ext.so").compress_size
    assert not fetched.cached and fetched.received < so + (64 << 10) + 4096 < whole
    assert [r.path.split("!", 1)[-1] for r in fetched.records][1:] == ["demo_cuda/_ext.so"]
    src._pages.clear()
    (again,) = index_inputs.fetch_all("pkg:pypi/demo-cuda@1.0", verdict_options(False), ["x86_64"])
    assert again.cached and again.received == 0 and again.records == fetched.records
    # the runtime METADATA declares, known again from the cache for the verdicts
    assert index_inputs.facts_of(fetched.records[0].path).metadata is not None


def test_runtime_from_metadata(index, isolated):
    """A raw fatbin carries no runtime of its own: the wheel's Requires-Dist names CUDA 12.8
    (R-RT 4), read from the index with the members."""
    ran = cli(
        "check",
        "pkg:pypi/demo-cuda@2.0",
        "--index-url",
        index,
        "--python",
        "3.11",
        "--gpu",
        "H100",
        "--driver",
        "525",
        "--format",
        "json",
        codes=1,
    )
    (r,) = [r for r in ran.json()["results"] if r["path"].endswith("k.fatbin")]
    assert r["verdict"] == "fail" and "12.8" in json.dumps(r["runtime"])


def test_server_without_ranges_is_read_in_one_pass_and_hash_checked(no_ranges, wheels, isolated):
    targets = ["--gpu", "H100", "--driver", "580", "--format", "json"]
    ran = cli(
        "check", "pkg:pypi/demo-cuda@1.0", "--index-url", no_ranges + "/simple/", *targets, codes=(0, 1)
    )
    local = cli("check", wheels[1][0], *targets, codes=(0, 1))
    assert _results(ran) == _results(local)
    root = isolated / "tampered"
    static_index(str(root), [wheels[1][0]], sha={os.path.basename(wheels[1][0]): "0" * 64})
    server = static_server(str(root))
    try:
        bad = cli(
            "check",
            "pkg:pypi/demo-cuda@1.0",
            "--index-url",
            server.url + "/simple/",
            "--gpu",
            "H100",
            codes=2,
        )
    finally:
        server.stop()
    assert "sha256 mismatch" in bad.err and "refused" in bad.err and len(bad.err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["pkg:pypi/no-such-project"], "no project 'no-such-project'"),
        (["pkg:pypi/demo-cuda@9.9"], "no release ==9.9"),
        (["pkg:pypi/demo-cuda@3.0"], "built from source on your machine: nothing to judge before install"),
    ],
)
def test_one_line_errors(index, isolated, args, message):
    ran = cli("check", *args, "--index-url", index, "--gpu", "H100", codes=2)
    assert message in ran.err and "Traceback" not in ran.err


def test_logins_from_netrc_denied_login_and_unreachable_index(no_ranges, isolated, monkeypatch):
    private = ["pkg:pypi/demo-cuda@1.0", "--index-url", no_ranges + "/private/simple/", "--gpu", "H100"]
    ran = cli("check", *private, codes=2)
    assert "login denied (HTTP 401)" in ran.err and len(ran.err.strip().splitlines()) == 1
    netrc = isolated / "netrc"
    netrc.write_text("machine 127.0.0.1 login alice password s3cret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    assert "native" in cli("check", *private, "--driver", "580", codes=0).out
    netrc.write_text("machine 127.0.0.1 login alice password wrong\n")
    assert "login denied" in cli("check", *private, codes=2).err
    from index_servers import free_port

    ran = cli(
        "check",
        "pkg:pypi/demo-cuda",
        "--index-url",
        f"http://127.0.0.1:{free_port()}/simple/",
        "--gpu",
        "H100",
        codes=2,
    )
    assert "connection refused" in ran.err and len(ran.err.strip().splitlines()) == 1


def test_pep658_metadata_is_read_before_the_wheel(wheels, isolated):
    """An index that serves METADATA alone (PEP 658): its Requires-Dist names the runtime;
    one whose sha256 does not match is not used (the wheel's own METADATA is)."""
    wheel = next(w for w in wheels[1] if "2.0-cp311" in w)
    served = b"Metadata-Version: 2.1\nName: demo-cuda\nVersion: 2.0\nRequires-Dist: nvidia-cuda-runtime-cu12==12.4.*\n"
    root = isolated / "pep658"
    static_index(str(root), [wheel], metadata={os.path.basename(wheel): served})
    server = static_server(str(root))
    args = [
        *_pinned("demo-cuda@2.0", server.url),
        "--gpu",
        "H100",
        "--format",
        "json",
    ]
    try:
        (r,) = [r for r in cli(*args, codes=(0, 1)).json()["results"] if r["path"].endswith("k.fatbin")]
        assert "12.4" in json.dumps(r["runtime"])
        with open(root / "files" / (os.path.basename(wheel) + ".metadata"), "wb") as fh:
            fh.write(served.replace(b"12.4", b"12.6"))  # no longer the digest the page gives
        (r,) = [
            r
            for r in cli(*args, codes=(0, 1), env={"FATBIN_INSPECT_CACHE_DIR": str(isolated / "c2")}).json()[
                "results"
            ]
            if r["path"].endswith("k.fatbin")
        ]
        assert "12.8" in json.dumps(r["runtime"])  # the wheel's own METADATA
    finally:
        server.stop()


def test_requirements_and_lock_files(index, wheels, isolated):
    so = os.path.basename(wheels[1][0])
    digest = hashlib.sha256(read_file(wheels[1][0])).hexdigest()
    req = isolated / "requirements.txt"
    req.write_text(f"--index-url {index}\ndemo-cuda==1.0 --hash=sha256:{digest}\n")
    ran = cli("gate", "-r", req, "--gpu", "H100", "--require", "sm_90", "--format", "json", codes=0)
    assert ran.json()["summary"]["failed"] is False
    req.write_text(f"--index-url {index}\ndemo-cuda==1.0 --hash=sha256:{'1' * 64}\n")
    ran = cli("gate", "-r", req, "--gpu", "H100", codes=(1, 2))
    assert "--hash" in ran.err or "--hash" in ran.out
    lock = isolated / "pylock.toml"
    url = index.replace("/simple/", "/packages/") + so
    lock.write_text(
        f'lock-version = "1.0"\ncreated-by = "tests"\n[[packages]]\nname = "demo-cuda"\nversion = "1.0"\n'
        f'[[packages.wheels]]\nurl = "{url}"\nhashes = {{sha256 = "{digest}"}}\n'
    )
    ran = cli("check", "-r", lock, "--gpu", "GTX 1080", "--driver", "580", "--format", "json", codes=1)
    assert {r["verdict"] for r in ran.json()["results"]} == {"fail"}


def test_list_and_diff_take_packages(index, isolated):
    ran = cli("list", "pkg:pypi/demo-cuda@1.0", "--index-url", index, "--format", "json", codes=0)
    assert [f["path"].split("!", 1)[-1] for f in ran.json()["files"] if f.get("fatbins")] == [
        "demo_cuda/_ext.so"
    ]
    ran = cli(
        "diff", "pkg:pypi/demo-cuda@1.0", "pkg:pypi/demo-cuda@2.0", "--index-url", index, "--python", "3.11"
    )
    assert ran.code == 0, ran.err
    (line,) = [x for x in ran.out.splitlines() if x.startswith("demo-cuda.whl!demo_cuda/_ext.so")]
    assert "sm_90" in line


def _serve(tmp_path: pathlib.Path, wheels: list[str]) -> Any:
    """pypiserver on 127.0.0.1 serving ``wheels`` (linked into a folder of their own)."""
    folder = tmp_path / "served"
    folder.mkdir()
    for w in wheels:
        os.symlink(w, folder / os.path.basename(w))
    try:
        return pypiserver(str(folder))
    except FileNotFoundError:
        pytest.skip("pypi-server not installed (pip install pypiserver)")


def _corpus_wheels() -> list[str]:
    if not os.path.isdir(CORPUS):
        return []
    return sorted(
        os.path.join(CORPUS, n)
        for n in os.listdir(CORPUS)
        if n.endswith(".whl") and os.path.getsize(os.path.join(CORPUS, n)) < 300 << 20
    )


@pytest.mark.corpus
@pytest.mark.slow
def test_corpus_verdicts_from_the_index_equal_the_files(tmp_path, isolated):
    """Every corpus wheel under 300 MB, served by pypiserver: check from the index gives the
    verdicts check of the file gives."""
    found = _corpus_wheels()
    if not found:
        pytest.skip("no corpus wheels in .cache/corpus (scripts/fetch_corpus.sh)")
    server = _serve(tmp_path, found)
    from fatbin_inspect.containers.wheel import wheel_name

    targets = [
        "--gpu",
        "H100",
        "--gpu",
        "GTX 1080",
        "--gpu",
        "RTX 5090",
        "--driver",
        "570",
        "--format",
        "json",
    ]
    try:
        for w in found:
            dist = wheel_name(w)
            pin = f"pkg:pypi/{dist.name}@{dist.version}"
            remote = cli(
                "check",
                pin,
                "--index-url",
                server.url + "/simple/",
                "--python",
                "3.11",
                *targets,
                codes=(0, 1),
            )
            local = cli("check", w, *targets, codes=(0, 1))
            assert _results(remote) == _results(local), w
    finally:
        server.stop()


@pytest.mark.skipif(
    os.environ.get("FATBIN_INSPECT_PUBLIC_INDEX") != "1",
    reason="opt-in: FATBIN_INSPECT_PUBLIC_INDEX=1 reads pypi.org",
)
def test_public_index(isolated):
    """pypi.org itself (PEP 691 JSON, PEP 658 metadata, ranges from its CDN): a small CUDA wheel."""
    public = ["--index-url", "https://pypi.org/simple/"]
    ran = cli("check", "pkg:pypi/nvidia-curand@10.4.0.35", *public, *H100_580, codes=0)
    assert {r["verdict"] for r in ran.json()["results"]} == {"native"}


def test_releases_table_and_answers(index, isolated):
    """3.0 has only an sdist; 2.0 is sm_80 code and compute_75 PTX (JIT on an H100), with no
    aarch64 wheel but the pure one; 1.0 runs natively on the H100 and, from its aarch64 wheel, on GB10 (sm_120 family
    PTX or code); nothing runs on a GTX 1080 (CC 6.1)."""
    args = ["releases", "demo-cuda", "--index-url", index, "--python", "3.11", "--driver", "580"]
    gpus = ["--gpu", "GTX 1080", "--gpu", "H100", "--gpu", "GB10"]
    doc = cli(*args, *gpus, "--format", "json", codes=1).json()
    rows = {r["version"]: [c["verdict"] for c in r["cells"]] for r in doc["releases"]}
    assert list(rows) == ["3.0", "2.0", "1.0"]
    assert rows["3.0"] == ["source-only"] * 3
    assert rows["2.0"] == ["fail", "jit", "no-device-code"]  # aarch64: the pure wheel
    assert rows["1.0"][1] == "native" and rows["1.0"][2] in ("native", "jit")
    gtx, h100, _gb10 = doc["targets"]
    assert (
        h100["answer"]
        == "newest release that runs natively on NVIDIA H100 (CC 9.0): 1.0; newest through JIT: 2.0"
    )
    assert (gtx["newest_native"], gtx["newest_jit"]) == (None, None)
    # 2.0's aarch64 wheel is the pure one: it runs, but not on GB10's GPU; 1.0 is the answer
    assert _gb10["newest_jit"] == "1.0" and _gb10["newest_native"] in ("1.0", None)
    table = cli(*args, *gpus, "--limit", "2", codes=1).out
    assert "1.0" not in table.split("newest")[0].split("version", 1)[1] and "1 older release(s)" in table
    md = cli(*args, "--gpu", "H100", "--since", "1.0", "--format", "markdown", codes=1).out
    assert (
        "| 1.0 | native |" in md and "- newest release that runs natively on NVIDIA H100 (CC 9.0): 1.0" in md
    )
    page = cli(*args, "--gpu", "H100", "--format", "html", codes=1).out
    assert page.startswith("<!DOCTYPE html>") and '<td class="native"' in page
    assert "no project 'nope'" in cli("releases", "nope", "--index-url", index, "--gpu", "H100", codes=2).err


@pytest.mark.slow
def test_action_and_pre_commit_hook_take_requirements(index, isolated, monkeypatch):
    """The action's ``requirements`` input and the ``fatbin-inspect-requirements`` hook run
    ``gate -r FILE``: the pins are judged from the index, nothing is installed."""
    import re

    from action_runner import LOCAL, Runner, hook

    (isolated / "requirements.txt").write_text(f"--index-url {index}\ndemo-cuda==1.0\n")
    (isolated / "README.md").write_text("not a requirements file")
    monkeypatch.setenv("PYTHONPATH", ROOT)
    r = Runner(
        isolated,
        {"paths": "", "requirements": "requirements*.txt", "args": "--gpu H100 --require sm_90", **LOCAL},
    )
    code, log = r.run()
    assert code == 0 and r.outputs["gate"]["exit-code"] == "0", log
    r = Runner(
        isolated, {"paths": "", "requirements": "requirements.txt", "args": "--gpu 'GTX 1080'", **LOCAL}
    )
    code, log = r.run()
    assert r.outputs["gate"]["exit-code"] == "1" and "::error" in log
    h = hook("fatbin-inspect-requirements")
    staged = [
        f
        for f in ("requirements.txt", "README.md", "pylock.toml", "sub/requirements-dev.txt")
        if re.search(h["files"], f)
    ]
    assert staged == ["requirements.txt", "pylock.toml", "sub/requirements-dev.txt"]
    argv = [sys.executable, *h["entry"].split()[1:], "--gpu", "GTX 1080", "requirements.txt"]
    ran = subprocess.run(argv, cwd=isolated, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1 and "FBI" in ran.stdout + ran.stderr, ran.stderr


def test_gate_requirements_on_a_mixed_fleet(index, isolated):
    """gate -r over a fleet of an x86_64 H100 node and a GB10 (aarch64) node: each node's
    findings come from its own CPU's wheel, never a host mismatch (R-HOST) of the other's."""
    (isolated / "requirements.txt").write_text("demo-cuda==1.0\n")
    (isolated / "fleet.toml").write_text(
        '[[targets]]\nname = "x86"\ngpu = "H100"\ndriver = "580"\nhost_arch = "x86_64"\n'
        '[[targets]]\nname = "spark"\ngpu = "GB10"\ndriver = "580"\n'
    )
    ran = cli(
        "gate",
        "-r",
        isolated / "requirements.txt",
        "--targets",
        isolated / "fleet.toml",
        "--index-url",
        index,
        "--format",
        "json",
        codes=(0, 1),
    )
    doc = ran.json()
    checked = {(c["path"].split("!", 1)[-1], c["target"]) for c in doc["checks"] if c["target"]}
    assert {p for p, _ in checked} == {"demo_cuda/_ext.so", "demo_cuda/k.fatbin"}
    assert all(("GB10" in t) == (p == "demo_cuda/k.fatbin") for p, t in checked), checked
    assert "R-HOST" not in json.dumps(doc["findings"])


@pytest.mark.corpus
def test_x86_and_aarch64_wheels_of_one_release(tmp_path, isolated):
    """nvidia-curand 10.4.0.35 from PyPI for x86_64 and aarch64 (scripts/fetch_corpus.sh), served
    together: GB10 (an aarch64 host) is judged on the aarch64 wheel, the H100 on the x86_64 one,
    each with the verdict check of that downloaded file gives."""
    arm = os.path.join(
        os.path.dirname(CORPUS),
        "corpus-aarch64",
        "nvidia_curand-10.4.0.35-py3-none-manylinux_2_27_aarch64.whl",
    )
    x86 = os.path.join(CORPUS, "nvidia_curand-10.4.0.35-py3-none-manylinux_2_27_x86_64.whl")
    if not (os.path.isfile(arm) and os.path.isfile(x86)):
        pytest.skip("the x86_64 and aarch64 nvidia-curand wheels are not in .cache (scripts/fetch_corpus.sh)")
    folder = tmp_path / "served"
    folder.mkdir()
    for w in (arm, x86):
        os.symlink(w, folder / os.path.basename(w))
    server = pypiserver(str(folder))
    pin = _pinned("nvidia-curand@10.4.0.35", server.url)
    try:
        remote = cli(
            *pin, "--gpu", "GB10", "--gpu", "H100", "--driver", "580", "--format", "json", codes=(0, 1)
        ).json()
        by_wheel = {
            (r["path"].split("!")[0].rsplit("/", 1)[-1], remote["targets"][r["target"]]["gpu"])
            for r in remote["results"]
        }
        assert by_wheel == {(os.path.basename(arm), "NVIDIA GB10"), (os.path.basename(x86), "NVIDIA H100")}
        for wheel, gpu in ((arm, "GB10"), (x86, "H100")):
            local = cli("check", wheel, "--gpu", gpu, "--driver", "580", "--format", "json", codes=(0, 1))
            mine = cli(*pin, "--gpu", gpu, "--driver", "580", "--format", "json", codes=(0, 1))
            assert _results(mine) == _results(local), gpu
    finally:
        server.stop()


def _scan(*args, codes=(0, 1)):
    return cli("scan", *args, "--format", "json", codes=codes).json()


def _rows(doc: dict) -> dict:
    """Distribution rows: name -> (the row's verdicts, its files' member names)."""
    return {
        row["name"]: (
            [v["verdict"] for v in row.get("verdicts", [])],
            sorted(c["name"].split("!", 1)[-1] for c in row.get("children", [])),
        )
        for row in doc["coverage"]["rows"]
    }


def test_scan_takes_packages_attributed_to_their_release(index, wheels, isolated, monkeypatch):
    """``scan pkg:pypi/...``: the rows of the release (NAME VERSION), with the same verdicts as
    a scan of the downloaded wheel; a warm repeat reads no wheel byte (the scan cache, by sha256)."""
    targets = ["--gpu", "H100", "--gpu", "GTX 1080", "--driver", "580"]
    remote = _scan("pkg:pypi/demo-cuda@1.0", "--index-url", index, *targets)
    local = _scan(wheels[1][0], *targets, "--no-cache")
    assert [r["name"] for r in remote["coverage"]["rows"]] == ["demo-cuda 1.0"]
    assert _rows(remote)["demo-cuda 1.0"] == _rows(local)[list(_rows(local))[0]]
    assert [f["path"].split("!", 1)[-1] for f in remote["files"]] == ["demo_cuda/_ext.so"]
    from fatbin_inspect.containers.index import remote_zip
    from fatbin_inspect.errors import InputError

    def no_wheel_bytes(*args, **kw):
        raise InputError("the wheel was read again")

    monkeypatch.setattr(remote_zip, "open_wheel", no_wheel_bytes)
    again = _scan("pkg:pypi/demo-cuda@1.0", "--index-url", index, *targets)
    assert again["coverage"] == remote["coverage"]
    assert (remote["stats"]["files"], remote["stats"]["cache_hits"], again["stats"]["cache_hits"]) == (
        1,
        0,
        1,
    )
    assert again["stats"]["bytes"] == remote["stats"]["bytes"] == os.path.getsize(wheels[1][0])
    cold = cli("scan", "pkg:pypi/demo-cuda@1.0", "--index-url", index, *targets, "--no-cache", codes=2)
    assert "the wheel was read again" in cold.err  # (the check above can fail)


@pytest.mark.parametrize("fmt", ["table", "html", "cyclonedx"])
def test_scan_packages_in_every_format(index, isolated, fmt):
    ran = cli(
        "scan", "pkg:pypi/demo-cuda@1.0", "--index-url", index, "--gpu", "H100", "--format", fmt, codes=0
    )
    assert "demo-cuda" in ran.out and "Traceback" not in ran.err


def test_scan_judges_each_host_cpu_on_its_own_wheel(index, isolated):
    """GB10 (aarch64) is judged on the aarch64 wheel's fatbin, the H100 on the x86_64 wheel's
    library: one row for the release, each file judged on its own host CPU's targets only."""
    doc = _scan(
        "pkg:pypi/demo-cuda@1.0", "--index-url", index, "--gpu", "GB10", "--gpu", "H100", "--driver", "580"
    )
    names = [t["gpu"] for t in doc["targets"]]
    (row,) = doc["coverage"]["rows"]
    files = {c["name"].split("!", 1)[-1]: c for c in row["children"]}
    assert set(files) == {"demo_cuda/_ext.so", "demo_cuda/k.fatbin"}
    h100, gb10 = names.index("NVIDIA H100"), names.index("NVIDIA GB10")
    assert files["demo_cuda/_ext.so"]["verdicts"][h100]["verdict"] == "native"
    assert files["demo_cuda/_ext.so"]["verdicts"][gb10]["verdict"] == "no-device-code"
    assert files["demo_cuda/k.fatbin"]["verdicts"][gb10]["verdict"] in ("native", "jit")
    assert row["verdicts"][h100]["verdict"] == "native"
    assert row["verdicts"][gb10]["verdict"] in ("native", "jit")
    import jsonschema

    import fatbin_inspect

    schema = os.path.join(os.path.dirname(fatbin_inspect.__file__), "schemas", "scan.schema.json")
    with open(schema) as fh:
        jsonschema.validate(doc, json.load(fh))
    assert {f["distribution"] for f in doc["files"]} == {"demo-cuda 1.0"}


def test_scan_requirements_and_one_line_errors(index, wheels, isolated):
    req = isolated / "requirements.txt"
    req.write_text("demo-cuda==2.0\n")
    doc = _scan("-r", str(req), "--index-url", index, "--python", "3.11", "--gpu", "H100", "--driver", "580")
    assert list(_rows(doc)) == ["demo-cuda 2.0"]
    mixed = _scan("pkg:pypi/demo-cuda@1.0", wheels[1][2], "--index-url", index, "--gpu", "H100")
    assert len(_rows(mixed)) == 2 and "demo-cuda 1.0" in _rows(mixed)  # beside a file on disk
    for spec, message in [
        ("pkg:pypi/no-such-project", "no project 'no-such-project'"),
        ("pkg:pypi/demo-cuda@9.9", "no release ==9.9"),
        ("pkg:pypi/demo-cuda@3.0", "built from source on your machine: nothing to judge before install"),
    ]:
        ran = cli("scan", spec, "--index-url", index, "--gpu", "H100", codes=2)
        assert message in ran.err and "Traceback" not in ran.err and len(ran.err.strip().splitlines()) == 1
    port = __import__("index_servers").free_port()  # nothing listens there
    ran = cli("scan", "pkg:pypi/demo-cuda@1.0", "--index-url", f"http://127.0.0.1:{port}/simple/", codes=2)
    assert "127.0.0.1" in ran.err and len(ran.err.strip().splitlines()) == 1


@pytest.mark.corpus
@pytest.mark.slow
def test_corpus_scan_from_the_index_equals_the_scan_of_the_files(tmp_path, isolated):
    """The real corpus wheels under 50 MB, served by pypiserver: ``scan pkg:pypi/...`` gives
    the rows, files and verdicts ``scan`` of the downloaded file gives."""
    found = [w for w in _corpus_wheels() if os.path.getsize(w) < 50 << 20]
    if not found:
        pytest.skip("no corpus wheels in .cache/corpus (scripts/fetch_corpus.sh)")
    server = _serve(tmp_path, found)
    from fatbin_inspect.containers.wheel import wheel_name

    targets = ["--gpu", "H100", "--gpu", "GTX 1080", "--gpu", "RTX 5090", "--driver", "570"]
    judged = 0
    try:
        for w in found:
            dist = wheel_name(w)
            pin = f"pkg:pypi/{dist.name}@{dist.version}"
            remote = _scan(pin, "--index-url", server.url + "/simple/", "--python", "3.11", *targets)
            local = _scan(w, *targets, "--no-cache")
            assert list(_rows(remote).values()) == list(_rows(local).values()), w
            assert [r["name"] for r in remote["coverage"]["rows"]] == [f"{dist.name} {dist.version}"], w
            judged += len(remote["files"])
    finally:
        server.stop()
    assert judged  # (files with device code were compared)


def test_list_of_a_package_not_on_the_index_is_no_success(index, isolated):
    """A ``pkg:pypi/...`` named to ``list`` that gives nothing (no such project, version or index)
    exits 2, as a missing path does, with one line naming it."""
    ran = cli("list", "pkg:pypi/nope@1.0", "--index-url", index, codes=2)
    assert ran.err.strip() == f"fatbin-inspect: pkg:pypi/nope@1.0: no project 'nope' on {index}", ran.err
    cli("list", "pkg:pypi/nope@1.0", "--index-url", index, "--format", "json", codes=2)
