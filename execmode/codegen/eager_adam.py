"""Adam's and AdamW's per-parameter update in C for the optimizers' plain path
(optim/plain.py), compiled once per machine.

``eager_adam.c`` makes, per element, the float operations ``_adam_chunk``'s NumPy passes
make, in the same order and dtype (the kernels' flags: no contraction, no fast-math): the
same bits in one pass over the parameter, its gradient and moments instead of ~14. The
optimizers cannot import codegen: :func:`load` is handed to optim/plain.py as its loader
(codegen/eager_operators.py, at import), and plain.py calls it after a few steps, so a
short script never compiles. ``EXECMODE_EAGER_OPERATORS=0`` keeps NumPy.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .buffers import data_pointer
from .native_library import load_library

_P = ctypes.c_void_p


class _Kernels:
    """``update(p, g, m, v, constants, flags)`` on flat C-contiguous arrays of one dtype
    (float32 or float64), ``update_many`` on a group's; ``constants``: plain.py's ten, as
    an array of that dtype."""

    def __init__(self, cdll):
        self._cdll = cdll  # keeps the library loaded
        self._fns, self._many = {}, {}
        for sfx, dtype in (("f32", np.float32), ("f64", np.float64)):
            fn = getattr(cdll, f"em_adam_{sfx}")
            fn.argtypes = (_P, _P, _P, _P, ctypes.c_int64, _P, ctypes.c_int)
            fn.restype = None
            self._fns[np.dtype(dtype)] = fn
            many = getattr(cdll, f"em_adam_many_{sfx}")
            many.argtypes = (ctypes.c_int64, _P, _P, _P, ctypes.c_int)
            many.restype = None
            self._many[np.dtype(dtype)] = many

    def update(self, p, g, m, v, constants, flags: int) -> None:
        self._fns[p.dtype](data_pointer(p), data_pointer(g), data_pointer(m),
                           data_pointer(v), p.size, data_pointer(constants), flags)

    def update_many(self, flats: list, constants, flags: int) -> None:
        """``update`` of every ``(p, g, m, v)`` in ``flats`` (one dtype, memory apart), in
        one call."""
        ptrs = np.array([data_pointer(a) for arrays in flats for a in arrays], np.uintp)
        sizes = np.array([arrays[0].size for arrays in flats], np.int64)
        self._many[constants.dtype](len(flats), data_pointer(ptrs), data_pointer(sizes),
                                    data_pointer(constants), flags)


def load():
    """The compiled kernels, or None (switched off, no compiler, a failed build)."""
    cdll = load_library("eager_adam.c")
    return None if cdll is None else _Kernels(cdll)


__all__ = ["load"]
