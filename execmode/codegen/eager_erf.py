"""erf's inner intervals in C for eager calls (ops/erf.py), compiled once per machine.

``eager_erf.c`` evaluates fdlibm's two inner intervals (|x| < 1.25, where nearly every GELU
input falls) with the same double operations in the same order as ops/erf.py's NumPy
version, vectorised with the kernels' flags (``-O3 -march=native -ffp-contract=off``, no
fast-math): the same bits, ~5x faster. ops/erf.py computes the outer intervals and NaN with
NumPy as before. The ops cannot import codegen: :func:`load` is handed to ops/erf.py as its
loader (codegen/eager_operators.py, at import), and ops/erf.py calls it after a few large
calls, so a short script never compiles. ``EXECMODE_EAGER_OPERATORS=0`` keeps NumPy.
"""

from __future__ import annotations

import ctypes

from .native_library import load_library


class _Kernels:
    """``f32(x, out)`` / ``f64(x, out)`` on C-contiguous arrays of one size and dtype."""

    def __init__(self, cdll):
        self._cdll = cdll  # keeps the library loaded
        self._fns = {}
        for name in ("f32", "f64"):
            fn = getattr(cdll, f"em_erf_inner_{name}")
            fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
            fn.restype = None
            self._fns[name] = fn

    def __call__(self, x, out) -> None:
        self._fns["f32" if x.dtype.itemsize == 4 else "f64"](x.ctypes.data, out.ctypes.data,
                                                              x.size)


def load():
    """The compiled kernels, or None (switched off, no compiler, a failed build)."""
    cdll = load_library("eager_erf.c")
    return None if cdll is None else _Kernels(cdll)


__all__ = ["load"]
