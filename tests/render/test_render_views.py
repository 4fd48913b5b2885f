"""The view table (issue 52 step 3): ``render.VIEWS`` is the one place a command's outputs are
declared. Every ``--format`` choice of every command is a view of the table (and the other way
round), its writer resolves, and each renders: through the command over a fixture, or (``verify``,
which needs a GPU to get that far) from empty records."""

from __future__ import annotations

import contextlib
import inspect
import io
from collections.abc import Iterable, Iterator
from typing import IO

import click
import pytest
from conftest import cli, fixture_path

from fatbin_inspect import render
from fatbin_inspect.cli.main import COMMANDS
from fatbin_inspect.cli.main import cli as group
from fatbin_inspect.render.findings import FORMATS
from fatbin_inspect.render.sink import Look
from fatbin_inspect.render.views import load

ONE, TWO = fixture_path("bin", "t02_exe_sm75_sm80_sm90_c90"), fixture_path("bin", "t01_exe_sm80")


def _choices(command: str) -> list[str]:
    cmd = group.get_command(click.Context(group), command)
    opt = next(p for p in cmd.params if isinstance(p, click.Option) and "--format" in p.opts)
    return list(opt.type.choices)


def _pairs() -> list[tuple[str, str]]:
    return [(c, f) for c in sorted(COMMANDS) for f in _choices(c)]


def test_every_command_takes_its_formats_from_the_table():
    assert set(render.VIEWS) == set(COMMANDS)
    for command in COMMANDS:
        assert tuple(_choices(command)) == render.formats(command), command


@pytest.mark.parametrize(("command", "fmt"), _pairs())
def test_every_format_choice_resolves_to_a_view(command, fmt):
    view = render.view(command, fmt)
    assert (view.command, view.name) == (command, fmt)
    assert callable(load(view.writer))
    assert view.kind in ("own", "text", "findings")
    if view.needs.encoder is not None:  # run by the scan's workers: module-level, with its parts
        assert callable(view.needs.encoder) and callable(view.needs.encoder_parts)


@pytest.mark.parametrize("command", sorted(c for c, v in render.VIEWS.items() if len(v) > 1))
def test_text_views_of_one_command_take_the_same_arguments(command):
    params = {
        fmt: list(inspect.signature(load(v.writer)).parameters)
        for fmt, v in render.VIEWS[command].items()
        if v.kind == "text"
    }
    for fmt, names in params.items():
        first = next(iter(params.values()))
        assert sorted(names) == sorted(first), (command, fmt, names, first)


def test_findings_formats_are_findings_views_where_the_command_draws_none():
    for fmt in FORMATS:
        assert render.view("gate", fmt).kind == "findings"
    assert {f for f, v in render.VIEWS["diff"].items() if v.kind != "findings"} == {
        "table",
        "json",
        "markdown",
    }
    assert {f for f, v in render.VIEWS["check"].items() if v.kind != "findings"} == {"table", "json"}
    assert render.view("check", "html").needs.kept and not render.view("check", "sarif").needs.kept


def test_what_a_view_needs_is_declared_not_decided_by_the_command():
    assert render.view("scan", "cyclonedx").needs.digests and render.view("list", "cyclonedx").needs.digests
    assert not any(v.needs.digests for c in render.VIEWS.values() for f, v in c.items() if f != "cyclonedx")
    assert not render.view("scan", "table").needs.records and render.view("scan", "html").needs.records
    assert render.view("list", "json").needs.streamed and not render.view("list", "table").needs.streamed
    shown = {(c, f) for c, views in render.VIEWS.items() for f, v in views.items() if v.needs.progress}
    assert shown == {(c, f) for c in ("list", "check", "scan", "gate", "diff") for f in ("table", "html")} & {
        (c, f) for c in render.VIEWS for f in render.VIEWS[c]
    }, "progress: tables and the HTML report of the commands that read inputs (README, Output)"


def _argv(command: str, tmp_path) -> list:
    """A run of ``command`` over the fixtures that reaches its view."""
    return {
        "list": [ONE, "--gpu", "H100"],
        "check": [ONE, TWO, "--gpu", "H100"],
        "scan": [ONE, "--gpu", "H100", "--no-cache", "-j", "1"],
        "gate": [ONE, "--require", "sm_80,sm_100"],  # (a finding: github writes only those)
        "diff": [ONE, TWO],
        "doctor": ["--no-torch-archs"],
        "gpus": ["H100"],
        "explain": ["209"],
        "extract": [ONE, "-d", tmp_path / "out"],
    }[command]


# verify needs a GPU and releases a package index to reach their views: drawn from records below
@pytest.mark.parametrize(("command", "fmt"), [p for p in _pairs() if p[0] not in ("verify", "releases")])
def test_every_view_renders_through_its_command(command, fmt, tmp_path):
    ran = cli(command, *_argv(command, tmp_path), "--format", fmt, "-o", tmp_path / "report")
    assert ran.code in (0, 1, 4), ran.err  # (doctor: 4 on a machine without a GPU; 1: findings)
    assert (tmp_path / "report").stat().st_size > 0


class _Sink:
    def __init__(self) -> None:
        self.out = io.BytesIO()

    look = Look(False, None)

    def text(self, text: str) -> None:
        self.out.write(text.encode())

    @contextlib.contextmanager
    def stream(self) -> Iterator[IO[bytes]]:
        yield self.out

    def refuse(self, paths: Iterable[str]) -> None:
        pass

    def summary(self, text: str) -> None:
        pass


@pytest.mark.parametrize("fmt", render.formats("verify"))
def test_verify_views_render_without_a_gpu(fmt):
    sink = _Sink()
    run = {"target": "no prediction", "checks": [], "findings": [], "images": True, "files": []}
    render.view("verify", fmt).write(run, sink)
    assert sink.out.getvalue()


@pytest.mark.parametrize("fmt", render.formats("releases"))
def test_releases_views_render_without_an_index(fmt):
    from fatbin_inspect.compat.targets import resolve_targets
    from fatbin_inspect.judging.releases import ReleasesReport

    (target,) = resolve_targets(["H100"], "550")
    sink = _Sink()
    render.view("releases", fmt).write(
        {"report": ReleasesReport("torch", (target,), (), (None,), (None,))}, sink
    )
    assert sink.out.getvalue()


def test_gpus_json_view_is_the_document():
    import json

    from fatbin_inspect.compat import data
    from fatbin_inspect.compat.targets import search_gpus

    rows = search_gpus("H100")
    sink = _Sink()
    render.view("gpus", "json").write({"rows": rows}, sink)
    doc = json.loads(sink.out.getvalue())
    assert doc["as_of"] == data.load("gpus")["as_of"]
    assert [g["name"] for g in doc["gpus"]] == [r["name"] for r in rows]


def test_no_command_branches_on_its_format():
    """``--format`` reaches a command only to pick its view: no ``fmt == ...`` / ``fmt in ...``."""
    import ast
    import pathlib

    import fatbin_inspect.cli

    found = []
    for path in sorted(pathlib.Path(fatbin_inspect.cli.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                names = {n.id for n in (node.left, *node.comparators) if isinstance(n, ast.Name)}
                if "fmt" in names:
                    found.append(f"{path.name}:{node.lineno}")
    assert not found
