"""The Array API's data type functions: ``finfo``, ``iinfo``, ``isdtype``, ``result_type``
and ``can_cast``, over the standard's dtypes (bool, int8 ... uint64, float32, float64,
complex64, complex128).

Dtypes are NumPy's dtype objects (``em.float32 is np.dtype("float32")``), so the limits
are NumPy's; promotion is NumPy's with Python scalars weak (NEP 50), restricted to the
pairs the standard defines: within bool, within the integers (uint64 with a signed
integer has no integer wide enough: NumPy's float64 is not the standard's), and within
the floating kinds (real with complex gives complex).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._tensor import Tensor
from ..dtypes import SUPPORTED, as_dtype
from ..errors import DTypeError


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's name for what finfo returns
    """Machine limits of a floating-point dtype (what :func:`finfo` returns)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801
    """Machine limits of an integer dtype (what :func:`iinfo` returns)."""

    bits: int
    max: int
    min: int
    dtype: np.dtype


def _dtype_of(name, value) -> np.dtype:
    if isinstance(value, Tensor):
        return value.dtype
    if value is None:  # np.dtype(None) is float64; the standard has no default here
        raise DTypeError(f"{name}: expected a dtype or a tensor, got None")
    try:
        return as_dtype(value)
    except DTypeError as e:
        raise DTypeError(f"{name}: {e}") from None


def finfo(type, /) -> finfo_object:  # noqa: A002 - the standard's parameter name
    """Limits of a floating-point dtype, or of a tensor's: ``bits``, ``eps``, ``max``,
    ``min``, ``smallest_normal`` (Python floats) and ``dtype``. For a complex dtype they
    are its real and imaginary parts' (``finfo(em.complex64).dtype`` is float32, as the
    standard says).

    :raises DTypeError: (a TypeError) for a dtype that is not a float (``em.iinfo``
        answers for ints).
    """
    dt = _dtype_of("finfo", type)
    if dt.kind not in "fc":
        raise DTypeError(f"finfo: {dt} is not a floating-point dtype (use iinfo)")
    info = np.finfo(dt)
    dt = np.dtype(info.dtype)  # a complex dtype's parts
    return finfo_object(bits=int(info.bits), eps=float(info.eps), max=float(info.max),
                        min=float(info.min), smallest_normal=float(info.smallest_normal),
                        dtype=dt)


def iinfo(type, /) -> iinfo_object:  # noqa: A002
    """Limits of an integer dtype, or of a tensor's: ``bits``, ``max``, ``min`` (Python
    ints) and ``dtype``.

    :raises DTypeError: (a TypeError) for a dtype that is not an integer (bool included).
    """
    dt = _dtype_of("iinfo", type)
    if dt.kind not in "iu":
        raise DTypeError(f"iinfo: {dt} is not an integer dtype (use finfo for floats)")
    info = np.iinfo(dt)
    return iinfo_object(bits=int(info.bits), max=int(info.max), min=int(info.min), dtype=dt)


_KINDS = {
    "bool": lambda dt: dt.kind == "b",
    "signed integer": lambda dt: dt.kind == "i",
    "unsigned integer": lambda dt: dt.kind == "u",
    "integral": lambda dt: dt.kind in "iu",
    "real floating": lambda dt: dt.kind == "f",
    "complex floating": lambda dt: dt.kind == "c",
    "numeric": lambda dt: dt.kind in "iufc",
}


def isdtype(dtype, kind) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, one of the standard's kind names
    (``"bool"``, ``"signed integer"``, ``"unsigned integer"``, ``"integral"``,
    ``"real floating"``, ``"complex floating"``, ``"numeric"``), or a tuple of these.

    :raises DTypeError: (a TypeError) if ``dtype`` is not a dtype execmode has, or ``kind``
        is not a dtype, a kind name or a tuple of them.
    """
    if not isinstance(dtype, np.dtype) or dtype not in SUPPORTED:
        raise DTypeError(f"isdtype: expected a dtype of execmode, got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise DTypeError(f"isdtype: unknown kind {kind!r}; expected one of "
                             + ", ".join(repr(k) for k in _KINDS))
        return _KINDS[kind](dtype)
    if isinstance(kind, np.dtype):
        return dtype == kind
    raise DTypeError(f"isdtype: kind must be a dtype, a kind name or a tuple, got {kind!r}")


def _family(dt: np.dtype) -> str:
    return "b" if dt.kind == "b" else "i" if dt.kind in "iu" else "f"


def _undefined_mix(dtypes) -> bool:
    """Pairs the standard's promotion table leaves out: across bool, integers and
    floating kinds, and uint64 with a signed integer (NumPy answers float64)."""
    if len({_family(d) for d in dtypes}) > 1:
        return True
    return any(d == np.uint64 for d in dtypes) and any(d.kind == "i" for d in dtypes)


def result_type(*arrays_and_dtypes) -> np.dtype:
    """The dtype the standard's promotion gives for tensors, dtypes and Python scalars
    (scalars are weak: ``result_type(em.float32, 1.0)`` is float32).

    :raises DTypeError: (a TypeError) with no tensor or dtype among the arguments, or
        for a mix the standard leaves undefined (bool with a number, integers with floats,
        uint64 with a signed integer, a Python complex with an integer).
    """
    dtypes, scalars = [], []
    for a in arrays_and_dtypes:
        if isinstance(a, Tensor):
            dtypes.append(a.dtype)
        elif isinstance(a, (bool, int, float, complex)) and not isinstance(a, np.generic):
            scalars.append(a)
        else:
            dtypes.append(_dtype_of("result_type", a))
    if not dtypes:
        raise DTypeError("result_type: at least one tensor or dtype is required")
    if _undefined_mix(dtypes):
        raise DTypeError("result_type: the Array API defines no promotion between "
                        + " and ".join(str(d) for d in dict.fromkeys(dtypes)))
    out = np.result_type(*dtypes)
    for s in scalars:
        family = _family(out)
        if isinstance(s, bool) and family != "b" or (not isinstance(s, bool) and (
                family == "b" or family == "i" and isinstance(s, (float, complex)))):
            raise DTypeError(f"result_type: a Python {type(s).__name__} does not promote "
                            f"with {out}")
        if isinstance(s, complex) and out.kind == "f":  # float32 with 1j is complex64
            out = np.result_type(out, np.complex64)
    return out


def can_cast(from_, to, /) -> bool:
    """Whether ``from_`` (a dtype or a tensor) casts to ``to`` without losing values:
    NumPy's safe casting, which the conformance suite checks (bool to any dtype, integers
    to integers that hold all their values and to float64, floats to wider-or-equal
    floats and to complex dtypes at least as precise; the standard leaves the cross-kind
    casts to the library). A float never casts to an int, a complex never to a float."""
    src = _dtype_of("can_cast", from_)
    dst = _dtype_of("can_cast", to)
    return bool(np.can_cast(src, dst, casting="safe"))
