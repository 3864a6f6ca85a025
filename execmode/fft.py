"""``em.fft``: the part of the Array API's fft extension that is real-valued: the sample
frequencies (``fftfreq``, ``rfftfreq``) and the shifts (``fftshift``, ``ifftshift``).
The transforms themselves return complex arrays, and execmode has no complex dtypes yet
(docs/array-api.md), so ``fft``, ``ifft``, ``rfft`` ... are not here. Each function is a
composite of execmode's own (arange, roll), so it traces and differentiates as they do.
"""

from __future__ import annotations

from . import api as _em
from .errors import ArgumentError, op_error
from .functional.arguments import _int_arg, _tensor_arg, normalize_axis_for


def _frequencies(op, n, d, dtype, device):
    n = _int_arg(op, "n", n)
    if n <= 0:
        raise op_error(ArgumentError, op, (), f"n must be > 0, got {n}")
    return n, 1.0 / (n * float(d)), dtype or _em.float32


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies of an n-point transform: [0, 1, ..., -1] / (d * n)."""
    n, scale, dtype = _frequencies("fftfreq", n, d, dtype, device)
    k = _em.arange(n, dtype=_em.int64, device=device)
    k = _em.where(k < (n + 1) // 2, k, k - n)  # the second half counts up from -n/2
    return _em.astype(k, dtype) * _em.tensor(scale, dtype=dtype, device=device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The non-negative sample frequencies of an n-point real transform."""
    n, scale, dtype = _frequencies("rfftfreq", n, d, dtype, device)
    k = _em.arange(n // 2 + 1, dtype=dtype, device=device)
    return k * _em.tensor(scale, dtype=dtype, device=device)


def _shift(op, x, axes, sign):
    x = _tensor_arg(op, x)
    if axes is None:
        axes = tuple(range(x.ndim))
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    axes = tuple(normalize_axis_for(op, x, a) for a in axes)
    if not axes or x.ndim == 0:
        return _em.copy(x)
    shifts = tuple(sign * (x.shape[a] // 2) for a in axes)
    return _em.roll(x, shifts, axis=axes)


def fftshift(x, /, *, axes=None):
    """The zero frequency moved to the centre (every axis, or ``axes``)."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, /, *, axes=None):
    """The inverse of :func:`fftshift`."""
    return _shift("ifftshift", x, axes, -1)


__all__ = ["fftfreq", "fftshift", "ifftshift", "rfftfreq"]
