"""The Kubernetes fleet recipe (deploy/kubernetes/): every manifest is valid for a current
Kubernetes schema (kubernetes-validate, offline, strict), the DaemonSet reaches the GPU nodes the
way NVIDIA's GPU operator labels them, and what the collector writes is what ``--targets``
reads, named by node. No cluster runs here: ``kubectl`` is a stand-in that answers as the API
server would for two ready pods, serving reports this machine's own ``doctor`` wrote."""

from __future__ import annotations

import copy
import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys

import pytest
from conftest import ROOT, cli, fixture_path

yaml = pytest.importorskip("yaml")
kv = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate (test extra)")

DEPLOY = pathlib.Path(ROOT, "deploy", "kubernetes")
VERSION = "1.34.0"  # a current release; kubernetes-validate ships its schemas offline
MANIFESTS = sorted(DEPLOY.glob("*.yaml"))


def _docs(path: pathlib.Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def _daemonset() -> dict:
    return next(d for p in MANIFESTS for d in _docs(p) if d["kind"] == "DaemonSet")


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
@pytest.mark.parametrize("version", [VERSION, kv.latest_version()])
def test_every_manifest_is_valid_for_a_current_kubernetes(path, version):
    docs = _docs(path)
    assert docs
    for doc in docs:
        kv.validate(doc, version, strict=True)  # raises ValidationError with the field's path


def test_the_validator_rejects_a_misspelt_field():
    # a negative control: strict validation sees a field the schema does not have
    ds = copy.deepcopy(_daemonset())
    ds["spec"]["template"]["spec"]["nodeSelectr"] = ds["spec"]["template"]["spec"].pop("nodeSelector")
    with pytest.raises(kv.ValidationError):
        kv.validate(ds, VERSION, strict=True)


def test_the_daemonset_runs_doctor_on_every_gpu_node_named_by_the_node():
    spec = _daemonset()["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}  # the GPU operator's label
    assert any(t["key"] == "nvidia.com/gpu" and t["operator"] == "Exists" for t in spec["tolerations"])
    (c,) = spec["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 1
    script = " ".join(c["args"])
    assert 'doctor --format json --host "$NODE_NAME" -o /reports/doctor.json' in script
    node = next(e for e in c["env"] if e["name"] == "NODE_NAME")
    assert node["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert c["readinessProbe"]["exec"]["command"] == ["test", "-s", "/reports/doctor.json"]


def test_the_cronjob_collects_with_the_script_and_gates_against_the_reports():
    docs = [d for d in _docs(DEPLOY / "check-cronjob.yaml")]
    job = next(d for d in docs if d["kind"] == "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (init,) = job["initContainers"]
    assert init["command"] == ["sh", "/collect/collect-reports.sh", "/reports"]
    assert "gate -r /config/requirements.txt --targets /reports" in " ".join(job["containers"][0]["args"])
    role = next(d for d in docs if d["kind"] == "Role")
    assert {(r["resources"][0], tuple(r["verbs"])) for r in role["rules"]} == {
        ("pods", ("get", "list")),
        ("pods/exec", ("create",)),
    }


def _report(tmp_path: pathlib.Path, node: str, gpu: tuple[str, str]) -> pathlib.Path:
    """This machine's real doctor report under ``--host node``, with one GPU put in (no GPU here)."""
    ran = cli("doctor", "--format", "json", "--host", node, codes=(0, 1, 4))
    doc = json.loads(ran.out)
    assert doc["stack"]["host"] == node
    doc["stack"]["gpus"] = [{"index": 0, "name": gpu[0], "cc": gpu[1], "uuid": None, "tegra": False}]
    doc["stack"]["kernel_driver"] = {"version": "580.65.06", "source": "/proc/driver/nvidia/version"}
    path = tmp_path / f"served-{node}.json"
    path.write_text(json.dumps(doc))
    return path


def _stand_in_kubectl(tmp_path: pathlib.Path, pods: list[tuple[str, str, str, pathlib.Path]]) -> dict:
    """A ``kubectl`` on PATH that lists ``pods`` (name, node, ready) and serves each one's report."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    listing = "".join(f"{p} {n} {r}\n" for p, n, r, _ in pods)
    cases = "".join(f'  *" exec {p} -- cat /reports/doctor.json "*) cat "{f}" ;;\n' for p, _, _, f in pods)
    script = f"""#!/bin/sh
case " $* " in
  *" get pods "*) printf '%s' '{listing}' ;;
{cases}  *) echo "kubectl stand-in: unexpected: $*" >&2; exit 9 ;;
esac
"""
    kubectl = bindir / "kubectl"
    kubectl.write_text(script)
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IXUSR)
    return dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX sh")
def test_collected_reports_become_targets_named_by_node(tmp_path):
    pods = [
        (
            "fatbin-inspect-doctor-a1",
            "gpu-node-1",
            "true",
            _report(tmp_path, "gpu-node-1", ("NVIDIA H100", "9.0")),
        ),
        (
            "fatbin-inspect-doctor-b2",
            "gpu-node-2",
            "true",
            _report(tmp_path, "gpu-node-2", ("Tesla V100", "7.0")),
        ),
    ]
    out = tmp_path / "reports"
    env = _stand_in_kubectl(tmp_path, pods)
    ran = subprocess.run(
        ["sh", str(DEPLOY / "collect-reports.sh"), str(out)], env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    assert sorted(p.name for p in out.iterdir()) == ["doctor-gpu-node-1.json", "doctor-gpu-node-2.json"]
    lib = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90")  # sm_75, sm_80, sm_90 SASS + compute_90
    doc = cli("check", lib, "--targets", str(out), "--format", "json", codes=(0, 1)).json()
    hosts = [t["hosts"] for t in doc["targets"]]
    by_host = {hosts[r["target"]][0]: (r["verdict"], (r["error"] or {}).get("code")) for r in doc["results"]}
    assert by_host == {"gpu-node-1": ("native", None), "gpu-node-2": ("fail", 209)}, by_host


def test_a_pod_not_ready_fails_the_collection(tmp_path):
    ready = _report(tmp_path, "gpu-node-1", ("NVIDIA H100", "9.0"))
    pods = [("p1", "gpu-node-1", "true", ready), ("p2", "gpu-node-2", "false", ready)]
    ran = subprocess.run(
        ["sh", str(DEPLOY / "collect-reports.sh"), str(tmp_path / "r")],
        env=_stand_in_kubectl(tmp_path, pods),
        capture_output=True,
        text=True,
    )
    assert ran.returncode != 0 and "p2 on gpu-node-2: not ready" in ran.stderr
    assert (tmp_path / "r" / "doctor-gpu-node-1.json").exists()


def test_the_readme_names_the_manifests():
    readme = pathlib.Path(ROOT, "README.md").read_text(encoding="utf-8")
    for path in [*MANIFESTS, DEPLOY / "collect-reports.sh"]:
        assert f"deploy/kubernetes/{path.name}" in readme
    assert sys.executable  # (the manifests' python image needs nothing from this interpreter)
