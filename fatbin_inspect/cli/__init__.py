"""Thin click commands over the library; each command module fits on a screen."""
