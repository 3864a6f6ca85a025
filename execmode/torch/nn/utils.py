"""``torch.nn.utils``: execmode's ``clip_grad_norm_``, ``clip_grad_value_`` ..."""

from __future__ import annotations

from .._delegate import delegate

__getattr__, __dir__ = delegate(__name__, "execmode.nn.utils")
