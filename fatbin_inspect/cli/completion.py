"""Shell completion that inserts a value with spaces as one word (``--gpu NVIDIA\\ GB10``).

click's bash script adds each value unquoted (``COMPREPLY+=($value)``, after a ``read`` that eats
backslashes), and bash inserts a reply as given: ``NVIDIA GB10`` became two arguments. Here the
bash script reads each reply raw and quoted, and the reply is escaped for the word being typed:
backslashes before the shell's special characters for a bare word, as given inside a quote the
user opened (readline closes it). zsh's ``compadd`` and fish quote what they insert themselves;
click 8.4.0-8.4.1's fish script cannot run (pallets/click#3502: ``string split`` on a bare
newline), so fish gets 8.4.2's. Registered over click's classes (``add_completion_class``) when
a completion is asked for (``_FATBIN_INSPECT_COMPLETE``), so no other run imports this.
"""

from __future__ import annotations

import os
import re

from click.shell_completion import BashComplete, CompletionItem, FishComplete, add_completion_class

from fatbin_inspect.errors import UsageError

VAR = "_FATBIN_INSPECT_COMPLETE"
INSTRUCTIONS = tuple(f"{sh}_{what}" for sh in ("bash", "zsh", "fish") for what in ("source", "complete"))
MAX_LINE = 1 << 17  # COMP_WORDS: the line being typed (Linux passes no longer variable: MAX_ARG_STRLEN)
MAX_CWORD = 7  # digits of COMP_CWORD (bash, zsh: the index of the word being completed)

# everything but these is backslash-escaped in a bare bash word (as ``printf %q`` does)
_SAFE = re.compile(r"[^\w@%+=:,./-]")

_SOURCE_BASH = """\
%(complete_func)s() {
    local IFS=$'\\n'
    local response

    response=$(env COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD=$COMP_CWORD \
%(complete_var)s=bash_complete $1)

    for completion in $response; do
        IFS=',' read -r type value <<< "$completion"

        if [[ $type == 'dir' ]]; then
            COMPREPLY=()
            compopt -o dirnames
        elif [[ $type == 'file' ]]; then
            COMPREPLY=()
            compopt -o default
        elif [[ $type == 'plain' ]]; then
            COMPREPLY+=("$value")
        fi
    done

    return 0
}

%(complete_func)s_setup() {
    complete -o nosort -F %(complete_func)s %(prog_name)s
}

%(complete_func)s_setup;
"""

_SOURCE_FISH = """\
function %(complete_func)s;
    set -l response (env %(complete_var)s=fish_complete COMP_WORDS=(commandline -cp) \
COMP_CWORD=(commandline -t) %(prog_name)s);

    for completion in $response;
        set -l metadata (string split -m 1 "," $completion);

        if test $metadata[1] = "dir";
            __fish_complete_directories $metadata[2];
        else if test $metadata[1] = "file";
            __fish_complete_path $metadata[2];
        else if test $metadata[1] = "plain";
            echo $metadata[2];
        end;
    end;
end;

complete --no-files --command %(prog_name)s --arguments \
"(%(complete_func)s)";
"""


def bash_word(value: str) -> str:
    """``value`` as one bare bash word."""
    return _SAFE.sub(lambda m: "\\" + m.group(0), value)


class Bash(BashComplete):
    source_template = _SOURCE_BASH
    quoted = False  # the word being completed opens a quote

    def get_completion_args(self) -> tuple[list[str], str]:
        # the script joins COMP_WORDS with its IFS, a newline: the words as typed
        words = os.environ.get("COMP_WORDS", "").split("\n")
        try:
            typed = words[int(os.environ.get("COMP_CWORD", ""))]
        except (ValueError, IndexError):
            typed = ""
        self.quoted = typed[:1] in ("'", '"')
        return super().get_completion_args()

    def format_completion(self, item: CompletionItem) -> str:
        value = item.value if self.quoted or item.type != "plain" else bash_word(item.value)
        return f"{item.type},{value}"


class Fish(FishComplete):
    source_template = _SOURCE_FISH

    def format_completion(self, item: CompletionItem) -> str:
        # one line per reply; a tab before the help text (fish shows it beside the value)
        value = item.value.replace("\n", " ")
        if item.help:
            return f"{item.type},{value}\t{' '.join(item.help.split())}"
        return f"{item.type},{value}"


def check_environment(env: dict[str, str] | os._Environ[str]) -> None:
    """The completion variables a shell sets, checked before click reads them (it took a
    missing ``COMP_WORDS`` or a ``COMP_CWORD`` of ``abc`` for an internal error, and an unknown
    instruction for nothing at all): ``_FATBIN_INSPECT_COMPLETE`` one of ``INSTRUCTIONS``; for
    ``*_complete``, ``COMP_WORDS`` set and at most ``MAX_LINE`` bytes, ``COMP_CWORD`` a word
    index in range (bash, zsh) or the word being typed (fish), as long at most. UsageError
    naming the variable otherwise."""
    instruction = env.get(VAR, "")
    if instruction not in INSTRUCTIONS:
        raise UsageError(f"{VAR}={instruction[:80]!r}: not one of {', '.join(INSTRUCTIONS)}")
    if not instruction.endswith("_complete"):
        return
    words, cword = env.get("COMP_WORDS"), env.get("COMP_CWORD")
    for name, value in (("COMP_WORDS", words), ("COMP_CWORD", cword)):
        if value is None:
            raise UsageError(
                f"{VAR}={instruction}: {name} is not set (the shell's completion script sets it)"
            )
        if len(value) > MAX_LINE:
            raise UsageError(
                f"{name}: {len(value):,} characters, over the {MAX_LINE:,} a command line may hold"
            )
    if instruction == "fish_complete" or cword is None or words is None:
        return  # (fish: COMP_CWORD is the word being typed, any text)
    if not (cword.isdecimal() and cword.isascii() and len(cword) <= MAX_CWORD):
        raise UsageError(f"COMP_CWORD={cword[:80]!r}: not the index of a word (digits)")
    count = len(words.split("\n")) if instruction == "bash_complete" else len(words.split())
    if int(cword) > count:
        raise UsageError(f"COMP_CWORD={cword}: past the {count} words of COMP_WORDS")


def register() -> None:
    add_completion_class(Bash)
    add_completion_class(Fish)
