"""What README.md and docs/*.md quote of the tool's output or verdicts is the tool's output now
(issue 56 item 6): every quoted block sits between ``<!-- output: NAME -->`` and
``<!-- /output -->``, ``BLOCKS`` says which commands make it, and this test runs them (in a
folder holding the files under the names the docs use) and compares. After an intended change,
``scripts/update_golden.sh`` (``FATBIN_INSPECT_UPDATE_GOLDEN=1``) rewrites the blocks with the
golden files; review the diff. Blocks over corpus libraries (``scripts/fetch_corpus.sh``) skip
without them and are marked ``corpus``."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import BIN, CORPUS, ROOT, Ran, cli

from fatbin_inspect.version import __version__

DOCS = [Path(ROOT) / "README.md", *sorted((Path(ROOT) / "docs").glob("*.md"))]
MARK = re.compile(r"^<!-- output: ([\w-]+) -->\n(.*?)^<!-- /output -->$", re.M | re.S)
UPDATE = bool(os.environ.get("FATBIN_INSPECT_UPDATE_GOLDEN"))


@dataclass(frozen=True)
class Block:
    """One quoted block: the commands (``fatbin-inspect`` arguments, files by the names the doc
    uses), the files under those names, and how their outputs become the block's text."""

    commands: tuple[str, ...]
    files: tuple[tuple[str, str], ...]  # (name in the doc, path: fixtures/... or corpus:...)
    view: Callable[[list[tuple[str, Ran]]], str]
    env: tuple[tuple[str, str], ...] = ()  # variables the doc sets for the commands


def shown(runs: list[tuple[str, Ran]]) -> str:
    """The command lines and their table output, as a terminal 100 columns wide shows them."""
    out = []
    for command, ran in runs:
        out += [f"$ fatbin-inspect {command}", ran.out.rstrip("\n").replace(__version__, "VERSION")]
    return "```\n" + "\n".join(out) + "\n```\n"


def _verdict(r: dict) -> str:
    chosen = (r.get("chosen") or {}).get("arch")
    if r["verdict"] in ("native", "jit"):
        return f"{r['verdict']} (`{chosen}`)" if chosen else r["verdict"]
    if r["verdict"] == "fail":
        return f"fail {r['error']['code']}" if r.get("error") else "fail"
    return r["verdict"]


def _notes(r: dict) -> str:
    notes = []
    device = r.get("device")  # the device code's own answer behind a host mismatch (issue 56 item 1)
    if isinstance(device, dict):
        notes.append(f"device code: {_verdict(device)} ({device.get('rule')})")
    if r.get("coverage") and r["coverage"] != "full":
        notes.append(f"coverage {r['coverage']}")
    if r.get("missing_kernels_count"):
        arch = (r.get("chosen") or {}).get("arch")
        notes.append(
            f"{r['missing_kernels_count']} kernels have no {arch} image (they exist for other archs)"
        )
    return "; ".join(notes)


def verdict_table(runs: list[tuple[str, Ran]]) -> str:
    """``check --format json`` results as a Markdown table: target, verdict, rule, notes."""
    rows = ["| target | verdict | rule | notes |", "|---|---|---|---|"]
    commands = []
    for command, ran in runs:
        doc = json.loads(ran.out_bytes)
        commands.append(f"`fatbin-inspect {command}`")
        for r in doc["results"]:
            t = doc["targets"][r["target"]]
            target = f"{t['gpu']}, driver {t['driver']}"
            rows.append(f"| {target} | {_verdict(r)} | {r['rule']} | {_notes(r)} |")
    return "\n".join(rows) + "\n\n" + "From " + ", ".join(commands) + ".\n"


def _json_lines(value: object, indent: str = "") -> str:
    """JSON with objects and lists opened one key or item a line, but a list of flat objects
    (hashes, properties) one object a line."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {_json_lines(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list) and value:
        flat = all(
            isinstance(v, dict) and not any(isinstance(x, (dict, list)) for x in v.values()) for v in value
        )
        items = [f"{inner}{json.dumps(v) if flat else _json_lines(v, inner)}" for v in value]
        return "[\n" + ",\n".join(items) + f"\n{indent}]"
    return json.dumps(value)


def sbom_excerpt(runs: list[tuple[str, Ran]]) -> str:
    """A package of a CycloneDX document and one of its files: the package's verdict on the
    target and every property of the file (docs/sbom.md)."""
    ((_command, ran),) = runs
    (pkg,) = json.loads(ran.out_bytes)["components"]
    out = {k: v for k, v in pkg.items() if k != "components"}
    out["properties"] = [
        p
        for p in pkg["properties"]
        if p["name"].startswith(("fatbin-inspect:reason:", "fatbin-inspect:verdict:"))
    ]
    out["components"] = [c for c in pkg["components"] if c["name"] == "torchvision/_C_stable.so"]
    return "```json\n" + _json_lines(out) + "\n```\n"


TORCH = ("libtorch_cuda.so", "corpus:x/torch/lib/libtorch_cuda.so")
TORCHVISION = "torchvision-0.29.1-cp311-cp311-manylinux_2_28_x86_64.whl"
CUBLASLT = ("libcublasLt.so.13", "corpus:x/nvidia/cu13/lib/libcublasLt.so.13")
T02 = ("fixtures/bin/t02_exe_sm75_sm80_sm90_c90", "fixtures/bin/t02_exe_sm75_sm80_sm90_c90")
BLOCKS: dict[str, Block] = {
    "quick-start": Block(
        ('check fixtures/bin/t02_exe_sm75_sm80_sm90_c90 --gpu "RTX 5090" --gpu H100 --driver 580',),
        (T02,),
        shown,
    ),
    "torch-check": Block(
        (
            'check libtorch_cuda.so --gpu "RTX 5090" --gpu GB10 --gpu B300 --gpu "GTX 1080" '
            '--gpu "Jetson AGX Orin" --driver 580 --format json',
            "check libtorch_cuda.so --gpu H100 --driver 570 --format json",
            "check libtorch_cuda.so --gpu T4 --driver 580 --kernels --format json",
        ),
        (TORCH,),
        verdict_table,
    ),
    "cublaslt-h100": Block(("check libcublasLt.so.13 --gpu H100 --driver 580",), (CUBLASLT,), shown),
    "sbom-torchvision": Block(
        (f"list {TORCHVISION} --gpu T4 --driver 470 --format cyclonedx",),
        ((TORCHVISION, f"corpus:{TORCHVISION}"),),
        sbom_excerpt,
        (("SOURCE_DATE_EPOCH", "1700000000"),),
    ),
}


def _quoted() -> dict[str, tuple[Path, str]]:
    """Every marked block of the docs: name -> (document, its text now)."""
    found: dict[str, tuple[Path, str]] = {}
    for doc in DOCS:
        for m in MARK.finditer(doc.read_text(encoding="utf-8")):
            assert m.group(1) not in found, f"{m.group(1)} is quoted twice"
            found[m.group(1)] = (doc, m.group(2))
    return found


def _source(path: str) -> str | None:
    """The file behind a block's name: a fixture, or a corpus file (None: not fetched)."""
    if path.startswith("corpus:"):
        p = os.path.join(CORPUS, path.split(":", 1)[1])
        return p if os.path.isfile(p) else None
    return os.path.join(ROOT, path)


def generate(name: str, folder: Path) -> str:
    """The text of block ``name``, its commands run in ``folder`` (the files linked in by name)."""
    block = BLOCKS[name]
    for shown_as, path in block.files:
        real = _source(path)
        if real is None:
            pytest.skip(f"{path} is not in .cache/corpus (scripts/fetch_corpus.sh)")
        link = folder / shown_as
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(real)
    env = {
        "COLUMNS": "100",
        "NO_COLOR": None,
        "FORCE_COLOR": None,
        "FATBIN_INSPECT_FORMAT": None,
        **dict(block.env),
    }
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        runs = [(c, cli(*shlex.split(c), "--color", "never", env=env, codes=(0, 1))) for c in block.commands]
    finally:
        os.chdir(cwd)
    return block.view(runs)


def test_every_quoted_block_has_its_commands_and_every_block_is_quoted():
    quoted = _quoted()
    assert set(quoted) == set(BLOCKS), set(quoted) ^ set(BLOCKS)


def _params() -> list:
    marks = {
        n: [pytest.mark.corpus] for n, b in BLOCKS.items() if any(p.startswith("corpus:") for _, p in b.files)
    }
    return [pytest.param(n, marks=marks.get(n, [])) for n in sorted(BLOCKS)]


@pytest.mark.parametrize("name", _params())
def test_quoted_output_is_the_output_now(name: str, tmp_path: Path) -> None:
    doc, text = _quoted()[name]
    want = generate(name, tmp_path)
    if UPDATE and want != text:
        body = doc.read_text(encoding="utf-8")
        start = f"<!-- output: {name} -->\n"
        head, rest = body.split(start, 1)
        doc.write_text(
            head + start + want + "<!-- /output -->" + rest.split("<!-- /output -->", 1)[1], encoding="utf-8"
        )
        text = want
    assert text == want, f"{doc.name}: block {name} differs from the output now (scripts/update_golden.sh)"


def test_bin_fixture_names_exist():
    """The fixtures the blocks name are in the repository."""
    for block in BLOCKS.values():
        for _, path in block.files:
            if not path.startswith("corpus:"):
                assert os.path.isfile(os.path.join(ROOT, path)), path
    assert os.path.isdir(BIN)
