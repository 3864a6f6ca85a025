"""Dtypes: execmode uses NumPy's dtype objects directly.

``em.float32 is np.dtype("float32")``, so tensors, NumPy arrays and CuPy arrays speak the same
dtype language and promotion follows NumPy's rules (NEP 50 in NumPy 2: Python scalars are
*weak*, so ``x * 0.5`` stays float32 when ``x`` is float32). The dtypes are the Array API
standard's: bool, the signed and unsigned integers of 8 to 64 bits, float32/float64 and
complex64/complex128 (no half precision).
"""

from __future__ import annotations

import numpy as np

from .errors import DTypeError

float32 = np.dtype("float32")
float64 = np.dtype("float64")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
bool_ = np.dtype("bool")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
uint8 = np.dtype("uint8")
uint16 = np.dtype("uint16")
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")

# The first five keep their positions: distributed/exchange.py numbers dtypes by them.
SUPPORTED = (float32, float64, int32, int64, bool_, int8, int16, uint8, uint16, uint32,
             uint64, complex64, complex128)
# The dtypes the generated C/CUDA kernels have types and helpers for. Ops on the others
# (small and unsigned integers, complex) run on NumPy/CuPy under jit, with the reason in
# the pass record (passes/fuse.py, kernel_dtype_refusal).
KERNEL_DTYPES = frozenset((float32, float64, int32, int64, bool_))
DEFAULT_FLOAT = float32
DEFAULT_INT = int64
DEFAULT_COMPLEX = complex64  # the complex of the default float, as the standard asks

# Short names used in the graph IR's text form ("f32[64,512]"), as in jaxprs.
SHORT_NAMES = {float32: "f32", float64: "f64", int32: "i32", int64: "i64", bool_: "bool",
               int8: "i8", int16: "i16", uint8: "u8", uint16: "u16", uint32: "u32",
               uint64: "u64", complex64: "c64", complex128: "c128"}
_FROM_SHORT = {v: k for k, v in SHORT_NAMES.items()}

_ALIASES = {
    "float": float32, "float32": float32, "f32": float32,
    "double": float64, "float64": float64, "f64": float64,
    "int": int64, "int64": int64, "i64": int64, "long": int64,
    "int32": int32, "i32": int32,
    "bool": bool_,
    "int8": int8, "int16": int16, "short": int16,
    "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
    "complex64": complex64, "cfloat": complex64, "complex128": complex128,
    "cdouble": complex128,
}


def as_dtype(value) -> np.dtype:
    """Normalise a user's dtype spelling (em.float32, "float32", np.float32, float, bool)."""
    if isinstance(value, np.dtype):
        dt = value
    elif isinstance(value, str):
        if value not in _ALIASES and value not in _FROM_SHORT:
            raise DTypeError(f"unknown dtype {value!r}; expected one of {sorted(_ALIASES)}")
        dt = _ALIASES.get(value) or _FROM_SHORT[value]
    elif value is float:
        dt = float32
    elif value is int:
        dt = int64
    elif value is bool:
        dt = bool_
    elif value is complex:
        dt = DEFAULT_COMPLEX
    else:
        refusal = getattr(value, "execmode_refusal", None)  # execmode.torch's bfloat16
        if refusal is not None:
            raise DTypeError(refusal)
        try:
            dt = np.dtype(value)
        except TypeError:
            raise DTypeError(f"{value!r} is not a dtype") from None
    if dt not in SUPPORTED:
        raise DTypeError(
            f"dtype {dt} is not supported; execmode supports "
            + ", ".join(str(d) for d in SUPPORTED)
            + (" (half precision is not: compute in float32)" if dt.kind == "f" else "")
        )
    return dt



def is_dtype_name(text) -> bool:
    """Whether a string names a dtype (``"float64"``), not a device (``"cuda:0"``): how
    ``x.to(...)`` and ``module.to(...)`` tell them apart."""
    if not isinstance(text, str):
        return False
    try:
        as_dtype(text)
        return True
    except TypeError:
        return False

def short_name(dt: np.dtype) -> str:
    return SHORT_NAMES.get(dt, str(dt))


def type_text(shape, dtype, device=None) -> str:
    """``f32[3,4]``: how every message, IR text and session row spells a value's type, with
    ``@device`` appended when one is given (``f32[3,4]@cpu``). A dtype outside the table
    reads as NumPy names it; an unknown shape (None) reads ``?``."""
    name = short_name(dtype) if isinstance(dtype, np.dtype) else str(dtype)
    dims = ",".join(str(d) for d in shape) if shape is not None else "?"
    text = f"{name}[{dims}]"
    return text if device is None else f"{text}@{device}"


def from_short_name(name: str) -> np.dtype:
    return _FROM_SHORT[name]


def is_floating(dt: np.dtype) -> bool:
    return dt.kind == "f"


def result_type(*operands) -> np.dtype:
    """NumPy's promotion with weak Python scalars; operands are dtypes or Python scalars."""
    return np.result_type(*operands)


def default_dtype_for(data) -> np.dtype:
    """The dtype ``em.tensor(data)`` picks when none is given.

    Data that has a supported dtype already (a NumPy array or scalar) keeps it, as in
    ``torch.tensor``; Python numbers and lists of them give float32 for floats (like
    PyTorch), complex64 for complex numbers, int64 for ints and bool for bools.
    """
    dt = getattr(data, "dtype", None)
    if isinstance(dt, np.dtype) and dt in SUPPORTED:
        return dt
    arr = np.asarray(data)
    if arr.dtype.kind == "f":
        return float32
    if arr.dtype.kind in "iu":
        return int64
    if arr.dtype.kind == "c":
        return DEFAULT_COMPLEX
    if arr.dtype.kind == "b":
        return bool_
    raise DTypeError(f"cannot make a tensor from data of dtype {arr.dtype}")
