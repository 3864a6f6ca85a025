"""``torch.Tensor``, ``torch.FloatTensor`` ..., ``torch.Size``, ``torch.device`` and
``torch.from_numpy``: PyTorch's constructors and types over execmode's one Tensor class.

``torch.Tensor`` is not a second tensor class: ``isinstance(x, torch.Tensor)`` asks whether
``x`` is an execmode Tensor (nn.Parameter included), ``torch.Tensor.add`` is the method,
and calling it makes an execmode tensor the way PyTorch's constructor does
(``torch.Tensor([1, 2])`` is float32 data, ``torch.Tensor(2, 3)`` a float32 tensor of that
shape). A metaclass answers those questions, so the engine's Tensor stays as it is.
"""

from __future__ import annotations

import numpy as np

from .. import api as em
from .._tensor import Tensor as EngineTensor
from ..backend import Device, as_device
from ..errors import ArgumentError, DeviceError, DTypeError


def _is_size(args) -> bool:
    return bool(args) and all(isinstance(a, int) and not isinstance(a, bool) for a in args)


class _TensorType(type):
    """The metaclass of ``torch.Tensor`` and the typed tensors: instance and subclass
    checks, attributes and calls go to execmode's Tensor."""

    _dtype = em.float32
    _exact = False  # FloatTensor ...: isinstance also checks the dtype

    def __instancecheck__(cls, obj) -> bool:
        if not isinstance(obj, EngineTensor):
            return False
        return not cls._exact or obj.dtype == cls._dtype

    def __subclasscheck__(cls, sub) -> bool:
        return isinstance(sub, type) and issubclass(sub, EngineTensor)

    def __getattr__(cls, name):
        return getattr(EngineTensor, name)

    def __call__(cls, *args, device=None, requires_grad=False):
        dtype = cls._dtype
        if len(args) == 1 and isinstance(args[0], EngineTensor) and not cls._exact:
            return args[0]  # torch.Tensor(t) is t's data
        if len(args) == 1 and isinstance(args[0], tuple) and _is_size(args[0]):
            args = args[0]  # torch.Tensor(torch.Size([2, 3]))
        if not args:
            out = em.zeros((0,), dtype=dtype, device=device)
        elif _is_size(args):
            out = em.zeros(args, dtype=dtype, device=device)  # PyTorch leaves it uninitialised
        elif len(args) == 1:
            out = em.tensor(args[0], dtype=dtype, device=device)
        else:
            raise ArgumentError(f"{cls.__name__}(...): give data (a list, an array) or sizes "
                                f"(ints), got {len(args)} arguments")
        return out.requires_grad_(True) if requires_grad else out


class Tensor(metaclass=_TensorType):
    """PyTorch's ``torch.Tensor``: ``isinstance(x, torch.Tensor)`` is true for every
    execmode tensor; ``torch.Tensor(data)`` makes a float32 tensor from data,
    ``torch.Tensor(2, 3)`` one of that shape (zeros: execmode initialises memory)."""


def _typed(name: str, dtype, doc: str):
    return _TensorType(name, (), {"_dtype": dtype, "_exact": True, "__doc__": doc,
                                  "__module__": __name__})


FloatTensor = _typed("FloatTensor", em.float32, "float32 data: ``torch.FloatTensor([1, 2])``.")
DoubleTensor = _typed("DoubleTensor", em.float64, "float64 data.")
LongTensor = _typed("LongTensor", em.int64, "int64 data: ``torch.LongTensor([1, 2])``.")
IntTensor = _typed("IntTensor", em.int32, "int32 data.")
BoolTensor = _typed("BoolTensor", em.bool, "bool data.")


class Size(tuple):
    """PyTorch's ``torch.Size``: a tuple of dimensions (``x.shape`` is a plain tuple) with
    ``numel()``."""

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        out = 1
        for d in self:
            out *= d
        return out


class device(Device):  # noqa: N801 - PyTorch's name
    """PyTorch's ``torch.device("cuda:0")``, ``torch.device("cuda", 1)``,
    ``torch.device("cpu")``: an execmode ``Device``, so it is accepted wherever a device
    is (``x.to(dev)``, ``model.to(dev)``, ``device=``). ``"mps"`` and other kinds are
    refused: execmode runs on the CPU and on CUDA GPUs (through CuPy)."""

    __slots__ = ()

    def __init__(self, type, index=None):  # noqa: A002 - PyTorch's name
        if isinstance(type, Device):
            parsed = type
        else:
            if not isinstance(type, str):
                raise DeviceError(f"torch.device({type!r}): expected 'cpu' or 'cuda[:N]'")
            text = type if index is None else f"{type}:{int(index)}"
            if text.startswith("cpu:"):
                text = "cpu"
            try:
                parsed = as_device(text)
            except DeviceError:
                raise DeviceError(f"torch.device({text!r}): execmode runs on 'cpu' and on "
                                  "CUDA GPUs ('cuda', 'cuda:N')") from None
        super().__init__(parsed.type, parsed.index)


def is_tensor(obj) -> bool:
    """Whether ``obj`` is a tensor."""
    return isinstance(obj, EngineTensor)


def is_floating_point(x) -> bool:
    """Whether ``x`` has a floating-point dtype."""
    return x.dtype.kind == "f"


def from_numpy(array) -> EngineTensor:
    """A tensor that shares ``array``'s memory, as PyTorch's: writes through either show in
    the other. The dtype must be one execmode has (float32/64, int32/64, bool)."""
    if not isinstance(array, np.ndarray):
        raise ArgumentError(f"from_numpy expects a NumPy array, got {type(array).__name__}")
    try:
        em.dtypes.as_dtype(array.dtype)
    except DTypeError as exc:
        raise DTypeError(f"from_numpy: {exc}") from None
    t = EngineTensor.__new__(EngineTensor)
    t._data = array
    t.requires_grad = False
    return t


__all__ = ["BoolTensor", "DoubleTensor", "FloatTensor", "IntTensor", "LongTensor", "Size",
           "Tensor", "device", "from_numpy", "is_floating_point", "is_tensor"]
