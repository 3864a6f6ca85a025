"""The device layer: "cpu" runs on NumPy, "cuda"/"cuda:N" on CuPy.

CuPy is imported lazily, on the first use of a CUDA device: importing it succeeds on
machines without a GPU, so availability is decided by ``cupy.cuda.is_available()``.
"""

from __future__ import annotations

import numpy as np

from .errors import DeviceError


class Device:
    """A device name with cheap equality against strings: ``t.device == "cpu"``."""

    __slots__ = ("type", "index")

    def __init__(self, type: str, index: int = 0):
        self.type = type
        self.index = index

    def __str__(self) -> str:
        return "cpu" if self.type == "cpu" else f"cuda:{self.index}"

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = as_device(other)
            except (DeviceError, ValueError):
                return False
        return isinstance(other, Device) and self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    @property
    def is_cuda(self) -> bool:
        return self.type == "cuda"


CPU = Device("cpu")
_cuda_devices: dict[int, Device] = {}


def as_device(value) -> Device:
    """Parse "cpu", "cuda", "cuda:1" or a Device."""
    if value is None:
        return CPU
    if isinstance(value, Device):
        return value
    if not isinstance(value, str):
        raise DeviceError(f"device must be a string like 'cpu' or 'cuda:0', got {value!r}")
    if value == "cpu":
        return CPU
    if value == "cuda" or value.startswith("cuda:"):
        idx_text = value[5:] if value.startswith("cuda:") else "0"
        if not idx_text.isdigit():
            raise DeviceError(f"bad CUDA device {value!r}: expected 'cuda' or 'cuda:N'")
        idx = int(idx_text)
        dev = _cuda_devices.get(idx)
        if dev is None:
            dev = _cuda_devices[idx] = Device("cuda", idx)
        return dev
    raise DeviceError(f"unknown device {value!r}: expected 'cpu', 'cuda' or 'cuda:N'")


_cupy = None
_cupy_checked = False
_cupy_problem = ""


def cupy_module():
    """The cupy module when a GPU is usable, else None (with the reason in cuda_problem())."""
    global _cupy, _cupy_checked, _cupy_problem
    if not _cupy_checked:
        _cupy_checked = True
        try:
            import cupy  # noqa: PLC0415 - optional, imported on first CUDA use only
        except ImportError:
            _cupy_problem = (
                "CuPy is not installed: pip install 'execmode[gpu]' "
                "(CUDA 12) or 'execmode[gpu13]' (CUDA 13)"
            )
        else:
            try:
                ok = cupy.cuda.is_available()
            except Exception as exc:  # the CUDA runtime can raise instead of answering
                ok = False
                _cupy_problem = f"CuPy cannot reach a GPU: {exc}"
            if ok:
                _cupy = cupy
            elif not _cupy_problem:
                _cupy_problem = "CuPy is installed but no CUDA GPU is available"
    return _cupy


def cuda_problem() -> str:
    cupy_module()
    return _cupy_problem


def cuda_is_available() -> bool:
    return cupy_module() is not None


def xp_for(device: Device):
    """The array namespace for a device: numpy or cupy."""
    if device.type == "cpu":
        return np
    cp = _cupy if _cupy is not None else cupy_module()
    if cp is None:
        raise DeviceError(f"device {device} is not available: {_cupy_problem}")
    if device.index >= cuda_device_count():
        raise DeviceError(f"device {device} does not exist on this machine")
    return cp


_device_count = None


def cuda_device_count() -> int:
    """How many GPUs CuPy sees (0 without CuPy or a GPU), asked once: every eager op on a
    GPU checks its device against it, and the runtime call cost as much as a small op's
    own Python."""
    global _device_count
    if _device_count is None:
        cp = cupy_module()
        _device_count = cp.cuda.runtime.getDeviceCount() if cp is not None else 0
    return _device_count


def device_of_array(arr) -> Device:
    if type(arr) is np.ndarray:
        return CPU
    dev = getattr(arr, "device", None)
    if dev is not None and hasattr(dev, "id"):  # cupy.cuda.Device
        found = _cuda_devices.get(dev.id)
        return found if found is not None else as_device(f"cuda:{dev.id}")
    return CPU


def namespace_of(arr):
    """NumPy or CuPy, whichever owns ``arr`` (an ndarray subclass is NumPy's; CuPy is
    imported only for its own arrays)."""
    return np if isinstance(arr, np.ndarray) else cupy_module()


def to_device(arr, device: Device):
    """Copy an array to a device (host <-> GPU, or between GPUs)."""
    src = device_of_array(arr)
    if src == device:
        return arr
    if device.type == "cpu":
        return arr.get()
    cp = xp_for(device)
    with cp.cuda.Device(device.index):
        return cp.asarray(arr)


def to_numpy(arr) -> np.ndarray:
    return arr if type(arr) is np.ndarray else arr.get()


def use_device(device: Device):
    """A context that makes CuPy allocate on ``device`` (a no-op for the CPU)."""
    if device.type == "cpu":
        return _NULL_CONTEXT
    return xp_for(device).cuda.Device(device.index)


class _NullContext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_NULL_CONTEXT = _NullContext()
