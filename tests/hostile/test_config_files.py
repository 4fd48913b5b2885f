"""Hostile inputs, round three (issue 23), class 1: configuration is input.

``pyproject.toml`` ``[tool.fatbin-inspect]``, ``gate --config`` files, fleet TOML and
``--targets`` doctor JSON with values of every wrong type, NaN/Infinity, lone surrogates,
nesting 100,000 deep, megabytes of keys, ``tool = 1``, FIFOs and ``/dev/zero``: a usage error
naming the file (exit 2), never an internal error, never a hang. Each run is a child under a
memory limit and a timeout (``test_hostile.run_many``); every command that reads the file is
tried: ``gate --config``, ``gate`` finding the pyproject.toml, ``check``/``scan``/``gate
--targets``, ``check`` with the pyproject.toml's targets.
"""

from __future__ import annotations

import os

import builders as B
import pytest
from hostile_runner import run_many

DEEP = 100_000

# (name, [tool.fatbin-inspect] body or whole-file text): each must be refused
BAD_POLICIES = {
    "tool-is-int": "tool = 1\n",
    "section-is-int": "[tool]\nfatbin-inspect = 1\n",
    "require-numbers": "[tool.fatbin-inspect]\nrequire = [[1, 2], [3]]\n",
    "require-bool": "[tool.fatbin-inspect]\nrequire = true\n",
    "require-table": "[tool.fatbin-inspect]\nrequire = [{a = 1}]\n",
    "require-nan": "[tool.fatbin-inspect]\nrequire = [nan]\n",
    "require-inf": "[tool.fatbin-inspect]\nrequire = [inf]\n",
    "require-huge-int": "[tool.fatbin-inspect]\nrequire = [" + "9" * 5000 + "]\n",
    "require-long": '[tool.fatbin-inspect]\nrequire = ["' + "9" * 100_000 + '"]\n',
    "disable-int": "[tool.fatbin-inspect]\ndisable = 7\n",
    "disable-numbers": "[tool.fatbin-inspect]\ndisable = [1, 2]\n",
    "severity-list": '[tool.fatbin-inspect]\nseverity = { FBI001 = ["error"] }\n',
    "fail-on-list": '[tool.fatbin-inspect]\nfail-on = ["error"]\n',
    "min-driver-float": "[tool.fatbin-inspect]\nmin-driver = inf\n",
    "min-driver-list": "[tool.fatbin-inspect]\nmin-driver = [535]\n",
    "gpus-int": "[tool.fatbin-inspect]\ngpus = 5\n",
    "targets-int": "[tool.fatbin-inspect]\ntargets = 5\n",
    "targets-numbers": "[tool.fatbin-inspect]\ntargets = [1, 2]\n",
    "targets-gpu-int": "[tool.fatbin-inspect]\ntargets = [{gpu = 80, driver = [1]}]\n",
    "overrides-int": "[tool.fatbin-inspect]\noverrides = [1]\n",
    "overrides-table": "[tool.fatbin-inspect]\noverrides = 1\n",
    "deep-array": "[tool.fatbin-inspect]\nrequire = " + "[" * DEEP + "]" * DEEP + "\n",
    "deep-inline": "[tool.fatbin-inspect]\nx = " + "{a = " * DEEP + "1" + "}" * DEEP + "\n",
    "deep-tables": "[tool.fatbin-inspect." + ".".join(["a"] * 2000) + "]\nx = 1\n",
    "many-keys": "[tool.fatbin-inspect]\n" + "".join(f"k{i} = 1\n" for i in range(300_000)),
    "not-utf8": '[tool.fatbin-inspect]\nrequire = ["sm_80\xff"]\n',
    "nul": "[tool.fatbin-inspect]\nrequire = ['sm_80\x00']\n",
}

# --targets files: doctor JSON and fleet TOML
BAD_TARGETS = {
    "json-nan": '{"stack": {"gpus": [{"name": "A100", "cc": NaN}]}}',
    "json-infinity": '[{"stack": {"gpus": [], "host": Infinity}}]',
    "json-surrogate-host": '{"stack": {"host": "\\ud800", "gpus": [{"name": "A100", "cc": "8.0"}]}}',
    "json-surrogate-name": '{"stack": {"gpus": [{"name": "A\\udc80", "cc": "8.0"}]}}',
    "json-surrogate-key": '{"stack": {"\\ud800": 1, "gpus": [{"name": "A100", "cc": "8.0"}]}}',
    "json-deep": "[" * DEEP + "]" * DEEP,
    "json-deep-object": '{"a": ' * DEEP + "1" + "}" * DEEP,
    "json-wrong-types": '{"stack": {"gpus": [{"name": 1, "cc": [8, 0]}]}}',
    "json-driver-list": '{"stack": {"kernel_driver": {"version": [535]}, "gpus": [{"name": "A100", "cc": "8.0"}]}}',
    "json-driver-int": '{"stack": {"kernel_driver": {"version": 535}, "user_driver": {"build": 5, "path": 7}, '
    '"gpus": [{"name": "A100", "cc": "8.0"}]}}',
    "json-gpus-object": '{"stack": {"gpus": {"a": 1}}}',
    "json-stack-list": '{"stack": [1, 2]}',
    "json-number": "12",
    "json-targets-ints": '{"targets": [1, 2]}',
    "json-huge-int": '{"stack": {"gpus": [{"name": "A100", "cc": ' + "9" * 5000 + "}]}}",
    "toml-tool-int": "tool = 1\n",
    "toml-targets-int": "targets = 1\n",
    "toml-gpu-list": 'targets = [{gpu = ["H100"], driver = "550"}]\n',
    "toml-driver-float": 'targets = [{gpu = "H100", driver = nan}]\n',
    "toml-driver-table": 'targets = [{gpu = "H100", driver = {a = 1}}]\n',
    "toml-name-int": 'targets = [{gpu = "H100", name = 5}]\n',
    "toml-deep": "targets = " + "[" * DEEP + "]" * DEEP + "\n",
    "toml-section-int": "[tool]\nfatbin-inspect = 1\n",
}


def _binary(tmp_path):
    lib = tmp_path / "lib.so"
    lib.write_bytes(B.host_elf([(".nv_fatbin", B.sample_fatbin())]))
    return lib


def _assert_usage(runs, results, needle_of):
    for argv, r in zip(runs, results, strict=True):
        lines = r.stderr.strip().splitlines()
        assert r.code == 2, (argv[:4], r)
        assert len(lines) == 1, (argv[:4], r)
        needle = needle_of(argv)
        assert needle in lines[0], (argv[:4], needle, r)
        assert len(lines[0]) < 2000, (argv[:4], len(lines[0]))  # a key of megabytes is not echoed


@pytest.mark.slow
def test_bad_policy_files_are_usage_errors_naming_the_file(tmp_path):
    """Every bad policy through ``gate --config FILE`` and through the pyproject.toml ``gate``
    and ``check`` find (a project with a .git): exit 2, one line naming the file."""
    lib = _binary(tmp_path)
    runs = []
    for name, text in BAD_POLICIES.items():
        cfg = tmp_path / f"{name}.toml"
        cfg.write_bytes(text.encode("latin-1" if name == "not-utf8" else "utf-8"))
        runs.append(["gate", str(lib), "--require", "sm_80", "--config", str(cfg)])
        proj = tmp_path / f"proj-{name}"
        (proj / ".git").mkdir(parents=True)
        (proj / "pyproject.toml").write_bytes(cfg.read_bytes())
        runs.append(["gate", str(lib), "--require", "sm_80", "--config", str(proj / "pyproject.toml")])
    results = run_many(tmp_path, runs, mem=1 << 30, timeout=240)
    _assert_usage(runs, results, lambda argv: argv[-1])


@pytest.mark.slow
def test_pyproject_found_by_search_is_read_under_the_same_bounds(tmp_path):
    """``gate`` and ``check`` finding a bad pyproject.toml in the project (cwd): exit 2 naming it."""
    lib = _binary(tmp_path)
    for name in ("tool-is-int", "deep-array", "require-nan", "targets-numbers", "many-keys"):
        proj = tmp_path / f"p-{name}"
        (proj / ".git").mkdir(parents=True)
        (proj / "pyproject.toml").write_text(BAD_POLICIES[name])
        runs = [["gate", str(lib), "--require", "sm_80"], ["check", str(lib)]]
        results = run_many(proj, runs, timeout=120)
        if name in ("targets-numbers",):  # check reads the targets; both must name the file
            _assert_usage(runs, results, lambda argv: "pyproject.toml")
        else:
            _assert_usage(runs[:1], results[:1], lambda argv: "pyproject.toml")
            assert results[1].code in (0, 1, 2), results[1]  # check reads only the targets


def test_bad_target_files_are_usage_errors_in_every_command(tmp_path):
    """Every bad ``--targets`` file through check, scan and gate: exit 2, one line naming it."""
    lib = _binary(tmp_path)
    runs = []
    for name, text in BAD_TARGETS.items():
        f = tmp_path / f"{name}.{'json' if name.startswith('json') else 'toml'}"
        f.write_text(text)
        runs.append(["check", str(lib), "--targets", str(f)])
        runs.append(["scan", str(lib), "--no-cache", "-j1", "--targets", str(f)])
        runs.append(["gate", str(lib), "--isolated", "--targets", str(f)])
    results = run_many(tmp_path, runs, timeout=240)
    _assert_usage(runs, results, lambda argv: argv[-1])


@pytest.mark.slow
def test_special_files_as_config_are_refused_unread(tmp_path):
    """A FIFO (no writer: reading it would block forever) and /dev/zero (reading it never ends)
    as ``--config``/``--targets``, and a FIFO pyproject.toml found by the search."""
    lib = _binary(tmp_path)
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    runs = []
    for special in (str(fifo), "/dev/zero"):
        runs.append(["gate", str(lib), "--require", "sm_80", "--config", special])
        runs.append(["check", str(lib), "--targets", special])
        runs.append(["scan", str(lib), "--no-cache", "-j1", "--targets", special])
        runs.append(["gate", str(lib), "--isolated", "--targets", special])
    results = run_many(tmp_path, runs, mem=512 << 20, timeout=60)
    _assert_usage(runs, results, lambda argv: argv[-1])
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    os.mkfifo(proj / "pyproject.toml")
    runs = [["gate", str(lib), "--require", "sm_80"], ["check", str(lib), "--gpu", "H100"]]
    gate, check = run_many(proj, runs, mem=512 << 20, timeout=60)  # never opened, never waited on
    assert gate.code == 0 and "pyproject.toml: not read: not a regular file" in gate.stderr, gate
    assert check.code == 0, check  # --gpu given: check reads no pyproject.toml at all


def test_oversized_config_is_refused_before_parsing(tmp_path):
    """64 MiB of TOML comments: refused by its size (the limit is 4 MiB), not parsed."""
    lib = _binary(tmp_path)
    big = tmp_path / "big.toml"
    with open(big, "wb") as fh:
        fh.write(b"[tool.fatbin-inspect]\n")
        fh.truncate(64 << 20)  # sparse NULs: no disk used, and far too large
    targets = tmp_path / "big.json"
    with open(targets, "wb") as fh:
        fh.truncate(64 << 20)
    runs = [
        ["gate", str(lib), "--require", "sm_80", "--config", str(big)],
        ["check", str(lib), "--targets", str(targets)],
    ]
    results = run_many(tmp_path, runs, mem=256 << 20, timeout=30)
    _assert_usage(runs, results, lambda argv: "limit")


def test_api_gate_with_a_bad_policy_raises_usage_error(tmp_path):
    """The library gives the same UsageError (no RecursionError, AttributeError, TypeError)."""
    import pytest

    from fatbin_inspect.errors import UsageError
    from fatbin_inspect.release import policy

    for name in ("tool-is-int", "deep-array", "require-nan", "overrides-int", "disable-numbers"):
        cfg = tmp_path / f"{name}.toml"
        cfg.write_text(BAD_POLICIES[name])
        with pytest.raises(UsageError, match=name):
            policy.load(str(cfg))
