"""Inventory: from a path to ``FileReport`` records (containers, then the format parsers)."""
