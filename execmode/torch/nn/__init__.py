"""``torch.nn``: execmode's ``nn`` (``execmode.nn``) under PyTorch's name: ``nn.Module``,
``nn.Linear``, the losses, ``nn.functional``, ``nn.init``, ``nn.utils`` ... Whatever
``execmode.nn`` has is here; a PyTorch name it lacks says so. docs/pytorch.md lists the
layers and what differs."""

from __future__ import annotations

from .._delegate import delegate

_delegated, __dir__ = delegate(__name__, "execmode.nn")
_PARALLEL = ("DataParallel", "DistributedDataParallel")  # torch.nn.parallel's, as torch.nn's


def __getattr__(name: str):
    if name in _PARALLEL:
        from . import parallel

        return getattr(parallel, name)
    return _delegated(name)
