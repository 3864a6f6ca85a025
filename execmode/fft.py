"""``em.fft``: the Array API's fft extension (2024.12).

The transforms (``fft``, ``ifft``, ``fftn``, ``ifftn``, ``rfft``, ``irfft``, ``rfftn``,
``irfftn``, ``hfft``, ``ihfft``) are one op each (ops/fft.py): NumPy's (CuPy's) own
transform eagerly, and a plan step making the same call under jit. They return complex64
or complex128 tensors (the real-output ones float32 or float64), as precise as their input,
and differentiate in PyTorch's convention for complex values (ops/fft_grads.py). The
sample frequencies (``fftfreq``, ``rfftfreq``) and the shifts
(``fftshift``, ``ifftshift``) are composites of execmode's own functions (arange, roll),
so they trace and differentiate as those do.
"""

from __future__ import annotations

from . import api as _em
from .dispatch import apply as _apply
from .errors import ArgumentError, ArgumentValueError
from .functional.arguments import _int_arg, _tensor_arg, normalize_axis_for
from .op_errors import op_error
from .ops import OPS as _OPS

_NORMS = ("backward", "ortho", "forward")


def _transform(name, x, norm, **attrs):
    x = _tensor_arg(name, x)
    if norm not in _NORMS:
        raise op_error(ArgumentValueError, name, (x,),
                       f"norm must be one of {', '.join(map(repr, _NORMS))}, got {norm!r}")
    for key in ("n", "axis"):
        if attrs.get(key) is not None:
            attrs[key] = _int_arg(name, key, attrs[key])
    for key in ("s", "axes"):
        value = attrs.get(key)
        if value is not None:
            if not isinstance(value, tuple | list):
                raise op_error(ArgumentError, name, (x,),
                               f"{key} must be a sequence of ints, got {value!r}")
            attrs[key] = tuple(_int_arg(name, key, v) for v in value)
    return _apply(_OPS[f"fft_{name}"], x, norm=norm, **attrs)


def fft(x, /, *, n=None, axis=-1, norm="backward"):
    """The one-dimensional discrete Fourier transform along ``axis``."""
    return _transform("fft", x, norm, n=n, axis=axis)


def ifft(x, /, *, n=None, axis=-1, norm="backward"):
    """The inverse of :func:`fft`."""
    return _transform("ifft", x, norm, n=n, axis=axis)


def fftn(x, /, *, s=None, axes=None, norm="backward"):
    """The n-dimensional discrete Fourier transform over ``axes``."""
    return _transform("fftn", x, norm, s=s, axes=axes)


def ifftn(x, /, *, s=None, axes=None, norm="backward"):
    """The inverse of :func:`fftn`."""
    return _transform("ifftn", x, norm, s=s, axes=axes)


def rfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The transform of a real signal: the n // 2 + 1 non-negative frequencies."""
    return _transform("rfft", x, norm, n=n, axis=axis)


def irfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The inverse of :func:`rfft`: a real signal of n points (2 * (m - 1) by default)."""
    return _transform("irfft", x, norm, n=n, axis=axis)


def rfftn(x, /, *, s=None, axes=None, norm="backward"):
    """The n-dimensional transform of a real signal (the last axis halved)."""
    return _transform("rfftn", x, norm, s=s, axes=axes)


def irfftn(x, /, *, s=None, axes=None, norm="backward"):
    """The inverse of :func:`rfftn`."""
    return _transform("irfftn", x, norm, s=s, axes=axes)


def hfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The transform of a signal with Hermitian symmetry: a real spectrum of n points."""
    return _transform("hfft", x, norm, n=n, axis=axis)


def ihfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The inverse of :func:`hfft`: of a real signal, n // 2 + 1 complex points."""
    return _transform("ihfft", x, norm, n=n, axis=axis)


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


__all__ = ["fft", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifftn", "ifftshift",
           "ihfft", "irfft", "irfftn", "rfft", "rfftfreq", "rfftn"]
