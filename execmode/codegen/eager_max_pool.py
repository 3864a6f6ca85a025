"""Max pooling's primitives in C for eager calls and plan steps (ops/pooling.py), compiled
once per machine from native/max_pool.c. The ops cannot import codegen: :func:`load` is
handed to ops/pooling.py as its loader (codegen/eager_operators.py, at import), and the
first max pooling on a float32/float64 NumPy array calls it. ``EXECMODE_EAGER_OPERATORS=0``
keeps NumPy.
"""

from __future__ import annotations

import ctypes

from .native_library import load_library

_POINTER = ctypes.c_void_p


def _address(a) -> int:
    # __array_interface__ costs a few hundred ns; ``a.ctypes.data`` several microseconds.
    return a.__array_interface__["data"][0]


def _check(status: int) -> None:
    if status:
        raise MemoryError("max pooling: no memory for the windows' columns")


class _Kernels:
    """``select(h, x, out, index_or_None, dims)`` and ``scatter(g, x, out, dims)`` on
    C-contiguous arrays of x's dtype (float32 or float64); dims: int64, native/max_pool.c's
    order."""

    def __init__(self, cdll):
        self._cdll = cdll  # keeps the library loaded
        self._select, self._scatter = {}, {}
        for sfx in ("f32", "f64"):
            select = getattr(cdll, f"em_max_pool_select_{sfx}")
            select.argtypes = (_POINTER,) * 5
            select.restype = ctypes.c_int
            scatter = getattr(cdll, f"em_max_pool_scatter_{sfx}")
            scatter.argtypes = (_POINTER,) * 4
            scatter.restype = ctypes.c_int
            self._select[sfx], self._scatter[sfx] = select, scatter

    def select(self, h, x, out, index, dims) -> None:
        sfx = "f32" if x.dtype.itemsize == 4 else "f64"
        _check(self._select[sfx](_address(h), _address(x), _address(out),
                                 None if index is None else _address(index), _address(dims)))

    def scatter(self, g, x, out, dims) -> None:
        sfx = "f32" if x.dtype.itemsize == 4 else "f64"
        _check(self._scatter[sfx](_address(g), _address(x), _address(out), _address(dims)))


def load():
    """The compiled kernels, or None (switched off, no compiler, a failed build)."""
    cdll = load_library("max_pool.c")
    return None if cdll is None else _Kernels(cdll)


__all__ = ["load"]
