"""``--format cyclonedx``: a ``judging.sbom.Sbom`` as a CycloneDX 1.6 JSON document (docs/sbom.md).

Written with cyclonedx-python-lib (the ``sbom`` extra), imported only here: its import is slow,
and no other format pays for it. One component per package (a ``pkg:pypi`` or
``pkg:conda`` purl) holding one nested ``file`` component per CUDA file; files no package claims
are top-level components. The CUDA facts are properties named ``fatbin-inspect:...``.

Names are input: a byte of a name that is not UTF-8 (a lone surrogate, ``surrogateescape``) is
U+FFFD in every string of the document, as in the other JSON formats (``escape.utf8``; the
purl's parts before ``packageurl`` encodes them, the rest in the written text, ``utf8_json``),
and a file whose path is not UTF-8 has its exact bytes in ``fatbin-inspect:path-bytes`` (hex),
as ``path_bytes`` in the JSON; control characters are JSON escapes (``\u001b``).

Reproducible: the same records give the same document. Every ``bom-ref`` is derived from a path
or purl, and the serial number is a UUID 5 of the document written without serial number and
timestamp; only ``metadata.timestamp`` changes between runs (the caller's, e.g. from
``SOURCE_DATE_EPOCH``; it does not enter the serial number).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone

from cyclonedx.model import HashAlgorithm, HashType, Property
from cyclonedx.model.bom import Bom, BomMetaData
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.model.tool import ToolRepository
from cyclonedx.output.json import JsonV1Dot6
from packageurl import PackageURL

from fatbin_inspect.formats.model import KIND_LTOIR, KIND_PTX, KIND_SASS, FileReport
from fatbin_inspect.inventory import member_path
from fatbin_inspect.judging.sbom import Sbom, SbomFile, SbomPackage
from fatbin_inspect.render.escape import hex_if_not_utf8, utf8, utf8_json
from fatbin_inspect.scanning.coverage import Verdict
from fatbin_inspect.version import __version__

NS = "fatbin-inspect:"  # the property namespace (docs/sbom.md lists every name)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_SERIAL_NAMESPACE = uuid.UUID("6c1e5b0e-4f0a-5a52-9d3c-2f6b3c1d7e11")  # fatbin-inspect's own, fixed


def _props(pairs: Iterable[tuple[str, str | None]]) -> list[Property]:
    return [Property(name=NS + k, value=v) for k, v in pairs if v not in (None, "")]


def _arch_list(report: FileReport, kind: str) -> str:
    arches = {(e.sm, e.variant, e.arch) for e in report.entries if e.kind == kind}
    return ",".join(a for _sm, _v, a in sorted(arches))


def _isa_list(report: FileReport) -> str:
    isas = {e.code_version for e in report.entries if e.kind == KIND_PTX}
    return ",".join(f"{a}.{b}" for a, b in sorted(isas))


def _verdict_props(labels: Sequence[str], verdicts: tuple[Verdict, ...]) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for label, v in zip(labels, verdicts):
        out.append((f"verdict:{label}", v.verdict))
        why = " ".join(x for x in (v.error, f"({v.rule})" if v.rule else None, v.reason) if x)
        if v.verdict != "native" and why:
            out.append((f"reason:{label}", why))
    return out


def _gate_props(f: SbomFile) -> list[tuple[str, str | None]]:
    def outcome(target: str | None) -> str:
        hits = [x for x in f.findings if x.target == target]
        return ", ".join(f"{x.rule_id} {x.severity}" for x in hits) or "pass"

    out: list[tuple[str, str | None]] = [("gate", outcome(None))] if f.findings or f.checked else []
    return out + [(f"gate:{t}", outcome(t)) for t in dict.fromkeys(f.checked)]


def _file_component(f: SbomFile, labels: Sequence[str], ref: str) -> Component:
    r = f.report
    rt = f.runtime
    pairs: list[tuple[str, str | None]] = [
        ("path", utf8(r.path)),
        ("path-bytes", hex_if_not_utf8(r.path)),
        ("format", r.format),
        ("fatbins", str(len(r.fatbins))),
        ("sass-archs", _arch_list(r, KIND_SASS)),
        ("ptx-archs", _arch_list(r, KIND_PTX)),
        ("ptx-isa", _isa_list(r)),
        ("ltoir-archs", _arch_list(r, KIND_LTOIR)),
        ("needs", ",".join(r.needs)),
        ("static-cudart", "true" if r.static_cudart else None),
        ("runtime", rt.version if rt else None),
        ("runtime-source", rt.source if rt else None),
        ("runtime-confidence", rt.confidence if rt else None),
    ]
    if r.error is not None:
        at = f" (at offset {r.error.offset:#x})" if r.error.offset is not None else ""
        pairs.append(("error", r.error.message + at))
    pairs += _verdict_props(labels, f.verdicts) + _gate_props(f)
    hashes = [HashType(alg=HashAlgorithm.SHA_256, content=r.sha256)] if r.sha256 else []
    return Component(
        type=ComponentType.FILE,
        name=utf8(member_path.split(r.path)[-1]),
        bom_ref=ref,
        hashes=hashes,
        properties=_props(pairs),
    )


def _purl(p: SbomPackage) -> PackageURL:
    """The package URL (its parts UTF-8: ``packageurl`` percent-encodes their UTF-8 bytes)."""
    qualifiers = {utf8(k): utf8(v) for k, v in p.qualifiers}
    return PackageURL(
        type=p.purl_type, name=utf8(p.name), version=utf8(p.version), qualifiers=qualifiers or None
    )


def _package_component(p: SbomPackage, labels: Sequence[str], files: list[Component]) -> Component:
    purl = _purl(p)
    declared = next((f.report.package.cuda for f in p.files if f.report.package is not None), None)
    pairs = [("declared-cuda", declared), *_verdict_props(labels, p.verdicts)]
    return Component(
        type=ComponentType.LIBRARY,
        name=utf8(p.name),
        version=utf8(p.version),
        purl=purl,
        bom_ref=purl.to_string(),
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=p.sha256)] if p.sha256 else [],
        properties=_props(pairs),
        components=files,
    )


def _bom(sbom: Sbom, serial: uuid.UUID, timestamp: datetime) -> Bom:
    refs: set[str] = set()

    def ref_of(path: str) -> str:
        ref = base = "file:" + utf8(path)
        n = 1
        while ref in refs:  # two paths alike but for bytes that are not UTF-8
            n += 1
            ref = f"{base}#{n}"
        refs.add(ref)
        return ref

    labels = sbom.targets
    components = [
        _package_component(p, labels, [_file_component(f, labels, ref_of(f.report.path)) for f in p.files])
        for p in sbom.packages
    ]
    components += [_file_component(f, labels, ref_of(f.report.path)) for f in sbom.files]
    tool = Component(type=ComponentType.APPLICATION, name="fatbin-inspect", version=__version__)
    meta_props = [("command", sbom.command), ("gate", sbom.outcome)] + [("target", t) for t in labels]
    metadata = BomMetaData(
        tools=ToolRepository(components=[tool]), timestamp=timestamp, properties=_props(meta_props)
    )
    return Bom(components=components, metadata=metadata, serial_number=serial)


def render(sbom: Sbom, timestamp: datetime | None = None) -> str:
    """The document (``timestamp``: ``metadata.timestamp``; None: now, UTC)."""
    neutral = JsonV1Dot6(_bom(sbom, uuid.UUID(int=0), _EPOCH)).output_as_string(indent=2)
    serial = uuid.uuid5(_SERIAL_NAMESPACE, hashlib.sha256(neutral.encode()).hexdigest())
    when = timestamp or datetime.now(timezone.utc)
    return utf8_json(JsonV1Dot6(_bom(sbom, serial, when)).output_as_string(indent=2)) + "\n"
