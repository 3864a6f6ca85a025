"""Gradients through complex values, PyTorch's convention ("Autograd for Complex Numbers").

For a real loss L of a complex z = x + iy, the gradient execmode keeps is
z.grad = dL/dx + i dL/dy (the conjugate Wirtinger derivative, times 2). Then:

* the vjp of a holomorphic f (exp, log, sin, multiply, matmul ...) multiplies the
  incoming gradient by conj(f'(z)). A vjp rule written for real values computes
  g * f'(z) from its inputs and output, and is linear in g, so the complex one is
  conj(rule(conj(g))): :func:`holomorphic` wraps a rule so;
* a real input that met complex values (x * 1j, a real signal's rfft) gets the real part
  of the gradient (:func:`to_operand`): a real x moves only along the real axis;
* a real linear map (reshape, slicing, sums, a cast between precisions) has its
  transpose for a vjp, for complex values as for real ones.

``COMPLEX_DIFFERENTIABLE`` names the ops whose vjp holds for complex inputs or outputs.
Every other op recorded with a complex value refuses at backward (tape's
without_complex_gradient, applied in dispatch.record_grad), so that a real rule never
runs silently on complex values.
"""

from __future__ import annotations

from .registry import F

# Ops whose vjp rule is right for complex values, by name. The op files add their own
# (elementwise.py, complex_parts.py, fft.py, linalg.py, decompositions.py, reductions.py);
# the real linear maps of the movement, indexing and reduction files are listed here: their
# vjps are transposes built of the same maps, which carry complex values as they carry real
# ones.
COMPLEX_DIFFERENTIABLE: set[str] = {
    "reshape", "permute_dims", "broadcast_to", "concat", "getitem", "pad", "sum",
    "cumsum", "tril", "triu", "to_device", "take_along_axis", "scatter_add",
    "boolean_mask", "masked_scatter",
    "sign",  # sign_vjp below
}


def complex_differentiable(*names: str) -> None:
    """Declare that the vjps of the ops ``names`` hold for complex values."""
    COMPLEX_DIFFERENTIABLE.update(names)


def is_complex(x) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and dtype.kind == "c"


def _complex_operand(x) -> bool:
    # the tensor's array (NumPy, CuPy or a tracer's value) read directly, not through
    # Tensor.dtype: every backward of a real model asks this of each multiply, exp ...
    data = getattr(x, "_data", None)
    return data is not None and data.dtype.kind == "c"


def to_operand(gx, x):
    """The gradient ``gx`` for operand ``x``: its real part where x is real (or a Python
    number, which gets none anyway) and gx complex."""
    if gx is None or not is_complex(gx) or is_complex(x):
        return gx
    return F.real(gx)


def holomorphic(rule):
    """The vjp of a holomorphic function of one tensor from ``rule``, its vjp for real
    values: conj(rule(conj(g))) = g * conj(f'(z)) where a value is complex, ``rule``
    itself otherwise (two dtype reads more per call)."""
    def vjp(g, out, x, **attrs):
        # g and x are tensors: their arrays' dtypes read directly (see _complex_operand)
        if g._data.dtype.kind != "c" and x._data.dtype.kind != "c":
            return rule(g, out, x, **attrs)
        return _through_conjugates(rule, g, out, (x,), attrs)

    return _named(vjp, rule)


def holomorphic_binary(rule):
    """:func:`holomorphic` for a function of two operands (tensors or Python numbers),
    holomorphic in each: multiply, divide, power, matmul."""
    def vjp(g, out, a, b):
        if g._data.dtype.kind != "c" and not _complex_operand(a) \
                and not _complex_operand(b):
            return rule(g, out, a, b)
        return _through_conjugates(rule, g, out, (a, b), {})

    return _named(vjp, rule)


def _through_conjugates(rule, g, out, inputs, attrs):
    grads = rule(F.conj(g) if is_complex(g) else g, out, *inputs, **attrs)
    return tuple(_conj_for(gx, x) for gx, x in zip(grads, inputs))


def _named(vjp, rule):
    vjp.__name__ = getattr(rule, "__name__", "vjp")
    vjp.__wrapped__ = rule
    return vjp


def _conj_for(gx, x):
    if gx is None or not is_complex(gx):
        return gx
    if not is_complex(x):
        return F.real(gx)  # the real part of conj(gx) is gx's
    return F.conj(gx)


def sign_vjp(g, out, x, **attrs):
    """sign's vjp (torch's ``sgn_backward``). Of a real x, none: a step function, whose
    gradient is 0. Of a complex z != 0, sign(z) = z / |z| moves only along the unit
    circle: the part of g tangent to it at sign(z), over |z|, that is
    ``(g - Re(g * conj(s)) * s) / |z|``; 0 at z = 0, as abs's gradient there."""
    if x._data.dtype.kind != "c":
        return (None,)
    magnitude = F.abs(x)
    at_zero = F.equal(magnitude, 0)
    s = F.sign(x)
    tangent = g - F.real(g * F.conj(s)) * s
    # |z| = 0 is divided by 1 instead (no 0/0 NaN), then the where makes it 0
    return (F.where(at_zero, 0.0, tangent / F.where(at_zero, 1.0, magnitude)),)
