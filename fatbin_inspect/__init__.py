"""fatbin-inspect: list the CUDA device code inside binaries and predict whether it loads.

Layers, one way only: ``containers`` find bytes -> ``fatbin``/``cubin``/``ptx`` parse them into
frozen records (``model``) -> ``compat`` decides -> ``render`` presents -> ``cli`` wires.
Nothing below ``render`` prints.
"""

__version__ = "0.1.0"
