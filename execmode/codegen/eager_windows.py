"""The sliding-window primitives in C (max pooling, im2col, col2im: native/windows.c) for
eager calls and plan steps, compiled once per machine. The ops cannot import codegen:
:func:`load` is handed to ops/window_kernels.py as its loader (codegen/eager_operators.py,
at import), and the first such op on a float32/float64 NumPy array calls it.
``EXECMODE_EAGER_OPERATORS=0`` keeps NumPy.
"""

from __future__ import annotations

import ctypes

from .buffers import data_pointer
from .native_library import load_library

_POINTER = ctypes.c_void_p
# entry point: (pointer arguments, returns a status)
_FUNCTIONS = {"max_pool_select": (5, True), "max_pool_scatter": (4, True),
              "im2col": (3, False), "col2im": (3, False)}




class _Kernels:
    """The entry points on C-contiguous arrays of x's dtype (float32 or float64); dims:
    int64, in native/windows.c's order."""

    def __init__(self, cdll):
        self._cdll = cdll  # keeps the library loaded
        self._fns = {}
        for name, (pointers, status) in _FUNCTIONS.items():
            for sfx in ("f32", "f64"):
                fn = getattr(cdll, f"em_{name}_{sfx}")
                fn.argtypes = (_POINTER,) * pointers
                fn.restype = ctypes.c_int if status else None
                self._fns[name, sfx] = fn

    def address(self, name: str, dtype) -> int:
        """The entry point ``name`` for ``dtype``'s arrays, as an address (a whole-graph
        program calls it: codegen/program_windows.py)."""
        fn = self._fns[name, "f32" if dtype.itemsize == 4 else "f64"]
        return ctypes.cast(fn, ctypes.c_void_p).value

    def _call(self, name, dtype, *arrays) -> None:
        fn = self._fns[name, "f32" if dtype.itemsize == 4 else "f64"]
        if fn(*(None if a is None else data_pointer(a) for a in arrays)):
            raise MemoryError(f"{name}: no memory for the windows' offsets")

    def select(self, h, x, out, index, dims) -> None:
        self._call("max_pool_select", x.dtype, h, x, out, index, dims)

    def scatter(self, g, x, out, dims) -> None:
        self._call("max_pool_scatter", x.dtype, g, x, out, dims)

    def im2col(self, x, cols, dims) -> None:
        self._call("im2col", x.dtype, x, cols, dims)

    def col2im(self, cols, out, dims) -> None:
        self._call("col2im", cols.dtype, cols, out, dims)


def load():
    """The compiled kernels, or None (switched off, no compiler, a failed build)."""
    cdll = load_library("windows.c")
    return None if cdll is None else _Kernels(cdll)


__all__ = ["load"]
