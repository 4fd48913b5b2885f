"""The view registry (issue 21 step 4): ``render.VIEWS`` is the one table the commands ask for
their renderer; every entry resolves, the views of one command take the same arguments, and
each is a ``--format`` choice of its command (findings formats stay with ``render.findings``)."""

import inspect

import click
import pytest

from fatbin_inspect import render
from fatbin_inspect.cli.main import cli
from fatbin_inspect.render.findings import FORMATS

VIEW_NAMES = {"long"}  # views chosen by an option (check --long), not by --format


def _choices(command: str) -> list[str]:
    cmd = cli.get_command(click.Context(cli), command)
    opt = next(p for p in cmd.params if isinstance(p, click.Option) and "--format" in p.opts)
    return list(opt.type.choices)


@pytest.mark.parametrize("command", sorted(render.VIEWS))
def test_every_view_resolves_and_is_a_format_choice(command):
    for fmt in render.VIEWS[command]:
        assert callable(render.view(command, fmt)), (command, fmt)
        assert render.has_view(command, fmt)
        if fmt not in VIEW_NAMES:
            assert fmt in _choices(command), (command, fmt)


@pytest.mark.parametrize("command", sorted(c for c, v in render.VIEWS.items() if len(v) > 1))
def test_views_of_one_command_take_the_same_arguments(command):
    params = {
        fmt: [p for p in inspect.signature(render.view(command, fmt)).parameters]
        for fmt in render.VIEWS[command]
    }
    first = next(iter(params.values()))
    for fmt, names in params.items():
        assert sorted(names) == sorted(first), (command, fmt, names, first)
        assert names[:2] == first[:2], "the records come first, in the same order"


def test_findings_formats_are_not_views():
    for fmt in FORMATS:
        assert not render.has_view("gate", fmt)
        with pytest.raises(ValueError, match="findings formats"):
            render.view("gate", fmt)
    for fmt in set(FORMATS) - set(render.VIEWS["diff"]) - {"table"}:
        assert not render.has_view("diff", fmt)  # diff's sarif, junit, ... are findings


def test_gpus_json_view_is_the_document(tmp_path):
    import json

    from fatbin_inspect.compat import data
    from fatbin_inspect.compat.targets import search_gpus

    rows = search_gpus("H100")
    doc = json.loads(render.view("gpus", "json")(rows))
    assert doc["as_of"] == data.load("gpus")["as_of"]
    assert [g["name"] for g in doc["gpus"]] == [r["name"] for r in rows]
