"""``torch.optim``: execmode's optimizers (``execmode.optim``) under PyTorch's name, with
``torch.optim.lr_scheduler``. Whatever ``execmode.optim`` has is here; a PyTorch name it
lacks says so."""

from __future__ import annotations

from .._delegate import delegate

__getattr__, __dir__ = delegate(__name__, "execmode.optim")
