"""A view: one ``--format`` of one command, what its run must produce and how it is written.

Modelled on pip-audit's ``OutputFormatChoice.to_format()`` and ``VulnerabilityFormat.is_manifest``:
the command asks the table for its view (``render.view(command, fmt)``), hands ``view.needs`` to
the library call that makes the run, then ``view.write(run, sink, shown)`` and computes its exit
code. A view is declared, not coded: a writer (``"module:function"`` under ``render/``, imported
on first use, so a command pays only for the format it writes) and its ``Needs``.

Writers take ``(run, sink, shown)``: the command's run record, where to write (``Sink``: the CLI's
``-o`` file or stdout, never one of the inputs) and what the command was asked to show besides
(its table options, or None). Two shorter kinds: a text view's writer is a pure drawing function
of the run's fields (``render_gpus(rows, color, width) -> str``); a findings view's writer makes
the ``FindingsReport``, which ``render.findings.write`` writes in the view's format.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from fatbin_inspect.judging.needs import Needs

if TYPE_CHECKING:  # (imported where a view writes: not by every command's --format choices)
    from fatbin_inspect.render.sink import Sink

# "own": ``writer(run, sink, shown)`` writes; "text": ``writer(**run, color=, width=)`` is the text
# (``run`` its keyword arguments); "findings": ``writer(run, needs)`` is the (FindingsReport, fail
# level) that ``render.findings.write`` writes in the view's format
Kind = Literal["own", "text", "findings"]


class View(NamedTuple):  # (not a dataclass: see judging.needs)
    command: str
    name: str  # the --format choice
    writer: str  # "module:function" under render/
    declared: Needs = Needs()
    # the per-record encoder of ``Needs.encoder`` ("module:function" under render/, its parts
    # ``function_parts`` beside it), imported when ``needs`` is read
    encoder: str | None = None
    # a module the writer imports and the message when it is missing: ``render.view`` checks it
    # before anything is read
    requires: tuple[str, str] | None = None
    kind: Kind = "own"

    @property
    def needs(self) -> Needs:
        """What the run must produce for this view."""
        if self.encoder is None:
            return self.declared
        return self.declared._replace(encoder=load(self.encoder), encoder_parts=load(self.encoder + "_parts"))

    def check(self) -> None:
        """UsageError when the module the writer needs is not installed."""
        if self.requires is None:
            return
        from fatbin_inspect.errors import UsageError

        module, message = self.requires
        try:
            importlib.import_module(module)
        except ImportError:
            raise UsageError(message) from None

    def write(self, run: Any, sink: Sink, shown: Any = None) -> None:
        """Write ``run`` (the command's run record) to ``sink``; ``shown``: the command's table
        options (each writer says which record), None where there are none."""
        fn = load(self.writer)
        if self.kind == "text":
            sink.text(fn(**run, color=sink.look.color, width=sink.look.width))
        elif self.kind == "findings":
            from fatbin_inspect.render.findings import write as write_findings

            report, fail_on = fn(run, self.needs)
            write_findings(report, self.name, fail_on, sink)
        else:
            fn(run, sink, shown)


def load(spec: str) -> Callable[..., Any]:
    """The function ``"module:function"`` names under render/ (imported now)."""
    module, _, name = spec.partition(":")
    fn: Callable[..., Any] = getattr(importlib.import_module(f"fatbin_inspect.render.{module}"), name)
    return fn
