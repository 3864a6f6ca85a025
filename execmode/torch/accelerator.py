"""``torch.accelerator``: the device-agnostic questions (PyTorch 2.6+). The accelerator
execmode can use is a CUDA GPU through CuPy; without one there is none."""

from __future__ import annotations

from . import cuda as _cuda
from ._tensor_type import device


def is_available() -> bool:
    """Whether a GPU is usable (``torch.cuda.is_available()``)."""
    return _cuda.is_available()


def current_accelerator(check_available: bool = False):
    """``torch.device("cuda")`` where a GPU is usable, else None."""
    return device("cuda") if _cuda.is_available() else None


def device_count() -> int:
    """How many GPUs execmode can use (0 without one)."""
    return _cuda.device_count()


def current_device_index() -> int:
    """The current GPU's index (a DeviceError without one)."""
    return _cuda.current_device()


current_device_idx = current_device_index


def set_device_index(index) -> None:
    """Make GPU ``index`` the current one."""
    _cuda.set_device(index)


set_device_idx = set_device_index


def synchronize(device=None) -> None:
    """Wait for the GPU's work to finish (nothing to wait for without one)."""
    _cuda.synchronize(device)


__all__ = ["current_accelerator", "current_device_idx", "current_device_index",
           "device_count", "is_available", "set_device_idx", "set_device_index",
           "synchronize"]
