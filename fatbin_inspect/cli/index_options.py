"""The options of commands that take packages on an index (``pkg:pypi/...``) as inputs:
``-r/--requirement FILE`` (repeatable: a requirements file or ``pylock.toml``), pip's
``--index-url``, ``--extra-index-url``, ``--find-links``, ``--no-index``, and the target's
``--python X.Y`` and ``--platform TAG`` (pip's, for the file choice). Consumed here: the command
sees the requirement files among its paths (``-r:FILE``) and reads through the index set up."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

_REQUIREMENT = click.option(
    "-r",
    "--requirement",
    "requirement_files",
    multiple=True,
    metavar="FILE",
    help="Judge the packages a requirements file or pylock.toml pins, from the index (repeatable).",
)


def index_options(platform_flag: str = "--platform", requirements: bool = True) -> Callable[[Any], Any]:
    """Decorate a command whose inputs are the argument ``paths`` (``requirements``: it takes
    ``-r FILE`` among them)."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def run(*args: Any, **kw: Any) -> Any:
            from fatbin_inspect.containers.index import REQUIREMENT_PREFIX, is_purl

            reqs = kw.pop("requirement_files", ())
            index = (kw.pop("index_url"), tuple(kw.pop("extra_index_urls")), tuple(kw.pop("find_links")))
            no_index = kw.pop("no_index")
            python, platforms = kw.pop("index_python"), tuple(kw.pop("index_platforms"))
            if python is not None and not _python_ok(python):
                raise click.BadParameter(f"{python!r}: expected X.Y, e.g. 3.11", param_hint="--python")
            if "paths" in kw and not reqs and not any(is_purl(p) for p in kw["paths"]):
                return f(*args, **kw)  # no package among the inputs: pip's configuration unread
            from fatbin_inspect.containers.index import config

            overrides = config.Overrides(*index, no_index)
            from fatbin_inspect.judging import index_inputs

            bar = _bar()
            source = index_inputs.IndexSource(
                config.resolve(overrides),
                python,
                overrides=overrides,
                platforms=platforms,
                no_cache=bool(kw.get("no_cache")),  # the command's own --no-cache (gate)
                progress=bar,
            )
            index_inputs.use(source)
            if reqs:
                kw["paths"] = (*kw["paths"], *(REQUIREMENT_PREFIX + r for r in reqs))
            try:
                return f(*args, **kw)
            finally:
                if bar is not None:
                    bar.close()

        specs = [
            *([_REQUIREMENT] if requirements else []),
            click.option(
                "--index-url",
                default=None,
                metavar="URL",
                help="Packages: the index (as pip's; default: pip's configuration).",
            ),
            click.option(
                "--extra-index-url",
                "extra_index_urls",
                multiple=True,
                metavar="URL",
                help="Packages: another index (repeatable).",
            ),
            click.option(
                "--find-links",
                "find_links",
                multiple=True,
                metavar="URL|DIR",
                help="Packages: a page or folder of files (repeatable).",
            ),
            click.option(
                "--no-index", is_flag=True, help="Packages: ignore the indexes, use --find-links only."
            ),
            click.option(
                "--python",
                "index_python",
                default=None,
                metavar="X.Y",
                help="Packages from an index: the target's Python (default: this interpreter's).",
            ),
            click.option(
                platform_flag,
                "index_platforms",
                multiple=True,
                metavar="TAG",
                help="Packages from an index: a wheel platform tag of the target (pip's --platform; repeatable).",
            ),
        ]
        for spec in reversed(specs):
            run = spec(run)
        return run

    return decorate


def _bar() -> Any:
    """The download bar (``cli.progress.Transfer``: on a terminal only), None with -q or
    --no-progress."""
    from fatbin_inspect.cli.options import settings

    ui = settings()
    if ui["quiet"] or not ui["progress"]:
        return None
    from fatbin_inspect.cli.progress import Transfer

    return Transfer("fetching wheel")


def _python_ok(text: str) -> bool:
    parts = text.split(".")
    return len(parts) == 2 and all(p.isdigit() for p in parts)
