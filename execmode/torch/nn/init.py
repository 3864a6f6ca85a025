"""``torch.nn.init``: execmode's initializers (``xavier_uniform_``, ``normal_`` ...), which
draw from execmode's seeded generator."""

from __future__ import annotations

from .._delegate import delegate

__getattr__, __dir__ = delegate(__name__, "execmode.nn.init")
