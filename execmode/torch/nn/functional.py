"""``torch.nn.functional``: execmode's ``nn.functional`` under PyTorch's name (``F.relu``,
``F.cross_entropy``, ``F.softmax(x, dim=-1)`` ...)."""

from __future__ import annotations

from .._delegate import delegate

__getattr__, __dir__ = delegate(__name__, "execmode.nn.functional")
