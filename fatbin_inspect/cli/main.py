"""Entry point: ``fatbin-inspect PATH...`` lists; subcommands do the rest.

Exit codes: 0 clean, 1 findings at or above the fail level, 2 usage or internal error,
3 unreadable inputs under ``--strict``.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

import click

from fatbin_inspect.cli.common import say
from fatbin_inspect.cli.options import adopt, gather_targets
from fatbin_inspect.errors import DeviceError, FatbinInspectError, UsageError
from fatbin_inspect.render.escape import shown
from fatbin_inspect.version import __version__

COMMANDS = {
    "list": "fatbin_inspect.cli.list:list_cmd",
    "extract": "fatbin_inspect.cli.extract:extract_cmd",
    "check": "fatbin_inspect.cli.check:check_cmd",
    "explain": "fatbin_inspect.cli.explain:explain_cmd",
    "gpus": "fatbin_inspect.cli.gpus:gpus_cmd",
    "scan": "fatbin_inspect.cli.scan:scan_cmd",
    "gate": "fatbin_inspect.cli.gate:gate_cmd",
    "diff": "fatbin_inspect.cli.diff:diff_cmd",
    "releases": "fatbin_inspect.cli.releases:releases_cmd",
    "doctor": "fatbin_inspect.cli.doctor:doctor_cmd",
    "verify": "fatbin_inspect.cli.verify:verify_cmd",
}


class DefaultGroup(click.Group):
    """A group whose first argument, when not a command name, is a path for ``list``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        import importlib.util

        return sorted(n for n, t in COMMANDS.items() if importlib.util.find_spec(t.split(":")[0]))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        mod, attr = target.split(":")
        return adopt(getattr(__import__(mod, fromlist=[attr]), attr))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        lead = 0
        while lead < len(args) and args[lead] == "--debug":  # group flags before a bare PATH
            lead += 1
        rest = args[lead:]
        if rest and rest[0] not in COMMANDS and rest[0] not in ("--help", "-h", "--version"):
            if not ctx.resilient_parsing:  # (shell completion parses half-typed words)
                _no_such_command(rest[0])
            args = [*list(args[:lead]), "list", *list(rest)]
        return super().parse_args(ctx, gather_targets(args))


def _no_such_command(word: str) -> None:
    """``fatbin-inspect chekc x``: a word that is neither a path nor a command, but looks like one."""
    if word.startswith("-") or os.path.lexists(word):
        return
    import difflib  # (not for the path it mostly is)

    close = difflib.get_close_matches(word, list(COMMANDS), n=1, cutoff=0.6)
    if close:
        raise click.UsageError(f"no such command or path {word!r}; did you mean {close[0]!r}?")


# every option of every command also reads FATBIN_INSPECT_<COMMAND>_<OPTION> (e.g.
# FATBIN_INSPECT_LIST_KERNELS=1); the shared ones read FATBIN_INSPECT_<OPTION> (FORMAT, OUTPUT, ...)
@click.group(
    cls=DefaultGroup,
    context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "FATBIN_INSPECT"},
)
@click.version_option(__version__, prog_name="fatbin-inspect")
@click.option(
    "--debug",
    is_flag=True,
    envvar="FATBIN_INSPECT_DEBUG",
    help="On an internal error, print the full traceback.",
)
def cli(debug: bool) -> None:
    """Will the CUDA code inside these binaries run on that GPU with that driver?

    \b
    fatbin-inspect PATH...            list every fat binary and entry
    fatbin-inspect check PATH --gpu   predict native / JIT / fail (209, 222, 35)
    fatbin-inspect scan [ENV]         per-distribution coverage of an environment
    """
    if debug:
        os.environ["FATBIN_INSPECT_DEBUG"] = "1"


def main(argv: Sequence[str] | None = None) -> None:
    # A run allocates up to a few hundred thousand small, acyclic, long-lived records (kernels);
    # the default thresholds would walk them in generation 2 again and again (~15% of a
    # `--kernels` run). Reference counting still frees everything; cycles wait a little longer.
    gc.set_threshold(100_000, 50, 100)
    _hold_standard_streams()
    try:
        if os.environ.get("_FATBIN_INSPECT_COMPLETE"):  # a shell asks for completions
            from fatbin_inspect.cli.completion import check_environment

            check_environment(os.environ)
        cli.main(args=argv, prog_name="fatbin-inspect", standalone_mode=False)
    except SystemExit:
        raise
    except click.exceptions.Abort:  # click's own Ctrl-C at a prompt
        say("interrupted")
        sys.exit(130)
    except click.exceptions.NoArgsIsHelpError as exc:  # bare ``fatbin-inspect``: our own help,
        exc.show()  # not input, so printed as written (the escaping below would flatten its lines)
        sys.exit(2)
    except click.ClickException as exc:
        # click >= 8.5 declares ``message`` Final for type checkers; it is still a plain instance
        # attribute, rewritten here so that input text reaches stderr escaped.
        vars(exc)["message"] = shown(exc.message)
        exc.show()
        sys.exit(2)
    except FatbinInspectError as exc:  # one line; a DeviceError carries its own exit code (4)
        say(str(exc))
        sys.exit(getattr(exc, "exit_code", 2) if isinstance(exc, (UsageError, DeviceError)) else 2)
    except BrokenPipeError:
        sys.exit(0)
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
    except Exception as exc:  # never a bare traceback for a user
        _internal_error(exc)
    sys.exit(0)


def _hold_standard_streams() -> None:
    """A standard descriptor closed at start (``cmd <&-``, ``>&-``) gets /dev/null, so no file the
    run opens (the scan cache's database, an input) takes its number and is read as standard
    input or written with the report; a closed standard input makes ``-`` an error
    (``walk.close_stdin``)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
        if null != fd:  # (a lower descriptor was closed too and took it: it is filled in turn)
            os.dup2(null, fd)
            os.close(null)
        if fd == 0:
            from fatbin_inspect.inventory.stdin import close_stdin

            close_stdin()
        else:
            setattr(sys, ("stdout", "stderr")[fd - 1], open(fd, "w", closefd=False))


def _internal_error(exc: Exception) -> NoReturn:
    say(f"internal error: {type(exc).__name__}: {exc}")
    if os.environ.get("FATBIN_INSPECT_DEBUG"):
        import traceback  # here: an import no run without an internal error pays

        traceback.print_exc()
        click.echo(
            "Please report this with the command line and, if you can, the input file: "
            "https://github.com/fatbin-inspect/fatbin-inspect/issues",
            err=True,
        )
    else:
        click.echo("fatbin-inspect: rerun with --debug for the full traceback", err=True)
    sys.exit(2)


def console_main() -> None:
    """The installed command. Once the report is written and flushed, leave without the
    interpreter's teardown, which would free hundreds of thousands of records one by one
    (after ``libtorch_cuda.so --kernels``). Library callers and tests use ``main``."""
    try:
        main()
        code = 0
    except SystemExit as exc:
        if isinstance(exc.code, str):
            sys.stderr.write(exc.code + "\n")
            code = 1
        else:
            code = exc.code or 0
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            stream.flush()
    os._exit(code)
