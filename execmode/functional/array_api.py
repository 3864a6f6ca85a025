"""Array API functions written over execmode's other functions (issue 36): ``empty``,
``empty_like``, ``moveaxis``, ``vecdot``, ``broadcast_shapes``, ``broadcast_arrays``,
``diff``, ``take`` and ``unstack``. Each is a composite of primitives, so it traces,
differentiates and fuses like the functions it is made of."""

from __future__ import annotations

from ..dispatch import apply as _apply
from ..errors import ArgumentError, ShapeError
from ..op_errors import op_error
from ..ops import OPS
from ..ops.registry import RuleError
from ..ops.registry import broadcast_shapes as _broadcast_shapes
from .arguments import _int_arg, _is_int, _require_tensor, _tensor_arg, normalize_axis_for
from .creation import zeros, zeros_like
from .elementwise import copy, multiply, not_equal, subtract
from .indexing import index_select
from .reductions import sum  # noqa: A004
from .shape import broadcast_to, concat, permute_dims


def empty(shape, *more, dtype=None, device=None, requires_grad=False):
    """A tensor of ``shape`` whose values the program must not read before writing them
    (the standard leaves them unspecified; execmode fills zeros, so runs are
    reproducible). ``shape`` as for :func:`zeros`: ints or one tuple."""
    return zeros(shape, *more, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(x, dtype=None, device=None):
    """A tensor shaped as ``x`` (of ``x``'s dtype unless ``dtype`` is given) with
    unspecified values (zeros, as :func:`empty`)."""
    return zeros_like(x, dtype=dtype, device=device)


def _axes_arg(x, name, value):
    axes = (value,) if _is_int(value) else value
    if not isinstance(axes, tuple | list) or not all(_is_int(a) for a in axes):
        raise op_error(ArgumentError, "moveaxis", (x,),
                       f"{name} must be an int or a tuple of ints, got {value!r}")
    return [normalize_axis_for("moveaxis", x, a) for a in axes]


def moveaxis(x, source, destination):
    """Move the axes ``source`` (an int or a tuple) to the positions ``destination``; the
    other axes keep their order. A view, as :func:`permute_dims` is."""
    x = _tensor_arg("moveaxis", x)
    src = _axes_arg(x, "source", source)
    dst = _axes_arg(x, "destination", destination)
    if len(src) != len(dst):
        raise op_error(ShapeError, "moveaxis", (x,),
                       f"source {source!r} and destination {destination!r} differ in length")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise op_error(ShapeError, "moveaxis", (x,), "an axis is repeated")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


def vecdot(x1, x2, /, *, axis=-1):
    """The dot product of ``x1`` and ``x2`` along ``axis`` (of their broadcast shape; the
    standard asks for a negative one), the other axes broadcast: ``sum(x1 * x2, axis)``
    for real dtypes, one fused multiply-and-sum under jit; ``x1`` conjugated when complex,
    as the standard defines it."""
    x1 = _tensor_arg("vecdot", x1, (x1, x2))
    x2 = _tensor_arg("vecdot", x2, (x1, x2))
    if not _is_int(axis):
        raise op_error(ArgumentError, "vecdot", (x1, x2), f"axis must be an int, got {axis!r}")
    if x1.ndim == 0 or x2.ndim == 0:
        raise op_error(ShapeError, "vecdot", (x1, x2), "the operands must have an axis")
    prod = multiply(conj(x1) if x1.dtype.kind == "c" else x1, x2)
    a = normalize_axis_for("vecdot", prod, axis)
    k = a - prod.ndim  # the same axis counted from the end of each operand
    if min(x1.ndim, x2.ndim) < -k or x1.shape[k] != x2.shape[k]:
        raise op_error(ShapeError, "vecdot", (x1, x2),
                       f"the operands' sizes along axis {axis} differ (or one lacks it)")
    # ints keep their dtype (the standard's); sum alone would widen int32 to int64
    return sum(prod, axis=a, dtype=prod.dtype if prod.dtype.kind in "iu" else None)


def broadcast_shapes(*shapes) -> tuple:
    """The shape that ``shapes`` (tuples of ints) broadcast to, by the standard's rules.

    :raises ShapeError: (a ValueError) for shapes that do not broadcast together.
    """
    checked = []
    for shape in shapes:
        if not isinstance(shape, tuple | list) or not all(_is_int(d) and d >= 0
                                                           for d in shape):
            raise op_error(ArgumentError, "broadcast_shapes", (),
                           f"a shape must be a tuple of non-negative ints, got {shape!r}")
        checked.append(tuple(int(d) for d in shape))
    try:
        return tuple(_broadcast_shapes(*checked))
    except RuleError as exc:
        raise op_error(ShapeError, "broadcast_shapes", (), str(exc)) from None


def broadcast_arrays(*arrays) -> list:
    """The tensors broadcast to their common shape (views, as :func:`broadcast_to`)."""
    tensors = [_tensor_arg("broadcast_arrays", a, arrays) for a in arrays]
    try:
        shape = tuple(_broadcast_shapes(*(t.shape for t in tensors)))
    except RuleError as exc:
        raise op_error(ShapeError, "broadcast_arrays", tensors, str(exc)) from None
    return [broadcast_to(t, shape) for t in tensors]


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """The ``n``-th differences of neighbours along ``axis``, ``out[i] = x[i + 1] - x[i]``,
    after ``prepend`` and ``append`` (tensors) are joined on either end; bools give
    ``x[i + 1] != x[i]``, as NumPy's. Slices and subtractions: one fused chain under jit."""
    x = _tensor_arg("diff", x)
    if x.ndim == 0:
        raise op_error(ShapeError, "diff", (x,), "needs a tensor of rank >= 1")
    axis = normalize_axis_for("diff", x, axis)
    n = _int_arg("diff", "n", n, (x,))
    if n < 0:
        raise op_error(ArgumentError, "diff", (x,), f"n must be >= 0, got {n}")
    parts = [_require_tensor("diff", p, (x, p)) for p in (prepend,) if p is not None]
    parts += [x] + [_require_tensor("diff", a, (x, a)) for a in (append,) if a is not None]
    out = concat(parts, axis=axis) if len(parts) > 1 else x
    head = (slice(None),) * axis
    for _ in range(n):
        later, earlier = out[head + (slice(1, None),)], out[head + (slice(None, -1),)]
        out = not_equal(later, earlier) if out.dtype.kind == "b" else subtract(later, earlier)
    return out


def take(x, indices, /, *, axis=None):
    """The elements of ``x`` at ``indices`` (a 1-D integer tensor; negative ones count from
    the end) along ``axis``, which a 1-D ``x`` may leave out. An index out of range raises
    IndexError naming it, in graph mode too."""
    x = _tensor_arg("take", x, (x, indices))
    indices = _require_tensor("take", indices, (x, indices))
    if axis is None:
        if x.ndim != 1:
            raise op_error(ArgumentError, "take", (x, indices),
                           f"give axis= for a tensor of rank {x.ndim}")
        axis = 0
    if indices.ndim != 1 or indices.dtype.kind not in "iu":
        raise op_error(ArgumentError, "take", (x, indices),
                       "indices must be a 1-D integer tensor")
    return index_select(x, normalize_axis_for("take", x, axis), indices)


def unstack(x, /, *, axis=0) -> tuple:
    """The slices of ``x`` along ``axis``, in order, each without that axis (views)."""
    x = _tensor_arg("unstack", x)
    if x.ndim == 0:
        raise op_error(ShapeError, "unstack", (x,), "needs a tensor of rank >= 1")
    axis = normalize_axis_for("unstack", x, axis)
    head = (slice(None),) * axis
    return tuple(x[head + (i,)] for i in range(x.shape[axis]))


# The standard's complex-number functions. Of a complex tensor each is an op
# (ops/complex_parts.py); of a real one, as NumPy's, a real number is its own conjugate and
# real part and has no imaginary part, and those composites differentiate.
def conj(x, /):
    """The complex conjugate: for a real tensor, a copy of it."""
    x = _tensor_arg("conj", x)
    return _apply(OPS["conj"], x) if x.dtype.kind == "c" else copy(x)


def real(x, /):
    """The real part (of a complex64 tensor, float32): for a real tensor, a copy of it."""
    x = _tensor_arg("real", x)
    return _apply(OPS["real"], x) if x.dtype.kind == "c" else copy(x)


def imag(x, /):
    """The imaginary part: for a real tensor, zeros of its shape and dtype."""
    x = _tensor_arg("imag", x)
    return _apply(OPS["imag"], x) if x.dtype.kind == "c" else zeros_like(x)
