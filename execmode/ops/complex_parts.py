"""The parts of a complex number: ``conj``, ``real`` and ``imag`` of complex64/complex128
tensors.

Each is an elementwise op without a scalar template: the kernel renderers have no complex
type, so under em.jit each runs as a plan step on NumPy (CuPy), as eagerly. ``real`` and
``imag`` return copies (NumPy's are strided views into the complex array; execmode's
results own their memory, eagerly and in graphs alike). The functions of the real dtypes
(``em.real(x)`` of a float tensor is a copy of it) are composites in
functional/array_api.py. No gradients: a backward through complex values raises
(dispatch.record_grad).
"""

from __future__ import annotations

from ..errors import BackwardError, DTypeError
from .registry import UNARY, OpDef, RuleError, register


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


def _no_gradient(g, out, x, **attrs):
    # A vjp, so that a result of a tensor that requires grad requires grad too, and a
    # backward through it raises (dispatch.record_grad names the op) instead of skipping.
    raise BackwardError("no gradient through complex values")


for _name, _impl, _doc in (
        ("conj", lambda xp, a: xp.conj(a), "The complex conjugate of each element."),
        ("real", lambda xp, a: xp.real(a).copy(), "The real part of each element (a copy)."),
        ("imag", lambda xp, a: xp.imag(a).copy(),
         "The imaginary part of each element (a copy)."),
):
    register(OpDef(name=_name, kind=UNARY, impl=_impl, shape_rule=_shape,
                   dtype_rule=_complex_only(_name), vjp=_no_gradient, doc=_doc))
