"""``torch.nn.parallel``: ``DataParallel`` on one device is the module itself (PyTorch's
``DataParallel`` without GPUs calls the module directly); ``DistributedDataParallel``
needs a process group, which execmode.torch does not have (``torch.distributed``), so
building one says so. Programs that import ``DDP`` and wrap only under torchrun (nanoGPT)
run single-process unchanged."""

from __future__ import annotations

from ...errors import ArgumentError
from ...nn.module import Module
from ..distributed import _REFUSAL


class DataParallel(Module):
    """``DataParallel(module)``: runs ``module`` on the one device execmode uses; the
    module stays reachable as ``.module`` (state_dict keys gain ``module.``, as PyTorch's)."""

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.dim = dim

    def forward(self, *args, **kwargs):
        """The wrapped module's forward."""
        return self.module(*args, **kwargs)


class DistributedDataParallel(Module):
    """Refused when built: ``torch.nn.parallel.DistributedDataParallel`` needs a process
    group, and execmode.torch runs one process."""

    def __init__(self, module=None, *args, **kwargs):
        raise ArgumentError(f"DistributedDataParallel: {_REFUSAL}; use the model itself")


__all__ = ["DataParallel", "DistributedDataParallel"]
