"""The option vocabulary every command shares, and how options read the environment.

Names mean the same in every command: ``--format table|json|…``, ``-o/--output FILE`` (the
report), ``--fail-on error|warning|never`` and ``--exit-zero`` (every command that can exit 1),
``--gpu`` (repeatable, or comma-separated) and ``--driver``, ``-q/--quiet``, ``-v/--verbose``,
``--color auto|always|never``, ``--no-progress``. ``--kernels`` always means "every kernel in
the output, unbounded"; ``--strict`` "an unreadable input makes the exit code 3".

Environment (``EnvOption``, given to every option of every command by ``adopt``):

- ``FATBIN_INSPECT_<COMMAND>_<OPTION>`` sets any option of one command (``FATBIN_INSPECT_LIST_ENTRIES
  =summary``, ``FATBIN_INSPECT_SCAN_FORMAT=json``); a value the option refuses is an error naming
  the variable;
- the shared names (an option's ``envvar``: ``FATBIN_INSPECT_FORMAT``, ``_OUTPUT``, ``_FAIL_ON``,
  ``_EXIT_ZERO``, ``_COLOR``, gate's policy options...) are read after it. A shared value that
  this command does not take but another does (``FATBIN_INSPECT_FORMAT=sarif`` for ``scan``) is
  skipped with a note, so one CI job can set it for ``gate`` and still run ``scan``; a value no
  command takes is an error naming the variable.

Repeatable options read comma-separated lists from the environment (``FATBIN_INSPECT_GPU=H100,RTX
5090``: GPU names hold blanks).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

F = TypeVar("F", bound=Callable[..., Any])  # a command function or click.Command being decorated

ENV_PREFIX = "FATBIN_INSPECT"
UI = "fatbin_inspect.ui"  # ctx.meta key: the settings of -q/-v/--color/--no-progress
FAIL_LEVELS = ("error", "warning", "never")

if os.environ.get("_FATBIN_INSPECT_COMPLETE"):  # a shell asks for completions: values quoted for it
    from fatbin_inspect.cli.completion import register

    register()


def long_name(opt: click.Option) -> str:
    """The first ``--long`` spelling without dashes: ``fail-on`` (``-o`` alone: ``o``)."""
    longs = [o for o in opt.opts if o.startswith("--")]
    return (longs[0] if longs else opt.opts[0]).lstrip("-")


def env_name(prefix: str, opt: click.Option) -> str:
    return f"{prefix}_{long_name(opt).upper().replace('-', '_')}"


def did_you_mean(value: object, choices: Sequence[object]) -> str:
    """``"; did you mean 'sarif'?"`` for the closest of ``choices`` (difflib, as click's own
    suggestion for a mistyped option name), or ``""``."""
    import difflib  # here: only a mistyped value pays for it

    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class Choice(click.Choice):
    """A ``click.Choice`` that also takes hidden old spellings (``explain --format text``)."""

    def __init__(self, choices: Sequence[str], aliases: dict[str, str] | None = None):
        super().__init__(list(choices))
        self.aliases = dict(aliases or {})

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value in self.aliases:
            value = self.aliases[value]
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            exc.message = exc.message.rstrip(".") + did_you_mean(value, self.choices)
            raise

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        return [CompletionItem(c) for c in self.choices if str(c).startswith(incomplete)]


class EnvOption(click.Option):
    """An option that reads its command's variable, then its shared one (module docstring)."""

    def env_candidates(self, ctx: click.Context) -> list[tuple[str, bool]]:
        """(variable, shared?) in the order they are read."""
        out: list[tuple[str, bool]] = []
        if ctx.auto_envvar_prefix and ctx.auto_envvar_prefix != ENV_PREFIX:
            out.append((env_name(ctx.auto_envvar_prefix, self), False))
        envvar = self.envvar
        shared: list[str] = (
            [str(v) for v in envvar] if isinstance(envvar, (list, tuple)) else [str(envvar)] if envvar else []
        )
        out += [(v, True) for v in shared if v not in {n for n, _ in out}]
        return out

    def resolve_envvar_value(self, ctx: click.Context) -> str | None:
        for var, shared in self.env_candidates(ctx):
            raw = os.environ.get(var)
            if not raw:
                continue
            if shared and isinstance(self.type, click.Choice) and not self._takes(raw, ctx):
                others = elsewhere(ctx, long_name(self), raw)
                if not others:
                    raise click.BadParameter(
                        f"{raw!r} is not one of {', '.join(map(str, self.type.choices))} "
                        f"(nor taken by any other command){did_you_mean(raw, self.type.choices)}",
                        ctx=ctx,
                        param=self,
                        param_hint=f"{var} (--{long_name(self)})",
                    )
                note(
                    ctx,
                    f"{var}={raw} does not apply to `{ctx.info_name}` "
                    f"(it takes {', '.join(map(str, self.type.choices))}; {', '.join(others)} take it): ignored",
                )
                continue
            ctx.meta.setdefault(f"{UI}.env", {})[self.name] = var
            return raw
        return None

    def _takes(self, raw: str, ctx: click.Context) -> bool:
        try:
            self.type.convert(raw, self, ctx)
        except click.BadParameter:
            return False
        return True

    def value_from_envvar(self, ctx: click.Context) -> Any:
        if self.multiple and not self.is_flag:
            raw = self.resolve_envvar_value(ctx)
            return None if raw is None else [v.strip() for v in raw.split(",") if v.strip()]
        return super().value_from_envvar(ctx)

    def consume_value(self, ctx: click.Context, opts: Mapping[str, Any]) -> Any:
        value, source = super().consume_value(ctx, opts)
        if source != ParameterSource.ENVIRONMENT:
            ctx.meta.get(f"{UI}.env", {}).pop(self.name, None)
        return value, source

    def process_value(self, ctx: click.Context, value: Any) -> Any:
        try:
            return super().process_value(ctx, value)
        except click.BadParameter as exc:
            var = ctx.meta.get(f"{UI}.env", {}).get(self.name)
            if var:
                exc.param_hint = (
                    f"{var}={os.environ.get(var, '')!r} (--{long_name(self)}, from the environment)"
                )
            raise


def adopt(cmd: click.Command) -> click.Command:
    """Give every option of ``cmd`` the environment rules of ``EnvOption``, and make ``-v`` say
    which options came from the environment before the command runs (once per command)."""
    for p in cmd.params:
        if isinstance(p, click.Option) and not isinstance(p, EnvOption):
            p.__class__ = EnvOption if type(p) is click.Option else _with_env(type(p))
    if cmd.callback is not None and not getattr(cmd.callback, "_announces", False):
        inner = cmd.callback

        @functools.wraps(inner)
        def callback(*args: Any, **kwargs: Any) -> Any:
            announce(click.get_current_context())
            return inner(*args, **kwargs)

        callback._announces = True  # type: ignore[attr-defined]
        cmd.callback = callback
    return cmd


def announce(ctx: click.Context) -> None:
    """-v: one line per option whose value came from an environment variable."""
    if not settings(ctx)["verbose"] or settings(ctx)["quiet"]:
        return
    for name, var in sorted(ctx.meta.get(f"{UI}.env", {}).items()):
        click.echo(f"fatbin-inspect: {name} = {os.environ.get(var, '')!r} from {var}", err=True)


_MIXED: dict[type, type] = {}


def _with_env(cls: type) -> type:
    if cls not in _MIXED:
        _MIXED[cls] = type("Env" + cls.__name__, (EnvOption, cls), {})
    return _MIXED[cls]


def elsewhere(ctx: click.Context, option: str, raw: str) -> list[str]:
    """The commands of ``ctx``'s group whose ``--option`` takes ``raw`` (imports every command:
    error path only). The group comes from the context, so this module never imports ``main``."""
    root = ctx.find_root()
    group = root.command
    if not isinstance(group, click.Group):
        return []
    out = []
    for name in group.list_commands(root):
        cmd = group.get_command(root, name)
        for p in getattr(cmd, "params", ()):
            if isinstance(p, click.Option) and long_name(p) == option and isinstance(p.type, click.Choice):
                try:
                    p.type.convert(raw, p, ctx)
                except click.BadParameter:
                    continue
                out.append(name)
    return out


# ------------------------------------------------------------------------------- user interface
def settings(ctx: click.Context | None = None) -> dict[str, Any]:
    """-q/-v/--color/--no-progress of the running command (defaults outside one)."""
    ctx = ctx or click.get_current_context(silent=True)
    base = {"quiet": False, "verbose": False, "color": "auto", "progress": True}
    return {**base, **(ctx.meta.get(UI, {}) if ctx else {})}


def note(ctx: click.Context | None, message: str) -> None:
    """An informational line on stderr, unless --quiet."""
    if not settings(ctx)["quiet"]:
        from fatbin_inspect.render.escape import shown  # input text in it is shown, not obeyed

        click.echo(f"fatbin-inspect: {shown(message)}", err=True)


def _store(
    key: str, convert: Callable[[Any], Any] = lambda v: v
) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value is not None:
            ctx.meta.setdefault(UI, {})[key] = convert(value)
        return value

    return callback


def ui_options(f: F) -> F:
    """-q/--quiet, -v/--verbose, --color, --no-progress: kept in ``ctx.meta``, not passed on."""
    specs: list[tuple[tuple[str, ...], dict[str, Any]]] = [
        (
            ("-q", "--quiet"),
            {
                "is_flag": True,
                "default": None,
                "help": "No progress and no notes on stderr; errors only.",
            },
        ),
        (
            ("-v", "--verbose"),
            {
                "is_flag": True,
                "default": None,
                "help": "Also say which settings came from the environment.",
            },
        ),
        (
            ("--color",),
            {
                "type": Choice(["auto", "always", "never"]),
                "default": "auto",
                "show_default": True,
                "envvar": f"{ENV_PREFIX}_COLOR",
                "help": "Colour the table (auto: on a terminal, honouring NO_COLOR / FORCE_COLOR).",
            },
        ),
        (
            ("--no-progress",),
            {
                "is_flag": True,
                "default": None,
                "help": "Draw no progress bar (it appears on a terminal only).",
            },
        ),
    ]
    for decl, kw in reversed(specs):
        key = decl[-1].lstrip("-").replace("no-", "")
        convert = (lambda v: not v) if key == "progress" else (lambda v: v)
        f = click.option(*decl, cls=EnvOption, expose_value=False, callback=_store(key, convert), **kw)(f)
    return f


# ------------------------------------------------------------------------------- shared options
def format_option(command: str, aliases: dict[str, str] | None = None) -> Callable[[Any], Any]:
    """``--format``: the choices are ``command``'s views in ``render.VIEWS``, the first the default."""
    from fatbin_inspect.render import formats

    choices = formats(command)
    return click.option(
        "--format",
        "fmt",
        cls=EnvOption,
        type=Choice(choices, aliases),
        default=choices[0],
        show_default=True,
        envvar=f"{ENV_PREFIX}_FORMAT",
        help="Output format.",
    )


output_option = click.option(
    "--output",
    "-o",
    "output",
    cls=EnvOption,
    default=None,
    metavar="FILE",
    envvar=f"{ENV_PREFIX}_OUTPUT",
    help="Write the report to FILE instead of stdout.",
)


def fail_options(default: str | None = "error", what: str = "findings") -> Callable[[F], F]:
    """--fail-on error|warning|never and --exit-zero. ``default=None`` lets a policy file decide."""

    def deco(f: F) -> F:
        f = click.option(
            "--exit-zero",
            cls=EnvOption,
            is_flag=True,
            envvar=f"{ENV_PREFIX}_EXIT_ZERO",
            help=f"Exit 0 even when {what} reach the fail level (the report is the same).",
        )(f)
        return click.option(
            "--fail-on",
            cls=EnvOption,
            type=Choice(FAIL_LEVELS),
            default=default,
            show_default=default is not None,
            envvar=f"{ENV_PREFIX}_FAIL_ON",
            help=f"Lowest severity of {what} that makes the exit code 1"
            + (" (default: error, or the policy file's)." if default is None else "."),
        )(f)

    return deco


def split_commas(
    _ctx: click.Context, _param: click.Parameter, values: Sequence[str] | None
) -> tuple[str, ...] | None:
    """``--gpu 'H100,RTX 5090' --gpu 8.9`` -> three queries."""
    if values is None:
        return values
    return tuple(v.strip() for raw in values for v in raw.split(",") if v.strip())


def complete_gpu(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Shell completion for --gpu: product names that start with (or contain) what was typed."""
    from click.shell_completion import CompletionItem

    from fatbin_inspect.compat import data

    low = incomplete.lower()
    names = sorted({g["name"] for g in data.gpus()} | {"auto"})
    hits = [n for n in names if n.lower().startswith(low)]
    hits += [n for n in names if low in n.lower() and n not in hits]
    return [CompletionItem(n) for n in hits]


def gpu_option(help: str, envvar: str | None = None) -> Callable[[F], F]:
    return click.option(
        "--gpu",
        "gpus",
        cls=EnvOption,
        multiple=True,
        envvar=envvar,
        callback=split_commas,
        shell_complete=complete_gpu,
        metavar="GPU",
        help=help + " Repeatable, or comma-separated.",
    )


def driver_option(
    *aliases: str, dest: str = "driver", help: str, envvar: Sequence[str] = ()
) -> Callable[[F], F]:
    return click.option(
        "--driver",
        *aliases,
        dest,
        cls=EnvOption,
        default=None,
        envvar=list(envvar) or None,
        metavar="VERSION",
        help=help,
    )


HELP_WIDTH = 80  # the examples fit a terminal this wide (click indents the epilog by 2 more)
_EXAMPLE_INDENT = 4


def example_lines(line: str, width: int = HELP_WIDTH) -> list[str]:
    """One example as lines of at most ``width`` columns once indented: as written where it fits;
    else its ``# comment`` on a line above it, and a command still too long continued at a space
    (never inside quotes) with a ``\\`` at the end of each line but the last."""
    room = width - _EXAMPLE_INDENT
    if len(line) <= room:
        return [line]
    command, *comment = re.split(r"\s{2,}# ", line, maxsplit=1)  # the examples pad their comments
    out = [f"# {comment[0].strip()}"] if comment else []
    import shlex  # here: only help with a long example pays for it

    words = shlex.split(command, posix=False)
    current = words[0]
    for word in words[1:]:
        if len(current) + 1 + len(word) + 2 > room:
            out.append(current + " \\")
            current = "    " + word
        else:
            current += " " + word
    return [*out, current]


def examples(*lines: str) -> Callable[[click.Command], click.Command]:
    """Add an ``Examples:`` block (kept as written, each example fitted to 80 columns by
    ``example_lines``) to a command's --help."""

    def deco(cmd: click.Command) -> click.Command:
        fitted = [part for line in lines for part in example_lines(line)]
        cmd.epilog = "\b\nExamples:\n" + "\n".join(f"  {part}" for part in fitted)
        return cmd

    return deco


# ------------------------------------------------------------------------------- fleet targets
targets_option = click.option(
    "--targets",
    "target_files",
    multiple=True,
    metavar="FILE",
    help="Fleet targets: `doctor --format json` reports or a fleet TOML of {name, gpu, driver}; a folder of "
    "them, or a pattern ('doctor-*.json'). Repeatable; unquoted `--targets doctor-*.json` takes every file.",
)


def gather_targets(args: Sequence[str]) -> list[str]:
    """``--targets doctor-*.json lib.so``: the shell expanded the pattern, so the reports after the
    first follow as words of their own; each ``.json``/``.toml`` file right after a ``--targets``
    value is given its own ``--targets`` (a path after ``--`` never is)."""
    out: list[str] = []
    i, taking = 0, False
    while i < len(args):
        a = args[i]
        if a == "--":
            out += args[i:]
            break
        if a == "--targets" and i + 1 < len(args):
            out += [a, args[i + 1]]
            i, taking = i + 2, True
            continue
        if a.startswith("--targets="):
            out.append(a)
            i, taking = i + 1, True
            continue
        if taking and not a.startswith("-") and a.lower().endswith((".json", ".toml")) and os.path.isfile(a):
            out += ["--targets", a]
        else:
            taking = False
            out.append(a)
        i += 1
    return out


compat_option = click.option(
    "--compat",
    default=None,
    metavar="CUDA",
    help="A cuda-compat forward-compatibility package in use (13.4 = cuda-compat-13-4); "
    "--driver auto finds one by itself.",
)
