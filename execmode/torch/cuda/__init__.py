"""``torch.cuda``: what PyTorch programs ask about the GPU, answered by execmode's backend
(CuPy). On a machine without a GPU (or without CuPy) ``is_available()`` is False and
``device_count()`` 0, as PyTorch's answers there; where CuPy reaches a GPU they are real,
and tensors on ``"cuda"`` run there.

One random generator serves every device (``ops/rng.py``): ``manual_seed`` and
``manual_seed_all`` seed it, as ``torch.manual_seed`` does. ``torch.cuda.amp`` holds
``autocast`` and ``GradScaler`` (``execmode.torch.amp``).
"""

from __future__ import annotations

from ...backend import cuda_device_count, cuda_is_available, cuda_problem, cupy_module
from ...errors import DeviceError
from . import amp  # noqa: F401 - torch.cuda.amp

_current = [0]


def is_available() -> bool:
    """Whether execmode can run on a GPU here (CuPy installed and a GPU reachable)."""
    return cuda_is_available()


def device_count() -> int:
    """How many GPUs execmode sees (0 without CuPy or a GPU)."""
    return cuda_device_count()


def is_initialized() -> bool:
    """Whether a GPU is usable (execmode starts CUDA on first use)."""
    return cuda_is_available()


def _require(what: str):
    cp = cupy_module()
    if cp is None:
        raise DeviceError(f"torch.cuda.{what}: no GPU: {cuda_problem()}")
    return cp


def current_device() -> int:
    """The index of the current GPU (a DeviceError where there is none)."""
    _require("current_device")
    return _current[0]


def set_device(device) -> None:
    """Make ``device`` (an index, "cuda:N" or a torch.device) the current GPU."""
    cp = _require("set_device")
    index = device if isinstance(device, int) else getattr(device, "index", None)
    if index is None:
        index = int(str(device).rpartition(":")[2] or 0)
    cp.cuda.Device(index).use()
    _current[0] = index


def get_device_name(device=None) -> str:
    """The GPU's name, as its driver reports it."""
    cp = _require("get_device_name")
    index = _current[0] if device is None else int(getattr(device, "index", device) or 0)
    name = cp.cuda.runtime.getDeviceProperties(index)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device=None) -> tuple:
    """The GPU's compute capability, ``(major, minor)``."""
    cp = _require("get_device_capability")
    index = _current[0] if device is None else int(getattr(device, "index", device) or 0)
    props = cp.cuda.runtime.getDeviceProperties(index)
    return (props["major"], props["minor"])


def synchronize(device=None) -> None:
    """Wait for the GPU's work to finish (nothing to wait for without one)."""
    cp = cupy_module()
    if cp is not None:
        cp.cuda.Device(_current[0] if device is None else
                       int(getattr(device, "index", device) or 0)).synchronize()


def manual_seed(seed) -> None:
    """Seed execmode's generator (one for every device: ``torch.manual_seed``)."""
    from .._random import manual_seed as seed_all

    seed_all(seed)


manual_seed_all = manual_seed


def seed() -> None:
    """Seed execmode's generator from the operating system."""
    from .._random import seed as reseed

    reseed()


seed_all = seed


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: execmode has no bfloat16 (it computes in float32)."""
    return False


def empty_cache() -> None:
    """Hand CuPy's cached GPU memory back to the driver (nothing without a GPU)."""
    cp = cupy_module()
    if cp is not None:
        cp.get_default_memory_pool().free_all_blocks()


def memory_allocated(device=None) -> int:
    """Bytes of GPU memory held by tensors (CuPy's pool; 0 without a GPU)."""
    cp = cupy_module()
    return int(cp.get_default_memory_pool().used_bytes()) if cp is not None else 0


def memory_reserved(device=None) -> int:
    """Bytes CuPy's pool holds from the driver (0 without a GPU)."""
    cp = cupy_module()
    return int(cp.get_default_memory_pool().total_bytes()) if cp is not None else 0


def max_memory_allocated(device=None) -> int:
    """CuPy keeps no peak: the bytes held now (execmode's profiler records the peak)."""
    return memory_allocated(device)


def reset_peak_memory_stats(device=None) -> None:
    """Nothing to reset (see ``max_memory_allocated``)."""


__all__ = ["amp", "current_device", "device_count", "empty_cache", "get_device_capability",
           "get_device_name", "is_available", "is_bf16_supported", "is_initialized",
           "manual_seed", "manual_seed_all", "max_memory_allocated", "memory_allocated",
           "memory_reserved", "reset_peak_memory_stats", "seed", "seed_all", "set_device",
           "synchronize"]


def __getattr__(name: str):
    from ...aliases import missing_attribute

    raise missing_attribute(__name__, name)
