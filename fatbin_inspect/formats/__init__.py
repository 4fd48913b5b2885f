"""Format parsers: bytes in, frozen records (``model``) out. See docs/format.md."""
