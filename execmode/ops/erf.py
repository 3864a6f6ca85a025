"""erf for NumPy arrays, vectorised.

float64: fdlibm's algorithm (the one glibc's ``erf`` and so Python's ``math.erf`` use),
written over whole arrays. NumPy has no erf ufunc. Calling ``math.erf`` per element cost
~65 ns an element; this evaluates each of fdlibm's four intervals on the elements that fall
in it, with the same rational approximations and constants: within 1 ulp of ``math.erf``
(most results identical; tests/engine/test_plain_paths.py).

float32: the generated kernels' own erf (``em_erf_f32`` in codegen/em_dialect_c.h, within
~1.1 ulp of the exact value, docs/kernels.md), in C (native/eager_erf.c) or with the same
bits in NumPy (ops/erf_float32.py): eager and compiled erf and GELU agree bit for bit.
fdlibm in double rounded to float32 was correctly rounded but cost ~2 ns an element in C,
six times PyTorch's erf (docs/pytorch.md). Other dtypes compute in float64 and round.

The C version (codegen/eager_erf.py) also makes GELU's forward and gradients for the
composites that run on arrays (nn/plain.py, nn/one_node_layers.py): :func:`gelu_native`,
:func:`gelu_grads_native`.
"""

from __future__ import annotations

import threading

import numpy as np

from . import erf_float32
from .native_kernels import NativeKernels

_ERX = 8.45062911510467529297e-01  # erf(1) rounded: the mid interval is erx + P/Q
# erf(x) = x + x * PP(x^2) / QQ(x^2) on |x| < 0.84375
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
# erf(x) = erx + PA(s) / QA(s), s = |x| - 1, on 0.84375 <= |x| < 1.25
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
# erfc(x) = exp(-x^2 - 0.5625 + R(s) / S(s)) / x, s = 1 / x^2, on 1.25 <= |x| < 1/0.35 (RA,
# SA) and 1/0.35 <= |x| < 6 (RB, SB)
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
       -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
       -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_SA = (1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
       6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
       6.57024977031928170135e+00, -6.04244152148580987438e-02)
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
       -4.83519191608651397019e+02)
_SB = (1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
       -2.24409524465858183362e+01)
_HIGH_WORD = np.uint64(0xFFFFFFFF00000000)


def _poly(z: np.ndarray, coeffs: tuple) -> np.ndarray:
    """coeffs[0] + coeffs[1] z + ... by Horner's rule, in place on one new array."""
    out = np.multiply(z, coeffs[-1])
    out += coeffs[-2]
    for c in coeffs[-3::-1]:
        out *= z
        out += c
    return out


def erf_float64(x: np.ndarray) -> np.ndarray:
    """erf of a float64 array (a new array of its shape)."""
    flat = x.ravel()
    ax = np.abs(flat)
    out = np.empty_like(flat)
    with np.errstate(all="ignore"):
        # Each interval's positions by flatnonzero of a mask over the whole array:
        # indexing an index array with a boolean mask cost ~4x as much (~4 ns an element).
        inner = ax < 0.84375
        small = np.flatnonzero(inner)
        if small.size:
            v = flat[small]
            z = v * v
            r = _poly(z, _PP)
            r /= _poly(z, _QQ)
            r *= v
            r += v  # v + v * (PP / QQ), in place (the same operations, the same bits)
            out[small] = r
        if small.size < flat.size:  # NaN lands below, and is put back there
            _erf_outer(flat, ax, inner, out)
    return out.reshape(x.shape)


def _erf_outer(flat, ax, inner, out) -> None:
    below = ax < 1.25
    mid = np.flatnonzero(below & ~inner)
    if mid.size:
        s = ax[mid] - 1.0
        out[mid] = np.copysign(_ERX + _poly(s, _PA) / _poly(s, _QA), flat[mid])
    below_near = ax < 1 / 0.35
    near = np.flatnonzero(below_near & ~below)
    if near.size:
        _erf_tail(flat, ax, near, out, _RA, _SA)
    below_far = ax < 6.0
    far = np.flatnonzero(below_far & ~below_near)
    if far.size:
        _erf_tail(flat, ax, far, out, _RB, _SB)
    big = np.flatnonzero(~below_far)  # erf rounds to +-1 from 6 on (inf included); NaN too
    if big.size:
        out[big] = np.where(np.isnan(flat[big]), flat[big], np.copysign(1.0, flat[big]))


def _erf_tail(flat, ax, where, out, num, den) -> None:
    """1 - erfc(|x|) on ``where``, erfc from fdlibm's exp(-x^2 - 0.5625 + R/S) / x."""
    a = ax[where]
    s = 1.0 / (a * a)
    # z: a with its low 32 bits cleared, so that z * z is exact (fdlibm's split).
    z = (a.view(np.uint64) & _HIGH_WORD).view(np.float64)
    e = np.exp(-z * z - 0.5625) * np.exp((z - a) * (z + a) + _poly(s, num) / _poly(s, den))
    out[where] = np.copysign(1.0 - e / a, flat[where])


# erf in C but for the tails' exp (codegen/eager_erf.py); NumPy where there are none.
# Calls of at least this many elements ask for them (a compile, once per machine, after
# NATIVE_AFTER_CALLS such calls): a script of a few small erf calls compiles nothing.
NATIVE_MIN_SIZE = 4096
NATIVE_AFTER_CALLS = 3
NATIVE = NativeKernels(after_calls=NATIVE_AFTER_CALLS)


# The tails' indices go into a buffer kept per thread (up to this many elements): a fresh
# one of the input's size at every call had its pages faulted in by the scan that fills
# it, which cost as much as the scan on a virtual machine.
_SCRATCH_MAX = 1 << 21
_scratch = threading.local()


def _tail_indices(n: int) -> np.ndarray:
    if n > _SCRATCH_MAX:
        return np.empty(n, np.int64)
    buf = getattr(_scratch, "tail", None)
    if buf is None or buf.size < n:
        buf = _scratch.tail = np.empty(max(n, 4096), np.int64)
    return buf


def _erf_native(kernels, a: np.ndarray) -> np.ndarray:
    """erf_float64's bits for a float64 array: every interval in C, the tails'
    exponentials by NumPy's exp (as _erf_tail makes them) between the two C passes."""
    out = np.empty(a.shape, a.dtype)
    tail = _tail_indices(a.size)  # (split reads none of it; beyond the tails, untouched)
    _finish_tails(kernels, a, out, tail, kernels.split(a, out, tail))
    return out


def _native_for(*arrays):
    """The C kernels when every array is a non-empty C-contiguous float32/float64 one of
    the first's dtype and size, and the kernels are there: loaded after a few calls of at
    least NATIVE_MIN_SIZE elements, which may compile them; for smaller arrays, only when
    that needs no compile (loaded, or built on this machine before): 16 float64 elements
    took 71 us through the NumPy passes and 6.5 us in C here (float32's NumPy version,
    with its emulated fused steps, ~135 us), the same bits. Else None."""
    a = arrays[0]
    if a.size == 0 or not (a.dtype == np.float32 or a.dtype == np.float64) \
            or any(x.dtype != a.dtype or x.size != a.size or not x.flags.c_contiguous
                   for x in arrays):
        return None
    return NATIVE.get() if a.size >= NATIVE_MIN_SIZE else NATIVE.built()


def _finish_tails(kernels, x, out, tail, k: int) -> None:
    """The tail elements' erf (1.25 <= |x| < 6): C's exponents, NumPy's exp, C's finish."""
    if k:
        e1, e2 = np.empty(k, np.float64), np.empty(k, np.float64)
        kernels.exponents(x, tail, k, e1, e2)
        with np.errstate(all="ignore"):
            factors = np.exp(e1) * np.exp(e2)
        kernels.finish(x, out, tail, factors, k)


def gelu_native(a: np.ndarray):
    """nn/plain.py's gelu_saving in C (the same bits): ``(out, (half, scaled, shifted))``,
    or None where the C does not apply."""
    kernels = _native_for(a)
    if kernels is None:
        return None
    scaled, half, shifted, out = (np.empty(a.shape, a.dtype) for _ in range(4))
    if a.dtype == np.float32:
        kernels.gelu(a, scaled, half, shifted, out)
        return out, (half, scaled, shifted)
    tail = _tail_indices(a.size)
    k = kernels.gelu_split(a, scaled, half, shifted, tail)
    _finish_tails(kernels, scaled, shifted, tail, k)
    kernels.gelu_finish(half, shifted, out)
    return out, (half, scaled, shifted)


def gelu_grads_native(g: np.ndarray, half, scaled, shifted):
    """nn/one_node_layers.py's gelu gradients in C but for NumPy's exp (the same bits):
    ``(through erf, through 0.5 * x)``, or None where the C does not apply."""
    kernels = _native_for(g, half, scaled, shifted)
    if kernels is None:
        return None
    u = np.empty(g.shape, g.dtype)
    kernels.gelu_square(scaled, u)
    np.exp(u, out=u)
    through_erf, through_half = np.empty(g.shape, g.dtype), np.empty(g.shape, g.dtype)
    kernels.gelu_grads(g, half, shifted, u, through_erf, through_half)
    return through_erf, through_half


def erf_array(a: np.ndarray) -> np.ndarray:
    """erf of a NumPy array: float32 as the kernels compute it; other floats compute in
    float64 and round once; integers and bool give float64 (as math.erf gave them)."""
    if a.dtype == np.float32:
        if not a.flags.c_contiguous:
            a = a.copy()  # (np.ascontiguousarray would make a 0-d array 1-d)
        kernels = _native_for(a)
        if kernels is None:
            return erf_float32.erf(a)
        out = np.empty(a.shape, a.dtype)
        kernels.erf(a, out)
        return out
    kernels = _native_for(a)
    if kernels is not None:
        return _erf_native(kernels, a)
    if a.dtype == np.float64:
        return erf_float64(a)
    out = erf_float64(a.astype(np.float64))
    return out.astype(a.dtype) if a.dtype.kind == "f" else out


__all__ = ["NATIVE", "erf_array", "erf_float64", "gelu_grads_native", "gelu_native"]
