"""The parts of a complex number: ``conj``, ``real`` and ``imag`` of complex64/complex128
tensors.

Each is an elementwise op without a scalar template: the kernel renderers have no complex
type, so under em.jit each runs as a plan step on NumPy (CuPy), as eagerly. ``real`` and
``imag`` return copies (NumPy's are strided views into the complex array; execmode's
results own their memory, eagerly and in graphs alike). The functions of the real dtypes
(``em.real(x)`` of a float tensor is a copy of it) are composites in
functional/array_api.py.

Gradients follow PyTorch's convention (complex_grad.py): for z = x + iy, the gradient of
conj(z) is conj(g), of real(z) g + 0i, of imag(z) 0 + ig.
"""

from __future__ import annotations

from ..errors import DTypeError
from .complex_grad import complex_differentiable
from .registry import UNARY, F, OpDef, RuleError, register


def _complex_only(name):
    def rule(dtypes, attrs):
        if dtypes[0].kind != "c":
            raise RuleError(f"{name} of {dtypes[0]}: the op takes a complex tensor "
                            f"(em.{name} of a real tensor does not call it)", DTypeError)
        return dtypes[0] if name == "conj" else _part_dtype(dtypes[0])
    return rule


def _part_dtype(dt):
    return dt.type(0).real.dtype  # complex64 -> float32, complex128 -> float64


def _shape(x, **attrs):
    return tuple(x.shape)


def _conj_vjp(g, out, x):
    return (F.conj(g),)


def _real_vjp(g, out, x):
    return (F.astype(g, x.dtype),)  # g + 0i


def _imag_vjp(g, out, x):
    return (F.astype(g, x.dtype) * 1j,)  # 0 + ig


for _name, _impl, _vjp, _doc in (
        ("conj", lambda xp, a: xp.conj(a), _conj_vjp, "The complex conjugate of each element."),
        ("real", lambda xp, a: xp.real(a).copy(), _real_vjp,
         "The real part of each element (a copy)."),
        ("imag", lambda xp, a: xp.imag(a).copy(), _imag_vjp,
         "The imaginary part of each element (a copy)."),
):
    register(OpDef(name=_name, kind=UNARY, impl=_impl, shape_rule=_shape,
                   dtype_rule=_complex_only(_name), vjp=_vjp, doc=_doc))
complex_differentiable("conj", "real", "imag")
