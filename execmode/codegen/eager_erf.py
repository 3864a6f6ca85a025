"""erf in C for eager calls (ops/erf.py), compiled once per machine.

float64: ``eager_erf.c`` evaluates fdlibm's intervals with the same double operations in the
same order as ops/erf.py's NumPy version, with the kernels' flags (``-O3 -march=native
-ffp-contract=off``, no fast-math): the same bits. Only the tails' two ``exp`` calls
(1.25 <= |x| < 6) stay NumPy's, whose exp is not libm's: ``split`` computes every other
element and finds the tails, ``exponents`` gives theirs, NumPy exponentiates, ``finish``
completes them. float32: the kernels' ``em_erf_f32`` (codegen/em_dialect_c.h, included),
whose bits ops/erf_float32.py reproduces in NumPy. GELU's forward and its one-node
gradients (ops/erf.py's gelu_native and gelu_grads_native) run in the same library. The ops
cannot import codegen: :func:`load` is handed to ops/erf.py as its loader
(codegen/eager_operators.py, at import), and ops/erf.py calls it after a few large calls,
so a short script never compiles. ``EXECMODE_EAGER_OPERATORS=0`` keeps NumPy.
"""

from __future__ import annotations

import ctypes

from .buffers import data_pointer
from .native_library import load_library

_P = ctypes.c_void_p


_N = ctypes.c_int64
# Each entry point: its name (em_<name>_f32 / _f64), the dtypes it has, argument types and
# result type.
_ENTRIES = {
    "erf_split": (("f64",), (_P, _P, _N, _P), _N),
    "erf_exponents": (("f64",), (_P, _P, _N, _P, _P), None),
    "erf_finish": (("f64",), (_P, _P, _P, _P, _N), None),
    "gelu_split": (("f64",), (_P, _P, _P, _P, _N, _P), _N),
    "gelu_finish": (("f64",), (_P, _P, _P, _N), None),
    "erf_array": (("f32",), (_P, _P, _N), None),
    "gelu": (("f32",), (_P, _P, _P, _P, _P, _N), None),
    "gelu_square": (("f32", "f64"), (_P, _P, _N), None),
    "gelu_grads": (("f32", "f64"), (_P, _P, _P, _P, _P, _P, _N), None),
}
_ITEMSIZE = {"f32": 4, "f64": 8}


class _Kernels:
    """On C-contiguous arrays of one size: float32's ``erf(x, out)`` and ``gelu``;
    float64's ``split(x, out, tail)`` (the number of tail elements), ``exponents(x, tail,
    k, e1, e2)``, ``finish(x, out, tail, factors, k)``, ``gelu_split``, ``gelu_finish``;
    both types' ``gelu_square`` and ``gelu_grads``."""

    def __init__(self, cdll):
        self._cdll = cdll  # keeps the library loaded
        self._fns = {}  # (entry, itemsize) -> the ctypes function
        for entry, (types, argtypes, returns) in _ENTRIES.items():
            for name in types:
                fn = getattr(cdll, f"em_{entry}_{name}")
                fn.argtypes, fn.restype = argtypes, returns
                self._fns[entry, _ITEMSIZE[name]] = fn

    def erf(self, x, out) -> None:
        self._fns["erf_array", 4](data_pointer(x), data_pointer(out), x.size)

    def gelu(self, x, scaled, half, shifted, out) -> None:
        self._fns["gelu", 4](*(data_pointer(a) for a in (x, scaled, half, shifted, out)),
                             x.size)

    def split(self, x, out, tail) -> int:
        return self._fns["erf_split", x.dtype.itemsize](data_pointer(x), data_pointer(out),
                                                        x.size, data_pointer(tail))

    def exponents(self, x, tail, k: int, e1, e2) -> None:
        self._fns["erf_exponents", x.dtype.itemsize](data_pointer(x), data_pointer(tail), k,
                                                     data_pointer(e1), data_pointer(e2))

    def finish(self, x, out, tail, factors, k: int) -> None:
        self._fns["erf_finish", x.dtype.itemsize](data_pointer(x), data_pointer(out),
                                                  data_pointer(tail), data_pointer(factors), k)

    # float64 GELU (nn/plain.py's gelu_saving): x's products and the erf but for its
    # tails; the tails go through exponents and finish on ``scaled``.
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
    cdll = load_library("eager_erf.c", build, headers=("em_dialect_c.h",))
    return None if cdll is None else _Kernels(cdll)


__all__ = ["load"]
