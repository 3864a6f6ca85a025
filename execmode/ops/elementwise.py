"""Elementwise ops: unary, binary and ternary, with broadcasting.

Each row: name, NumPy function, scalar template for the kernel renderers, vjp.
Templates use ``{0}``, ``{1}``, ``{2}`` for operands (already cast to the compute type),
``{T}`` for the C type of the computation and ``{sfx}`` for its short dtype name; the
helpers they call (``em_exp_f32`` ...) are defined once per dialect in the kernel prelude.
"""

from __future__ import annotations

import cmath
import math

import numpy as np

from ..dtypes import float32, float64
from ..errors import DTypeError
from .complex_grad import (
    complex_differentiable,
    holomorphic,
    holomorphic_binary,
    sign_vjp,
    to_operand,
)
from .erf import erf_array
from .registry import (
    BINARY,
    TERNARY,
    UNARY,
    F,
    OpDef,
    RuleError,
    broadcast_shapes,
    register,
)


def _shape_elementwise(*avals, **attrs):
    return broadcast_shapes(*(a.shape for a in avals))


def sum_to_shape(g, shape):
    """Undo broadcasting in a gradient: sum ``g`` down to ``shape``."""
    if g.shape == tuple(shape):
        return g
    axes = broadcast_axes(g.shape, shape)
    if axes:
        g = F.sum(g, axis=axes, keepdims=True)
    if g.ndim != len(shape):
        g = F.reshape(g, shape)
    return g


def broadcast_axes(to_shape, shape) -> tuple:
    """The axes along which ``shape`` was broadcast to ``to_shape``: the leading ones it
    lacks and those where it has 1 (sum_to_shape sums over them, keeping them)."""
    lead = len(to_shape) - len(shape)
    return tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and to_shape[lead + i] != 1)


# --- unary ----------------------------------------------------------------------------

def _float_input(xp, a):
    # NumPy computes float functions of bool in float16, which execmode does not support:
    # such inputs are computed in float32. Ints compute in float64, as NumPy's exp or log
    # do (and as 1 / x does: NumPy's integer reciprocal would truncate 1/2 to 0).
    kind = a.dtype.kind  # one read: `dtype == np.bool_` converted the type at every call
    if kind == "f":
        return a
    if kind == "b":
        return a.astype(float32)
    if kind in "iu":
        return a.astype(float64)
    return a


def check_supported(out):
    """Refuse a NumPy result of a dtype execmode lacks (half precision, float16).

    The traced path refuses these when it probes the dtype; eager refuses them here, so that
    both modes agree. The only unsupported dtype reachable from supported inputs is
    float16, which keeps the check to two attribute reads.
    """
    dt = out.dtype
    if dt.itemsize < 4 and dt.kind == "f":
        raise RuleError(
            f"NumPy's result dtype {dt} is not supported by execmode; convert the operands "
            "with astype(em.int64) or astype(em.float32) first", DTypeError)
    return out


def _unary(name, fn_name, template, vjp=None, saves_output=False, float_fn=False, doc="",
           holo=False):
    """``holo``: the function is holomorphic and ``vjp`` its rule for real values, which
    complex_grad.holomorphic turns into the rule for complex ones as well."""
    ufunc = getattr(np, fn_name)
    if holo:
        vjp = holomorphic(vjp)
        complex_differentiable(name)
    if float_fn:
        def impl(xp, a):
            return getattr(xp, fn_name)(_float_input(xp, a))
    else:
        def impl(xp, a):
            return check_supported(getattr(xp, fn_name)(a))
    register(OpDef(
        name=name, kind=UNARY, impl=impl, shape_rule=_shape_elementwise, vjp=vjp,
        template=template, ufunc=None if float_fn else ufunc, saves_output=saves_output,
        float_ufunc=ufunc if float_fn else None, doc=doc,
    ))


def _erf_impl(xp, a):
    a = _float_input(xp, a)
    if xp is np:
        return _np_erf(a)
    import cupyx.scipy.special as sp  # noqa: PLC0415 - GPU only

    return sp.erf(a)


def _np_erf(a):
    # NumPy has no erf ufunc: fdlibm's erf over whole arrays (ops/erf.py), as math.erf
    # computes it element by element; graph mode compiles erf to C.
    return erf_array(np.asarray(a))


_unary("copy", "copy", "{0}", vjp=lambda g, out, x, **a: (g,), holo=True)
# Tensor.contiguous()'s copy: C order whatever the input's layout (copy keeps it, as
# torch's clone does), so that eager's result has the layout a kernel writes under jit.
register(OpDef(
    name="contiguous", kind=UNARY, impl=lambda xp, a: xp.array(a, copy=True, order="C"),
    shape_rule=_shape_elementwise, vjp=lambda g, out, x, **a: (g,), template="{0}",
    doc="A copy of ``x`` in C order (``x.contiguous()`` of a tensor that is not)."))
complex_differentiable("contiguous")
_unary("negative", "negative", "(-{0})", vjp=lambda g, out, x, **a: (F.negative(g),),
       holo=True)
# Of a complex z, sign is z / |z| (0 at 0): g * sign(z) is the gradient of |z| (as
# PyTorch's, 0 at 0) and abs is complex-differentiable as it is.
_unary("abs", "abs", "em_abs_{sfx}({0})", vjp=lambda g, out, x, **a: (g * F.sign(x),))
complex_differentiable("abs")
_unary("sign", "sign", "em_sign_{sfx}({0})", vjp=sign_vjp)
_unary("exp", "exp", "em_exp_{sfx}({0})", float_fn=True, saves_output=True,
       vjp=lambda g, out, x, **a: (g * out,), holo=True)
_unary("log", "log", "em_log_{sfx}({0})", float_fn=True,
       vjp=lambda g, out, x, **a: (g / x,), holo=True)
_unary("log1p", "log1p", "em_log1p_{sfx}({0})", float_fn=True,
       vjp=lambda g, out, x, **a: (g / (x + 1),), holo=True)
_unary("expm1", "expm1", "em_expm1_{sfx}({0})", float_fn=True, saves_output=True,
       vjp=lambda g, out, x, **a: (g * (out + 1),), holo=True)
_unary("sqrt", "sqrt", "em_sqrt_{sfx}({0})", float_fn=True, saves_output=True,
       vjp=lambda g, out, x, **a: (g * 0.5 / out,), holo=True)
_unary("square", "square", "({0} * {0})", vjp=lambda g, out, x, **a: (g * 2 * x,), holo=True)
_unary("sin", "sin", "em_sin_{sfx}({0})", float_fn=True,
       vjp=lambda g, out, x, **a: (g * F.cos(x),), holo=True)
_unary("cos", "cos", "em_cos_{sfx}({0})", float_fn=True,
       vjp=lambda g, out, x, **a: (F.negative(g) * F.sin(x),), holo=True)
_unary("tanh", "tanh", "em_tanh_{sfx}({0})", float_fn=True, saves_output=True,
       vjp=lambda g, out, x, **a: (g * (1 - out * out),), holo=True)
_unary("reciprocal", "reciprocal", "(({T})1 / {0})", float_fn=True, saves_output=True,
       vjp=lambda g, out, x, **a: (F.negative(g) * out * out,), holo=True)
_unary("floor", "floor", "em_floor_{sfx}({0})", vjp=lambda g, out, x, **a: (None,))
_unary("ceil", "ceil", "em_ceil_{sfx}({0})", vjp=lambda g, out, x, **a: (None,))


def _round_impl(xp, a):
    # NumPy rounds half to even, as C's rint does in the default rounding mode. Integers
    # are already round and keep their dtype (np.round and the Array API agree; np.rint
    # would turn them into float64); bool computes in float32 like the float functions.
    if a.dtype.kind in "iu":
        return a.copy()
    return xp.rint(_float_input(xp, a))


register(OpDef(
    name="round", kind=UNARY, impl=_round_impl, shape_rule=_shape_elementwise,
    vjp=lambda g, out, x, **a: (None,), template="em_rint_{sfx}({0})",
    doc="Round to the nearest integer, half to even; integer dtypes are kept.",
))
_unary("logical_not", "logical_not", "(!{0})")
_unary("isnan", "isnan", "em_isnan_{sfx}({0})")
_unary("isinf", "isinf", "em_isinf_{sfx}({0})")
_unary("isfinite", "isfinite", "em_isfinite_{sfx}({0})")

def _relu_impl(xp, a):
    # maximum with a zero of x's own dtype (the dtype is kept, bool included); NaN passes
    # through, as in the template, which is maximum's own.
    return xp.maximum(a, a.dtype.type(0))


register(OpDef(
    name="relu", kind=UNARY, impl=_relu_impl, shape_rule=_shape_elementwise,
    template="em_max_{sfx}({0}, ({T})0)",
    # relu'(0) = 0, as in PyTorch (maximum(x, 0) would split the tie and give 0.5).
    vjp=lambda g, out, x, **a: (F.where(F.greater(x, 0), g, 0.0),),
    doc="max(x, 0), keeping x's dtype; NaN stays NaN; the gradient at 0 is 0.",
))

register(OpDef(
    name="erf", kind=UNARY, impl=_erf_impl, shape_rule=_shape_elementwise,
    template="em_erf_{sfx}({0})",
    vjp=lambda g, out, x, **a: (g * (2.0 / np.sqrt(np.pi)) * F.exp(F.negative(x * x)),),
    doc="Gauss error function.",
))


def _cast_impl(xp, a, *, dtype):
    return a.astype(dtype)


def _cast_vjp(g, out, x, *, dtype):
    # a real x cast to complex gets the real part of the gradient; a complex x cast to a
    # real dtype (the imaginary part dropped) gets the gradient as a complex one
    if x.dtype.kind not in "fc":
        return (None,)
    return (F.astype(to_operand(g, x), x.dtype),)


register(OpDef(
    name="cast", kind=UNARY, impl=_cast_impl, shape_rule=_shape_elementwise,
    dtype_rule=lambda dtypes, attrs: attrs["dtype"], template="(({T}){0})", vjp=_cast_vjp,
    doc="astype: convert to another dtype (float to int truncates toward zero).",
))
complex_differentiable("cast")


# --- binary ---------------------------------------------------------------------------

def _binary(name, fn_name, template, vjp=None, saves_output=False, doc="", impl=None):
    ufunc = getattr(np, fn_name)

    if impl is None:
        def impl(xp, a, b):
            return check_supported(getattr(xp, fn_name)(a, b))

    register(OpDef(
        name=name, kind=BINARY, impl=impl, shape_rule=_shape_elementwise, vjp=vjp,
        template=template, ufunc=ufunc, saves_output=saves_output, doc=doc,
    ))


def _grads(a, b, ga, gb):
    """Gradients for (a, b) from thunks, evaluated only for tensors that need one (a Python
    scalar operand gets None), reduced from the broadcast shape to each operand's shape
    (and to the real part for a real operand of a complex result)."""
    def one(x, thunk):
        if thunk is None or not getattr(x, "requires_grad", False):
            return None
        return to_operand(sum_to_shape(thunk(), x.shape), x)

    return one(a, ga), one(b, gb)


def _maximum_vjp(g, out, a, b):
    # Like torch.maximum: the larger operand gets the gradient, ties split it evenly.
    wa = F.astype(F.greater(a, b), g.dtype) + F.astype(F.equal(a, b), g.dtype) * 0.5
    return _grads(a, b, lambda: g * wa, lambda: g * (1 - wa))


def _minimum_vjp(g, out, a, b):
    wa = F.astype(F.less(a, b), g.dtype) + F.astype(F.equal(a, b), g.dtype) * 0.5
    return _grads(a, b, lambda: g * wa, lambda: g * (1 - wa))


def _log_of_number(a, out):
    """log(a) of a Python number base, in double precision (F.log of it would make a
    float32 tensor first: 2.0 ** x lost 1e-8 of its gradient); the principal complex
    log where the power is complex (NumPy's (-2.0) ** z is exp(z log(-2 + 0j)))."""
    if a == 0:
        return 0.0
    if isinstance(a, complex) or out.dtype.kind == "c":
        return cmath.log(a)
    return math.log(a) if a > 0 else math.nan


def _pow_vjp(g, out, a, b):
    def gb():
        # d/db a**b = a**b * log(a); where a == 0 the limit is 0 (as in PyTorch).
        if not hasattr(a, "dtype"):
            return g * out * _log_of_number(a, out)
        safe_log = F.where(F.equal(a, 0), 0.0, F.log(F.where(F.equal(a, 0), 1.0, a)))
        return g * out * safe_log

    return _grads(a, b, lambda: g * b * F.power(a, b - 1), gb)


_binary("add", "add", "({0} + {1})",
        vjp=lambda g, out, a, b: _grads(a, b, lambda: g, lambda: g))
_binary("subtract", "subtract", "({0} - {1})",
        vjp=lambda g, out, a, b: _grads(a, b, lambda: g, lambda: F.negative(g)))
_binary("multiply", "multiply", "({0} * {1})",
        vjp=holomorphic_binary(lambda g, out, a, b: _grads(a, b, lambda: g * b,
                                                           lambda: g * a)))
_binary("divide", "true_divide", "({0} / {1})",
        vjp=holomorphic_binary(lambda g, out, a, b: _grads(
            a, b, lambda: g / b, lambda: F.negative(g) * a / (b * b))))
# add and subtract move gradients with real coefficients (no conjugate); multiply, divide
# and power are holomorphic in each operand
complex_differentiable("add", "subtract", "multiply", "divide", "power")
_binary("floor_divide", "floor_divide", "em_floordiv_{sfx}({0}, {1})",
        vjp=lambda g, out, a, b: (None, None))
_binary("remainder", "remainder", "em_mod_{sfx}({0}, {1})",
        vjp=lambda g, out, a, b: _grads(a, b, lambda: g,
                                        lambda: F.negative(g) * F.floor_divide(a, b)))


def _power_impl(xp, a, b):
    """``a ** b``. A float array to a whole-number power (``x ** 3``, nanoGPT's
    ``pow(x, 3.0)``) is ``|a| ** b`` with a's sign put back for odd ``b`` (the identity
    libm's pow applies itself): NumPy's vectorised pow takes a slow path for every
    negative base (~45 ns an element against ~1.5 on x86 with AVX-512: 6 ms -> 0.2 ms
    for 131k float32), the positive one is the fast path."""
    if xp is np and b.__class__ in (int, float) and a.__class__ is np.ndarray \
            and a.dtype.kind == "f" and b != 2 and float(b).is_integer() and abs(b) < 2**53:
        out = np.power(np.abs(a), b)
        if int(b) % 2:  # a 0-d input gives a NumPy scalar, which cannot be written into
            out = np.copysign(out, a, out=out) if out.__class__ is np.ndarray \
                else np.copysign(out, a)
        return out
    return check_supported(xp.power(a, b))


_binary("power", "power", "em_pow_{sfx}({0}, {1})", vjp=holomorphic_binary(_pow_vjp),
        impl=_power_impl,
        saves_output=True)  # d/db a**b reads a**b
_binary("maximum", "maximum", "em_max_{sfx}({0}, {1})", vjp=_maximum_vjp,
        doc="Elementwise maximum; NaN in either operand gives NaN (as NumPy).")
_binary("minimum", "minimum", "em_min_{sfx}({0}, {1})", vjp=_minimum_vjp)
_binary("equal", "equal", "({0} == {1})")
_binary("not_equal", "not_equal", "({0} != {1})")
_binary("less", "less", "({0} < {1})")
_binary("less_equal", "less_equal", "({0} <= {1})")
_binary("greater", "greater", "({0} > {1})")
_binary("greater_equal", "greater_equal", "({0} >= {1})")
_binary("logical_and", "logical_and", "({0} && {1})")
_binary("logical_or", "logical_or", "({0} || {1})")


# --- ternary --------------------------------------------------------------------------

def _where_impl(xp, c, a, b):
    # NumPy takes any condition by truthiness; execmode asks for bool, as when tracing.
    if c.dtype != np.bool_:
        raise RuleError(f"the condition must be bool, got {c.dtype}", DTypeError)
    if xp is np:
        out = _where_by_bits(c, a, b)
        if out is not None:
            return out
    return xp.where(c, a, b)


_BITS = {4: np.uint32, 8: np.uint64}
# Below this many elements np.where's branches cost less than the bits' several passes:
# with a fresh random condition each call, 1,024 float32 elements took 4.1 us by np.where
# and 5.8 us by the bits, 16 elements 0.6 against 4.9 (2,048: 8.0 against 6.4); with a
# causal mask's condition np.where was faster at every size up to 8,192.
_BY_BITS_MIN = 1024
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _where_by_bits(c, a, b):
    """np.where(c, a, b) for float results as integer arithmetic on the operands' bits:
    ``bits(a) * c + bits(b) * ~c`` (one term is 0 at every position, so the sum is one
    operand's bits exactly, NaN payloads and -0.0 included; a 0.0 operand's term drops),
    on C-contiguous arrays or broadcasts of them.
    NumPy's where branches on every element: ~3.6 ns an element with a random condition
    (relu's gradient, max pooling's one-hot), against ~0.2 for a multiply. None when this
    does not apply (another dtype, operands of two dtypes, 0-d everything) or does not pay
    (fewer than _BY_BITS_MIN elements): np.where."""
    if _fewer_than(_BY_BITS_MIN, c, a, b):
        return None
    rt = np.result_type(a, b)
    if rt not in _FLOATS or (c.ndim == 0 and np.ndim(a) == 0 and np.ndim(b) == 0) \
            or not _c_like(c):
        return None
    bits = _BITS[rt.itemsize]
    terms = []
    for x, keep in ((a, c), (b, None)):
        if x.__class__ is np.ndarray:
            # C-ordered operands (np.where's output layout follows theirs otherwise)
            if x.dtype != rt or not _c_like(x):
                return None
            if keep is None:
                keep = ~c
            terms.append(np.multiply(x.view(bits), keep, dtype=bits))
        elif x.__class__ is float or (x.__class__ is int and -2**53 <= x <= 2**53):
            with np.errstate(over="ignore"):
                v = np.array(x, dtype=rt)  # the cast np.where makes of a Python number
            if v.view(bits) != 0:  # +0.0 contributes no bits
                terms.append(np.multiply(v.view(bits), c if keep is not None else ~c,
                                         dtype=bits))
        else:
            return None
    shape = np.broadcast_shapes(c.shape, np.shape(a), np.shape(b))
    if not terms:  # where(c, 0.0, 0.0)
        return np.zeros(shape, rt)
    out = terms[0] if len(terms) == 1 else np.add(terms[0], terms[1])
    if out.shape != shape:
        out = np.broadcast_to(out, shape).copy()
    if not out.flags.c_contiguous:
        return None
    return out.view(rt)


def _fewer_than(n: int, c, a, b) -> bool:
    """Whether where(c, a, b) has fewer than ``n`` elements (its operands broadcast)."""
    shapes = [c.shape] + [x.shape for x in (a, b) if x.__class__ is np.ndarray]
    if all(shape == shapes[0] for shape in shapes):
        return c.size < n
    return math.prod(np.broadcast_shapes(*shapes)) < n


def _c_like(x) -> bool:
    """C-contiguous, or a broadcast of a C-contiguous array (stride 0 on the broadcast
    axes: a sum's gradient): then np.where's output and a ufunc's are C-contiguous."""
    if x.flags.c_contiguous:
        return True
    expected = x.itemsize
    for size, stride in zip(reversed(x.shape), reversed(x.strides)):
        if size == 1 or stride == 0:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


def _where_rule(c, a, b, **attrs):
    if c.dtype != np.bool_:
        raise RuleError(f"the condition must be bool, got {c.dtype}", DTypeError)
    return broadcast_shapes(c.shape, a.shape, b.shape)


def _where_vjp(g, out, c, a, b):
    ga, gb = _grads(a, b, lambda: F.where(c, g, 0.0), lambda: F.where(c, 0.0, g))
    return None, ga, gb


register(OpDef(
    name="where", kind=TERNARY, impl=_where_impl, shape_rule=_where_rule, vjp=_where_vjp,
    template="({0} ? {1} : {2})", nondiff_inputs=(0,),
    doc="where(cond, a, b): a where cond is true, else b.",
))
complex_differentiable("where")


# --- Array API elementwise functions (issue 36) ---------------------------------------
# Registered without a scalar template: the kernel dialects have no helper for them yet, so
# under em.jit each is a plan step of its own on NumPy/CuPy (fuse.fusable_elementwise
# leaves template-less ops out of kernels), computing exactly what eager computes.

_LN2 = float(np.log(2.0))
_LN10 = float(np.log(10.0))

_unary("tan", "tan", None, float_fn=True, saves_output=True,
       vjp=lambda g, out, x, **a: (g * (1 + out * out),),
       doc="Tangent, elementwise.", holo=True)
_unary("acos", "arccos", None, float_fn=True,
       vjp=lambda g, out, x, **a: (F.negative(g) / F.sqrt(1 - x * x),),
       doc="Inverse cosine (Array API ``acos``, NumPy's arccos).", holo=True)
_unary("asin", "arcsin", None, float_fn=True,
       vjp=lambda g, out, x, **a: (g / F.sqrt(1 - x * x),),
       doc="Inverse sine (Array API ``asin``, NumPy's arcsin).", holo=True)
_unary("atan", "arctan", None, float_fn=True,
       vjp=lambda g, out, x, **a: (g / (1 + x * x),),
       doc="Inverse tangent (Array API ``atan``, NumPy's arctan).", holo=True)
def _acosh_rule(g, out, x, **attrs):
    if x.dtype.kind == "c":
        # the derivative of the principal branch; 1 / sqrt(z*z - 1) is its negative where
        # Re z < 0
        return (g / (F.sqrt(x - 1) * F.sqrt(x + 1)),)
    return (g / F.sqrt(x * x - 1),)


_unary("acosh", "arccosh", None, float_fn=True, vjp=_acosh_rule,
       doc="Inverse hyperbolic cosine (Array API ``acosh``).", holo=True)
_unary("asinh", "arcsinh", None, float_fn=True,
       vjp=lambda g, out, x, **a: (g / F.sqrt(x * x + 1),),
       doc="Inverse hyperbolic sine (Array API ``asinh``).", holo=True)
_unary("atanh", "arctanh", None, float_fn=True,
       vjp=lambda g, out, x, **a: (g / (1 - x * x),),
       doc="Inverse hyperbolic tangent (Array API ``atanh``).", holo=True)
# sinh and cosh of real tensors are composites of exp (functional/elementwise.py), which
# fuse; these are NumPy's, for complex tensors, whose infinities the composites get wrong.
_unary("sinh", "sinh", None, float_fn=True, vjp=lambda g, out, x, **a: (g * F.cosh(x),),
       doc="Hyperbolic sine (NumPy's; em.sinh of a real tensor is a composite).", holo=True)
_unary("cosh", "cosh", None, float_fn=True, vjp=lambda g, out, x, **a: (g * F.sinh(x),),
       doc="Hyperbolic cosine (NumPy's; em.cosh of a real tensor is a composite).", holo=True)
_unary("log2", "log2", None, float_fn=True,
       vjp=lambda g, out, x, **a: (g / (x * _LN2),),
       doc="Base-2 logarithm.", holo=True)
_unary("log10", "log10", None, float_fn=True,
       vjp=lambda g, out, x, **a: (g / (x * _LN10),),
       doc="Base-10 logarithm.", holo=True)


def _trunc_impl(xp, a):
    # Integers are already whole and keep their dtype (the Array API's rule; np.trunc of an
    # int gives float64); bool computes in float32 like the float functions.
    if a.dtype.kind in "iu":
        return a.copy()
    return xp.trunc(_float_input(xp, a))


register(OpDef(
    name="trunc", kind=UNARY, impl=_trunc_impl, shape_rule=_shape_elementwise,
    vjp=lambda g, out, x, **a: (None,), template=None,
    doc="Round toward zero; integer dtypes are kept.",
))
_unary("signbit", "signbit", None,
       doc="Whether the sign bit is set (true for -0.0 and negative NaN), as bool.")


def _float_binary(name, fn_name, vjp=None, doc="", saves_output=False):
    """A binary float function: ints compute in float64 and bools in float32 (as the unary
    float functions do), so its result is always a float."""
    fn = getattr(np, fn_name)

    def impl(xp, a, b):
        if getattr(a, "dtype", None) is not None and getattr(b, "dtype", None) is not None \
                and a.dtype.kind not in "f" and b.dtype.kind not in "f":
            a = _float_input(xp, a)
            b = _float_input(xp, b)
        return check_supported(getattr(xp, fn_name)(a, b))

    register(OpDef(
        name=name, kind=BINARY, impl=impl, shape_rule=_shape_elementwise, vjp=vjp,
        template=None, doc=doc, saves_output=saves_output,
    ))
    return fn


def _atan2_vjp(g, out, a, b):
    def denom():
        return a * a + b * b

    return _grads(a, b, lambda: g * b / denom(), lambda: F.negative(g) * a / denom())


def _copysign_vjp(g, out, a, b):
    # As torch.copysign: d/da is +-1 (the sign flip), 0 where a is 0; none for b.
    def ga():
        flip = F.where(F.equal(F.signbit(a), F.signbit(out)), 1.0, -1.0)
        return F.where(F.equal(a, 0), 0.0, g * flip)

    return _grads(a, b, ga, None)


def _hypot_vjp(g, out, a, b):
    # where out == 0 (both operands 0) the gradient is 0, as in torch.hypot
    def part(x):
        return F.where(F.equal(out, 0), 0.0, g * x / F.where(F.equal(out, 0), 1.0, out))

    return _grads(a, b, lambda: part(a), lambda: part(b))


_float_binary("atan2", "arctan2", vjp=_atan2_vjp,
              doc="atan2(a, b): the angle of the point (b, a), in the quadrant of its signs.")
_float_binary("copysign", "copysign", vjp=_copysign_vjp, saves_output=True,
              doc="The magnitude of a with the sign of b.")
_float_binary("hypot", "hypot", vjp=_hypot_vjp, saves_output=True,
              doc="sqrt(a**2 + b**2) without overflow or underflow in between.")
_float_binary("nextafter", "nextafter", vjp=lambda g, out, a, b: (None, None),
              doc="The next representable float after a, toward b.")


# Integer and boolean functions of the Array API (issue 36). and/or/xor have a C/CUDA
# spelling that is right for bool and for ints; invert (~ on a C bool is not a logical not)
# and the shifts (NumPy defines a shift by the bit width or more; C leaves it undefined)
# run as NumPy steps under jit.
_unary("positive", "positive", "{0}", vjp=lambda g, out, x, **a: (g,),
       doc="+x: a copy of x (numeric dtypes).", holo=True)
_binary("logical_xor", "logical_xor", "((!{0}) != (!{1}))",
        doc="Exclusive or of the operands' truth values, as bool.")
_binary("bitwise_and", "bitwise_and", "({0} & {1})",
        doc="Bitwise and of integer or bool operands.")
_binary("bitwise_or", "bitwise_or", "({0} | {1})",
        doc="Bitwise or of integer or bool operands.")
_binary("bitwise_xor", "bitwise_xor", "({0} ^ {1})",
        doc="Bitwise exclusive or of integer or bool operands.")
_unary("bitwise_invert", "invert", None,
       doc="Bitwise not of an integer operand; logical not of a bool one.")
_binary("bitwise_left_shift", "left_shift", None,
        doc="a << b for integer operands (a shift by the bit width or more gives 0).")
_binary("bitwise_right_shift", "right_shift", None,
        doc="a >> b for integer operands, arithmetic (the sign is kept).")
