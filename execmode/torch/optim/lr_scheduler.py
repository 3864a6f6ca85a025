"""``torch.optim.lr_scheduler``: execmode's schedulers (``StepLR``, ``CosineAnnealingLR``
...) under PyTorch's name."""

from __future__ import annotations

from .._delegate import delegate

__getattr__, __dir__ = delegate(__name__, "execmode.optim.lr_scheduler")
