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
import os

from ..native import source_path
from . import disk_cache
from .toolchain import NoCompiler, get_toolchain, run_compiler

SOURCE = source_path("eager_erf.c")


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
    if os.environ.get("EXECMODE_EAGER_OPERATORS", "1").strip() in ("0", "off", "no"):
        return None
    try:
        toolchain = get_toolchain()
    except NoCompiler:
        return None
    with open(SOURCE, encoding="utf-8") as f:
        source = f.read()
    flags = tuple(f for f in toolchain.flags if f not in ("-fopenmp", "-fopenmp-simd"))
    key = disk_cache.library_key(source, toolchain.identity + " eager_erf")
    path = disk_cache.library_path(f"eager_erf-{key}", folder="extensions")

    def build(output: str) -> None:
        src_path = disk_cache.temporary_path(path[:-3] + ".c")
        try:
            with open(src_path, "w", encoding="utf-8") as f:
                f.write(source)
            ok, message = run_compiler(toolchain.command, flags, src_path, output)
            if not ok:
                raise RuntimeError(f"eager_erf.c did not compile: {message}")
        finally:
            if os.path.exists(src_path):
                os.unlink(src_path)

    disk_cache.reuse_or_build(path, build)
    return _Kernels(ctypes.CDLL(path))


__all__ = ["load"]
