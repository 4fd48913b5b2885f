"""Renderers: pure functions from records to text. Only they (and the CLI that calls them) produce
user-facing text; machine formats write nothing but their document to stdout.

One naming scheme: ``<command>_<format>.py`` (``check_table``, ``check_json``, ``scan_table``,
``scan_json``, ``inventory_table``, ``inventory_json``, ``diff_markdown``, ``explain_text`` ...) for
the views of one command, and ``findings/<format>.py`` for the findings formats that ``gate``,
``check`` and ``diff`` share, behind the registry in ``findings/__init__.py``. Two helpers are no
view of their own: ``console`` (rich to text, colour, widths) and ``jsondump`` (JSON serialisation).
"""
