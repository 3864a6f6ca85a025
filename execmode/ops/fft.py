"""The Array API's fft transforms: ``fft``, ``ifft``, ``fftn``, ``ifftn``, ``rfft``,
``irfft``, ``rfftn``, ``irfftn``, ``hfft`` and ``ihfft``, each one OPAQUE op over NumPy's
``numpy.fft`` (CuPy's ``cupy.fft`` on a GPU).

Under em.jit each is a plan step making the same library call as eagerly (a transform is
not an elementwise expression, and the kernels have no complex type), so graph mode gives
eager's bits. Precision follows the input, as in NumPy 2: float32 and complex64 transform
in single precision, float64 and complex128 in double. Each has a vjp, the transform's
adjoint in PyTorch's convention for complex values (fft_grads.py).
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentValueError, DTypeError
from .complex_grad import complex_differentiable
from .fft_grads import vjp_of
from .registry import OPAQUE, OpDef, RuleError, normalize_axis, register

_COMPLEX_OF = {np.dtype("float32"): np.dtype("complex64"),
               np.dtype("float64"): np.dtype("complex128"),
               np.dtype("complex64"): np.dtype("complex64"),
               np.dtype("complex128"): np.dtype("complex128")}
_REAL_OF = {c: np.dtype(c.type(0).real.dtype) for c in _COMPLEX_OF.values()}
_REAL_OF.update({f: f for f in _COMPLEX_OF if f.kind == "f"})


def _dtype_rule(name, takes, gives):
    """``takes``: the input kinds ("fc" or "f"); ``gives``: "complex" or "real"."""
    def rule(dtypes, attrs):
        dt = dtypes[0]
        if dt.kind not in takes:
            wanted = "a real floating-point" if takes == "f" else "a floating-point"
            raise RuleError(f"{name} needs {wanted} tensor, got {dt}", DTypeError)
        return _COMPLEX_OF[dt] if gives == "complex" else _REAL_OF[dt]
    return rule


def _length(name, value, what):
    if value is not None and value < 1:
        raise RuleError(f"{name}: {what} must be >= 1, got {value}", ArgumentValueError)


def _one_axis_rule(name, halves):
    """The shape of a transform along one axis: ``halves`` "in" (rfft, ihfft: n//2+1
    outputs), "out" (irfft, hfft: n outputs, 2*(m-1) by default) or None (fft, ifft)."""
    def rule(x, *, n, axis, norm):
        shape = list(x.shape)
        if not shape:
            raise RuleError(f"{name} needs a tensor of rank >= 1, got a 0-d tensor")
        axis = normalize_axis(axis, len(shape))
        _length(name, n, "n")
        m = shape[axis]
        if halves == "out":
            size = n if n is not None else 2 * (m - 1)
            if size < 1:
                raise RuleError(f"{name}: {size} output points along axis {axis} (an axis "
                                f"of {m}); give n >= 1", ArgumentValueError)
        else:
            size = n if n is not None else m
            if size < 1:
                raise RuleError(f"{name}: an empty axis {axis} has no transform",
                                ArgumentValueError)
            if halves == "in":
                size = size // 2 + 1
        shape[axis] = size
        return tuple(shape)
    return rule


def _axes_and_sizes(name, shape, s, axes):
    ndim = len(shape)
    if axes is None:
        axes = tuple(range(ndim)) if s is None else tuple(range(ndim - len(s), ndim))
    axes = tuple(normalize_axis(a, ndim) for a in axes)
    if len(set(axes)) != len(axes):
        raise RuleError(f"{name}: axes {axes} repeat an axis", ArgumentValueError)
    if s is not None and len(s) != len(axes):
        raise RuleError(f"{name}: s {tuple(s)} and axes {axes} differ in length",
                        ArgumentValueError)
    sizes = [None] * len(axes) if s is None else [None if v == -1 else v for v in s]
    for v in sizes:
        _length(name, v, "every size in s")
    return axes, sizes


def _n_axes_rule(name, halves):
    def rule(x, *, s, axes, norm):
        shape = list(x.shape)
        axes, sizes = _axes_and_sizes(name, shape, s, axes)
        for k, (a, v) in enumerate(zip(axes, sizes)):
            last = k == len(axes) - 1
            if last and halves == "out":
                size = v if v is not None else 2 * (shape[a] - 1)
            else:
                size = v if v is not None else shape[a]
            if size < 1:
                raise RuleError(f"{name}: {size} points along axis {a}", ArgumentValueError)
            shape[a] = size // 2 + 1 if last and halves == "in" else size
        return tuple(shape)
    return rule


def _register(name, takes, gives, halves, n_axes):
    dtype_rule = _dtype_rule(name, takes, gives)

    def impl(xp, a, **attrs):
        # NumPy transforms ints too; the standard and the traced rule do not, so eager
        # refuses them as well
        dtype_rule((a.dtype,), attrs)
        fn = getattr(xp.fft, name)
        if n_axes:
            s, axes = attrs["s"], attrs["axes"]
            if s is not None and axes is None:  # the standard's: the last len(s) axes
                axes = tuple(range(a.ndim - len(s), a.ndim))
            return fn(a, s=None if s is None else list(s), axes=axes, norm=attrs["norm"])
        return fn(a, n=attrs["n"], axis=attrs["axis"], norm=attrs["norm"])

    register(OpDef(
        name=f"fft_{name}", kind=OPAQUE, impl=impl,
        shape_rule=(_n_axes_rule if n_axes else _one_axis_rule)(name, halves),
        dtype_rule=dtype_rule, vjp=vjp_of(name),
        doc=f"numpy.fft.{name} (cupy.fft.{name} on a GPU)."))
    complex_differentiable(f"fft_{name}")


for _name, _takes, _gives, _halves in (
        ("fft", "fc", "complex", None), ("ifft", "fc", "complex", None),
        ("rfft", "f", "complex", "in"), ("irfft", "fc", "real", "out"),
        ("hfft", "fc", "real", "out"), ("ihfft", "f", "complex", "in")):
    _register(_name, _takes, _gives, _halves, n_axes=False)
for _name, _takes, _gives, _halves in (
        ("fftn", "fc", "complex", None), ("ifftn", "fc", "complex", None),
        ("rfftn", "f", "complex", "in"), ("irfftn", "fc", "real", "out")):
    _register(_name, _takes, _gives, _halves, n_axes=True)
