"""Compatibility prediction: which image of a fatbin a GPU and driver would load, or why none.

Layers: ``data`` (packaged JSON) -> ``targets`` (GPU + driver records) -> ``rules`` (one function
per R- rule of docs/compatibility.md) -> ``engine`` (verdicts per fatbin and file). ``runtime`` finds
which CUDA runtime a file needs. Nothing here prints; only ``targets.resolve_auto`` touches a GPU.
"""
