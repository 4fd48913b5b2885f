"""The library layer: what the commands and ``fatbin_inspect.api`` compute, without click.

Below ``cli/`` and ``api.py``, above the engine (``compat``), the inventory and the scan: reading
inputs into records (``inputs``), the one judging path, runtime of each file and the roll-ups
(``verdicts``), the targets of names, doctor reports and fleet files (``fleet``), torch's runtime
and FBI017 (``torch``), the gate run (``gate_run``) and the extract plan (``extract_plan``).
Nothing here prints: messages go to the ``warn`` callbacks the caller passes (the command line
passes ``cli.common.say``). See README, Development.
"""

# --fail-on of check and scan: the verdicts that fail the run at each level (here, importing
# nothing, so a scan without targets loads no engine to read it)
FAILING: dict[str, frozenset[str]] = {
    "error": frozenset({"fail"}),
    "warning": frozenset({"fail", "jit"}),
    "never": frozenset(),
}
