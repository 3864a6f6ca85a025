"""PyTorch's dtype names: ``torch.float`` is float32, ``torch.long`` int64, ``torch.int``
int32 (as in PyTorch), ``torch.double`` float64, ``torch.bool``.

They are NumPy's dtype objects, as execmode's are (``torch.float32 is em.float32``).
``torch.float16``/``torch.half`` and ``torch.bfloat16`` exist so that programs that name
them (``{"float16": torch.float16, ...}``, ``autocast(dtype=torch.bfloat16)``) run, but a
tensor of either is refused with the dtypes that work: execmode has no half precision.
Under ``torch.autocast`` the computation stays in float32 (``amp.py``). uint8, int8 and
int16 are execmode's own (the Array API's small integers).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import DEFAULT_FLOAT, bool_, float32, float64, int32, int64
from ..errors import DTypeError

dtype = np.dtype  # isinstance(torch.float32, torch.dtype)

float32 = float32
float = float32  # noqa: A001 - PyTorch's name
float64 = float64
double = float64
int64 = int64
long = int64
int32 = int32
int = int32  # noqa: A001 - PyTorch's torch.int is int32
bool = bool_  # noqa: A001
float16 = np.dtype("float16")
half = float16
uint8 = np.dtype("uint8")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
short = int16


class UnsupportedDType:
    """A PyTorch dtype NumPy has no type for (bfloat16): named, so that programs that
    mention it run, and refused with the dtypes that work wherever a tensor would get it."""

    def __init__(self, name: str, itemsize: int):
        self.name = name
        self.itemsize = itemsize
        self.is_floating_point = True
        self.execmode_refusal = (
            f"torch.{name} is not supported: execmode has no half precision; use "
            "torch.float32 (torch.autocast keeps float32)")

    def __repr__(self) -> str:
        return f"torch.{self.name}"


bfloat16 = UnsupportedDType("bfloat16", 2)


def get_default_dtype():
    """float32: the dtype of floating-point tensors made without ``dtype=``."""
    return DEFAULT_FLOAT


def set_default_dtype(d) -> None:
    """Only float32 is accepted: execmode's default float dtype is fixed (pass ``dtype=``
    where a tensor is made, or cast with ``.double()``)."""
    if isinstance(d, np.dtype) and d == DEFAULT_FLOAT:
        return
    raise DTypeError(f"torch.set_default_dtype({d!r}): execmode's default float dtype is "
                     "float32; pass dtype= where a tensor is made (or x.double())")


def finfo(d=None):
    """Machine limits of a float dtype (NumPy's ``finfo``: ``eps``, ``max``, ``min``,
    ``tiny``)."""
    return np.finfo(DEFAULT_FLOAT if d is None else d)


def iinfo(d):
    """Machine limits of an integer dtype (NumPy's ``iinfo``)."""
    return np.iinfo(d)


__all__ = ["bfloat16", "bool", "double", "dtype", "finfo", "float", "float16", "float32",
           "float64", "get_default_dtype", "half", "iinfo", "int", "int8", "int16", "int32",
           "int64", "long", "set_default_dtype", "short", "uint8"]
