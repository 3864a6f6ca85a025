"""erf in C for eager calls (ops/erf.py), compiled once per machine.

``eager_erf.c`` evaluates fdlibm's intervals with the same double operations in the same
order as ops/erf.py's NumPy version, with the kernels' flags (``-O3 -march=native
-ffp-contract=off``, no fast-math): the same bits. Only the tails' two ``exp`` calls
(1.25 <= |x| < 6) stay NumPy's, whose exp is not libm's: ``split`` computes every other
element and finds the tails, ``exponents`` gives theirs, NumPy exponentiates, ``finish``
completes them. GELU's forward and its one-node gradients (ops/erf.py's gelu_native and
gelu_grads_native) run in the same library, around the same split and NumPy's exp. The ops
cannot import codegen: :func:`load` is handed to ops/erf.py as its
loader (codegen/eager_operators.py, at import), and ops/erf.py calls it after a few large
calls, so a short script never compiles. ``EXECMODE_EAGER_OPERATORS=0`` keeps NumPy.
"""

from __future__ import annotations

import ctypes

from .buffers import data_pointer
from .native_library import load_library

_P = ctypes.c_void_p


_N = ctypes.c_int64
# Each entry point: its name (em_<name>_f32 / _f64), argument types and result type.
_ENTRIES = {
    "erf_split": ((_P, _P, _N, _P), _N),
    "erf_exponents": ((_P, _P, _N, _P, _P), None),
    "erf_finish": ((_P, _P, _P, _P, _N), None),
    "gelu_split": ((_P, _P, _P, _P, _N, _P), _N),
    "gelu_finish": ((_P, _P, _P, _N), None),
    "gelu_square": ((_P, _P, _N), None),
    "gelu_grads": ((_P, _P, _P, _P, _P, _P, _N), None),
}


class _Kernels:
    """On C-contiguous arrays of one size, float32 or float64: ``split(x, out, tail)``
    returns the number of tail elements, ``exponents(x, tail, k, e1, e2)``,
    ``finish(x, out, tail, factors, k)``; GELU's ``gelu_*`` below."""

    def __init__(self, cdll):
        self._cdll = cdll  # keeps the library loaded
        self._fns = {}  # (entry, itemsize) -> the ctypes function
        for name, itemsize in (("f32", 4), ("f64", 8)):
            for entry, (argtypes, returns) in _ENTRIES.items():
                fn = getattr(cdll, f"em_{entry}_{name}")
                fn.argtypes, fn.restype = argtypes, returns
                self._fns[entry, itemsize] = fn

    def split(self, x, out, tail) -> int:
        return self._fns["erf_split", x.dtype.itemsize](data_pointer(x), data_pointer(out),
                                                        x.size, data_pointer(tail))

    def exponents(self, x, tail, k: int, e1, e2) -> None:
        self._fns["erf_exponents", x.dtype.itemsize](data_pointer(x), data_pointer(tail), k,
                                                     data_pointer(e1), data_pointer(e2))

    def finish(self, x, out, tail, factors, k: int) -> None:
        self._fns["erf_finish", x.dtype.itemsize](data_pointer(x), data_pointer(out),
                                                  data_pointer(tail), data_pointer(factors), k)

    # GELU (nn/plain.py's gelu_saving, nn/one_node_layers.py's backward): x's products and
    # the erf but for its tails; the tails go through exponents and finish on ``scaled``.
    def gelu_split(self, x, scaled, half, erf_out, tail) -> int:
        return self._fns["gelu_split", x.dtype.itemsize](
            *(data_pointer(a) for a in (x, scaled, half, erf_out)), x.size, data_pointer(tail))

    def gelu_finish(self, half, shifted, out) -> None:
        self._fns["gelu_finish", half.dtype.itemsize](
            data_pointer(half), data_pointer(shifted), data_pointer(out), half.size)

    def gelu_square(self, scaled, u) -> None:
        self._fns["gelu_square", scaled.dtype.itemsize](data_pointer(scaled), data_pointer(u),
                                                       scaled.size)

    def gelu_grads(self, g, half, shifted, exp_u, through_erf, through_half) -> None:
        self._fns["gelu_grads", g.dtype.itemsize](
            *(data_pointer(a) for a in (g, half, shifted, exp_u, through_erf, through_half)),
            g.size)


def load(build: bool = True):
    """The compiled kernels, or None (switched off, no compiler, a failed build; with
    ``build=False``, none built on this machine yet)."""
    cdll = load_library("eager_erf.c", build)
    return None if cdll is None else _Kernels(cdll)


__all__ = ["load"]
