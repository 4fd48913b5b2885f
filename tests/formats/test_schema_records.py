"""The schemas in fatbin_inspect/schemas/ against the records they describe (issue 21 step 5).

Each JSON document the commands write over the fixtures is walked beside its schema. Every key
of every object is a property of the schema there (nothing is written that the schema does not
name); where an object is the image of a record (``RECORDS``), every field of the record the
JSON carries has a schema type compatible with the field's annotation, and every property the
schema names has a source: a field or property of the record, or a key the renderer computes.
So a new field is one edit to the record plus the schema, and the test fails until both are made.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from importlib import resources

import pytest
from conftest import cli, fixture_path

from fatbin_inspect.compat.jit import JitCost
from fatbin_inspect.compat.verdict import (
    Chosen,
    EntryVerdict,
    ErrorRef,
    FatbinGroup,
    FatbinVerdict,
    FileVerdict,
)
from fatbin_inspect.formats.model import CubinInfo, Entry, Fatbin, FileError, FileReport, Kernel, Package
from fatbin_inspect.formats.records import as_dict, field_names
from fatbin_inspect.system.diagnose import Condition, JitCache
from fatbin_inspect.system.stack import Stack

# the documents: schema -> command lines, over fixtures that give native, jit and fail verdicts
# (EXTRA: a folder with a conda package and an unreadable file, made by ``_extra``)
EXTRA = "{extra}"
DOCUMENTS = {
    "inventory": [
        ["list", fixture_path("units"), fixture_path("compat"), EXTRA, "--kernels", "--format", "json"],
    ],
    "check": [
        [
            "check",
            fixture_path("units"),
            fixture_path("bin"),
            *("--gpu", "H100", "--gpu", "6.1", "--gpu", "RTX 4090", "--driver", "535"),
            *("--per-fatbin", "--format", "json"),
        ],
        # R-HOST's device answer: the x86_64 fixtures on GB10's aarch64 host
        ["check", fixture_path("units"), "--gpu", "GB10", "--driver", "580", "--format", "json"],
    ],
    "scan": [
        ["scan", fixture_path("units"), "--no-cache", "--gpu", "H100", "--gpu", "7.5", "--format", "json"]
    ],
    "gate": [["gate", fixture_path("units"), "--require", "sm_80,sm_90", "--format", "json"]],
    "doctor": [["doctor", "--format", "json"]],
}

# (schema, where: keys from the document's root, [] for the items of an array) -> the record
# whose image the JSON object is there
RECORDS = {
    ("inventory", "files[]"): FileReport,
    ("inventory", "files[].error"): FileError,
    ("inventory", "files[].package"): Package,
    ("inventory", "files[].fatbins[]"): Fatbin,
    ("inventory", "files[].fatbins[].entries[]"): Entry,
    ("inventory", "files[].fatbins[].entries[].cubin"): CubinInfo,
    ("inventory", "files[].fatbins[].entries[].kernels[]"): Kernel,
    ("check", "results[]"): FileVerdict,
    ("check", "results[].error"): ErrorRef,
    ("check", "results[].chosen"): Chosen,
    ("check", "results[].jit"): JitCost,
    ("check", "results[].specialised"): FatbinGroup,
    ("check", "results[].gaps"): FatbinGroup,
    ("check", "results[].device"): FileVerdict,  # R-HOST's device answer (GB10: x86_64 fixtures)
    ("check", "results[].device.error"): ErrorRef,
    ("check", "results[].device.chosen"): Chosen,
    ("check", "results[].device.specialised"): FatbinGroup,
    ("check", "results[].device.gaps"): FatbinGroup,
    ("check", "results[].fatbin_verdicts[]"): FatbinVerdict,
    ("check", "results[].fatbin_verdicts[].entries[]"): EntryVerdict,
    ("doctor", "stack"): Stack,
    ("doctor", "conditions[]"): Condition,
    ("doctor", "jit_cache"): JitCache,
}


def _schema(name: str) -> dict:
    return json.loads(resources.files("fatbin_inspect").joinpath(f"schemas/{name}.schema.json").read_text())


def _resolve(root: dict, node: dict) -> dict:
    while "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        node = root
        for part in ref[2:].split("/"):
            node = node[part]
    return node


def _alternatives(root: dict, node: dict) -> list[dict]:
    node = _resolve(root, node)
    alts = node.get("oneOf") or node.get("anyOf")
    if not alts:
        return [node]
    return [a for alt in alts for a in _alternatives(root, alt)]


_JSON_OF = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}


def _json_type(v) -> str:
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    return _JSON_OF[type(v)]


def _schema_types(root: dict, node: dict) -> set[str] | None:
    """The JSON types a schema node accepts; None: any."""
    out: set[str] = set()
    for alt in _alternatives(root, node):
        if "type" in alt:
            t = alt["type"]
            out |= {t} if isinstance(t, str) else set(t)
        elif "const" in alt:
            out.add(_json_type(alt["const"]))
        elif "enum" in alt:
            out |= {_json_type(v) for v in alt["enum"]}
        elif "properties" in alt:
            out.add("object")
        else:
            return None
    if "number" in out:
        out.add("integer")
    return out


def _annotation_types(hint) -> set[str]:
    """The JSON types a Python annotation gives when written as is."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_annotation_types(a) for a in typing.get_args(hint)))
    base = origin or hint
    if base in _JSON_OF:
        return {_JSON_OF[base]}
    if base in (tuple, list, frozenset, set):
        return {"array"}
    if base is dict or dataclasses.is_dataclass(base):
        return {"object"}
    return {"object", "array", "string", "integer", "number", "boolean", "null"}  # not a JSON shape


def _extra(folder) -> str:
    """A conda package holding a fixture library (``package``) and a cut ELF file (``error``)."""
    from builders import conda_index, conda_package

    lib = open(fixture_path("units", "f1_full.so"), "rb").read()
    index = conda_index("cuthing", "1.0", "cuda126_0", ["cuda-version >=12.6,<13"])
    (folder / "cuthing-1.0-cuda126_0.conda").write_bytes(conda_package(index, [("lib/libcuthing.so", lib)]))
    (folder / "cut.so").write_bytes(lib[:200])
    return str(folder)


def _documents(name: str, extra: str) -> list[dict]:
    out = []
    for args in DOCUMENTS[name]:
        args = [extra if a == EXTRA else a for a in args]
        out.append(cli(*args, codes=(0, 1, 3, 4)).json())  # 4: doctor without a GPU
    return out


def _walk(root: dict, node: dict, value, where: str, seen: dict, problems: list) -> None:
    """Record every object at ``where`` (its keys and values) and check its keys are properties."""
    if isinstance(value, list):
        for alt in _alternatives(root, node):
            if "items" in alt:
                for item in value:
                    _walk(root, alt["items"], item, f"{where}[]", seen, problems)
        return
    if not isinstance(value, dict):
        return
    objects = [a for a in _alternatives(root, node) if "properties" in a or "additionalProperties" in a]
    if not objects:
        return
    props = {k: v for a in objects for k, v in a.get("properties", {}).items()}
    extra = next(
        (a["additionalProperties"] for a in objects if isinstance(a.get("additionalProperties"), dict)), None
    )
    entry = seen.setdefault(where, {"props": props, "values": {}})
    for key, v in value.items():
        entry["values"].setdefault(key, []).append(v)
        sub = props.get(key, extra)
        if sub is None:
            if props:
                problems.append(f"{where}: key {key!r} is written but not in the schema")
            continue
        _walk(root, sub, v, f"{where}.{key}" if where else key, seen, problems)


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    extra = _extra(tmp_path_factory.mktemp("extra"))
    out = {}
    for name in DOCUMENTS:
        root, seen, problems = _schema(name), {}, []
        for doc in _documents(name, extra):
            _walk(root, root, doc, "", seen, problems)
        out[name] = (root, seen, problems)
    return out


@pytest.mark.slow  # the documents: about 4 s on 2 busy cores
@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_every_key_written_is_in_the_schema(walked, name):
    _root, _seen, problems = walked[name]
    assert not problems, "\n".join(sorted(set(problems)))


@pytest.mark.slow
@pytest.mark.parametrize(("name", "where"), sorted(RECORDS))
def test_record_fields_and_schema_properties_agree(walked, name, where):
    root, seen, _ = walked[name]
    cls = RECORDS[name, where]
    assert where in seen, f"the documents have no {where} object: add a fixture that writes one"
    props, values = seen[where]["props"], seen[where]["values"]
    hints = typing.get_type_hints(cls)
    fields = field_names(cls)
    problems = []
    for key in set(values) & set(fields):
        if key not in props:
            continue  # told by test_every_key_written_is_in_the_schema
        want = _schema_types(root, props[key])
        written = {_json_type(v) for v in values[key]}
        ann = _annotation_types(hints[key])
        straight = written <= ann  # written as the field is (else converted: a record, a count)
        ann = ann - {"null"} | (written & {"null"})  # None left out (kernels' resources) needs no null
        if want is not None and not (ann if straight else written) <= want:
            problems.append(
                f"{where}.{key}: {cls.__name__}.{key} is {hints[key]}, the schema says {sorted(want)}"
            )
    sources = set(fields) | set(values) | {n for n, _ in typing.get_type_hints(cls).items()}
    sources |= {n for n in dir(cls) if isinstance(getattr(cls, n, None), property)}
    problems += [
        f"{where}: schema property {p!r} has no source in {cls.__name__}" for p in props if p not in sources
    ]
    assert not problems, "\n".join(sorted(set(problems)))


def test_a_new_field_is_written_without_another_edit():
    """``as_dict`` follows the declaration: a field added to a record appears in its JSON."""

    @dataclasses.dataclass(frozen=True)
    class Before:
        a: int
        b: tuple[str, ...] = ()

    @dataclasses.dataclass(frozen=True)
    class After:
        a: int
        b: tuple[str, ...] = ()
        c: str | None = None

    assert as_dict(Before(1, ("x",))) == {"a": 1, "b": ["x"]}
    assert list(as_dict(After(1, ("x",), "y"))) == ["a", "b", "c"]
    assert list(as_dict(After(1), lead=("c",), omit=("b",), extra={"d": 2})) == ["c", "a", "d"]
    assert as_dict(EntryVerdict(16, "sm_90", "native", "R-SASS-1", "ok", None))["offset"] == 16
