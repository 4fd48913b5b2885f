"""Renderers: one module per output format, each a pure function from records to text.

Only renderers (and the CLI that calls them) produce user-facing text. Machine formats write
nothing but their document to stdout.
"""
