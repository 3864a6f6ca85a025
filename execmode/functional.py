"""The function API (Array API names where one exists): ``em.exp(x)``, ``em.sum(x, axis=1)``.

Each function normalises its arguments (axes, shapes, dtypes) and hands one primitive to
:func:`execmode.dispatch.apply`. Array-level composites (mean, var, stack, tensordot, ...)
are written here over primitives; the ML composites live in ``execmode.nn.functional``.
"""

from __future__ import annotations

import builtins
import functools
import math
import operator

import numpy as np

from . import dispatch
from .autograd import GradNode, mark_modified, no_grad
from .backend import as_device, xp_for
from .dtypes import DEFAULT_FLOAT, as_dtype, bool_, default_dtype_for, float64, int64
from .errors import (
    ArgumentError,
    BackwardError,
    DeviceError,
    DTypeError,
    ShapeError,
    op_error,
)
from .ops import OPS
from .ops.movement import resolve_shape
from .ops.reductions import normalize_reduction_attrs, reduced_shape
from .ops.registry import RuleError, normalize_axes, normalize_axis
from .tensor import SCALAR_TYPES, Tensor

apply = dispatch.apply


def apply_op(name: str, *inputs, **attrs):
    """Dispatch a primitive by name (used by vjp rules)."""
    return apply(OPS[name], *inputs, **attrs)


def _rule_error(op: str, inputs, exc: RuleError):
    return op_error(exc.cls, op, inputs, exc.problem)


def _device_arg(op: str, device, inputs=()) -> str:
    """The device's name, checked here so that a bad one names the op and the user's line."""
    try:
        dev = as_device(device)
        if dev.is_cuda:
            xp_for(dev)  # raises when CuPy or the GPU is missing
    except DeviceError as exc:
        raise op_error(DeviceError, op, inputs, str(exc)) from None
    return str(dev)


def _dtype_arg(op: str, dtype, inputs=()):
    try:
        return as_dtype(dtype)
    except DTypeError as exc:
        raise op_error(DTypeError, op, inputs, str(exc)) from None


def _tensor_arg(op: str, x, inputs=None):
    """``x`` as a tensor: a Tensor, or a Python number made into one."""
    if isinstance(x, Tensor):
        return x
    if x.__class__ in SCALAR_TYPES:
        return tensor(x)
    raise op_error(ArgumentError, op, inputs or (x,),
                   f"expected a Tensor, got {type(x).__name__} (wrap data with em.tensor(...))")


def _require_tensor(op: str, x, inputs=None):
    """``x`` itself, which must be a Tensor (the target of an update, the model of a *_like)."""
    if isinstance(x, Tensor):
        return x
    raise op_error(ArgumentError, op, inputs or (x,),
                   f"expected a Tensor, got {type(x).__name__} (wrap data with em.tensor(...))")


def _is_int(v) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)


def _is_number(v) -> bool:
    return isinstance(v, int | float | np.integer | np.floating | np.bool_)


def _symbolic_value(op: str, name: str, v):
    """A number jit reads at every call (graph/symbolic.py) used where the op needs its
    value (an attribute, a shape): the value, with a guard, so a change retraces.
    None for anything else. Imported here, off the hot path: only a non-number gets here."""
    from .graph.symbolic import SymbolicScalar

    if isinstance(v, SymbolicScalar):
        return v.concrete(f"{op}'s {name}")
    return None


def _int_arg(op: str, name: str, v, inputs=()) -> int:
    if not _is_int(v):
        value = _symbolic_value(op, name, v)
        if value is not None and _is_int(value):
            return int(value)
        raise op_error(ArgumentError, op, inputs, f"{name} must be an int, got {v!r}")
    return int(v)


def _number_arg(op: str, name: str, v, inputs=()):
    if not _is_number(v):
        value = _symbolic_value(op, name, v)
        if value is not None:
            return value
        raise op_error(ArgumentError, op, inputs, f"{name} must be a number, got {v!r}")
    return v.item() if isinstance(v, np.generic) else v


def _bool_arg(op: str, name: str, v, inputs=()) -> bool:
    if not isinstance(v, bool | np.bool_):
        raise op_error(ArgumentError, op, inputs, f"{name} must be True or False, got {v!r}")
    return bool(v)


def _tensor_list_arg(op: str, tensors) -> list:
    if not isinstance(tensors, list | tuple):
        raise op_error(ArgumentError, op, (tensors,),
                       f"expected a list or tuple of tensors, got {type(tensors).__name__}")
    if not tensors:
        raise op_error(ArgumentError, op, (), "needs at least one tensor")
    return [_tensor_arg(op, t, tuple(tensors)) for t in tensors]


# --- creation ---------------------------------------------------------------------------

def _shape_arg(shape, op: str = "full") -> tuple:
    """A shape from ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` or ``f(2)``."""
    if len(shape) == 1 and not _is_int(shape[0]):
        shape = shape[0]
    if _is_int(shape):
        shape = (shape,)
    if not isinstance(shape, tuple | list) or not builtins.all(_is_int(d) for d in shape):
        raise op_error(ArgumentError, op, (), f"a shape must be a sequence of ints, got {shape!r}")
    out = tuple(int(d) for d in shape)
    if builtins.any(d < 0 for d in out):
        raise op_error(ArgumentError, op, (), f"negative dimension in shape {out}")
    return out


def _dtype_of_data(op: str, data):
    try:
        return default_dtype_for(data)
    except DTypeError as exc:
        raise op_error(DTypeError, op, (data,), str(exc)) from None


def _finish(t: Tensor, requires_grad: bool, op: str = "tensor") -> Tensor:
    if _bool_arg(op, "requires_grad", requires_grad):
        if t.dtype.kind != "f":
            raise op_error(ArgumentError, op, (t,),
                           "only floating-point tensors can require gradients")
        t.requires_grad_(True)
    return t


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, NumPy arrays, numbers).

    Floats default to float32 and ints to int64, as in PyTorch.
    """
    if isinstance(data, Tensor):
        data = data.numpy()
    try:
        dt = _dtype_arg("tensor", dtype) if dtype is not None else _dtype_of_data("tensor", data)
        value = np.array(data, dtype=dt)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, DTypeError):
            raise
        raise op_error(ArgumentError, "tensor", (data,),
                       f"cannot make a tensor from this {type(data).__name__}: {exc}") from None
    dev = _device_arg("tensor", device)
    t = apply(OPS["constant"], value=value, shape=value.shape, dtype=dt, device=dev)
    return _finish(t, requires_grad)


def asarray(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, without a copy when it already is one of that dtype and device."""
    if isinstance(data, Tensor):
        out = data
        if dtype is not None:
            out = astype(out, dtype)
        if device is not None:
            out = to_device(out, device)
        return out
    return tensor(data, dtype=dtype, device=device)


def full(shape, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    shape = _shape_arg((shape,))
    fill_value = _number_arg("full", "fill_value", fill_value)
    dt = _dtype_arg("full", dtype) if dtype is not None else _dtype_of_data("full", fill_value)
    t = apply(OPS["full"], shape=shape, value=fill_value, dtype=dt,
              device=_device_arg("full", device))
    return _finish(t, requires_grad, "full")


def zeros(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full(_shape_arg(shape, "zeros"), 0, dtype=dtype or DEFAULT_FLOAT, device=device,
                requires_grad=requires_grad)


def ones(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full(_shape_arg(shape, "ones"), 1, dtype=dtype or DEFAULT_FLOAT, device=device,
                requires_grad=requires_grad)


def full_like(x, fill_value, dtype=None, device=None) -> Tensor:
    x = _require_tensor("full_like", x)
    return full(x.shape, fill_value, dtype=x.dtype if dtype is None else dtype,
                device=x.device if device is None else device)


def zeros_like(x, dtype=None, device=None) -> Tensor:
    return full_like(x, 0, dtype=dtype, device=device)


def ones_like(x, dtype=None, device=None) -> Tensor:
    return full_like(x, 1, dtype=dtype, device=device)


def arange(start, stop=None, step=1, dtype=None, device=None) -> Tensor:
    """Evenly spaced values in [start, stop). Int arguments give int64, floats float32."""
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_number_arg("arange", name, v) for name, v in
                         (("start", start), ("stop", stop), ("step", step)))
    if dtype is None:
        all_int = builtins.all(isinstance(v, int | np.integer) for v in (start, stop, step))
        dt = int64 if all_int else DEFAULT_FLOAT
    else:
        dt = _dtype_arg("arange", dtype)
    if step == 0:
        raise op_error(ArgumentError, "arange", (start, stop, step), "step must not be zero")
    return apply(OPS["arange"], start=start, stop=stop, step=step, dtype=dt,
                 device=_device_arg("arange", device))


def linspace(start, stop, num=50, endpoint=True, dtype=None, device=None) -> Tensor:
    start = float(_number_arg("linspace", "start", start))
    stop = float(_number_arg("linspace", "stop", stop))
    num = _int_arg("linspace", "num", num)
    if num < 0:
        raise op_error(ArgumentError, "linspace", (), f"num must be >= 0, got {num}")
    return apply(OPS["linspace"], start=start, stop=stop, num=num,
                 endpoint=_bool_arg("linspace", "endpoint", endpoint),
                 dtype=_dtype_arg("linspace", dtype or DEFAULT_FLOAT),
                 device=_device_arg("linspace", device))


def eye(n, m=None, k=0, dtype=None, device=None) -> Tensor:
    n = _int_arg("eye", "n", n)
    m = n if m is None else _int_arg("eye", "m", m)
    if n < 0 or m < 0:
        raise op_error(ArgumentError, "eye", (), f"negative size {n} x {m}")
    return apply(OPS["eye"], n=n, m=m, k=_int_arg("eye", "k", k),
                 dtype=_dtype_arg("eye", dtype or DEFAULT_FLOAT), device=_device_arg("eye", device))


def _random(op_name, shape, dtype, device, requires_grad, **params):
    shape = _shape_arg((shape,), op_name)
    t = apply(OPS[op_name], shape=shape, dtype=_dtype_arg(op_name, dtype or DEFAULT_FLOAT),
              device=_device_arg(op_name, device), **params)
    return _finish(t, requires_grad, op_name)


def randn(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples from execmode's seeded generator."""
    return _random("random_normal", _shape_arg(shape, "randn"), dtype, device, requires_grad,
                   mean=0.0, std=1.0)


# --- elementwise ------------------------------------------------------------------------

def _unary(name):
    op = OPS[name]

    def fn(x):
        return apply(op, _tensor_arg(name, x))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = op.doc or f"Elementwise {name}."
    return fn


def _binary(name):
    op = OPS[name]

    def fn(a, b):
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            a = _tensor_arg(name, a, (a, b))
        return apply(op, a, b)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = op.doc or f"Elementwise {name}, with broadcasting."
    return fn


copy = _unary("copy")
negative = _unary("negative")
abs = _unary("abs")  # noqa: A001 - Array API name
sign = _unary("sign")
exp = _unary("exp")
log = _unary("log")
log1p = _unary("log1p")
expm1 = _unary("expm1")
sqrt = _unary("sqrt")
square = _unary("square")
sin = _unary("sin")
cos = _unary("cos")
tanh = _unary("tanh")
erf = _unary("erf")
reciprocal = _unary("reciprocal")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")  # noqa: A001
logical_not = _unary("logical_not")
isnan = _unary("isnan")
isinf = _unary("isinf")
isfinite = _unary("isfinite")

add = _binary("add")
subtract = _binary("subtract")
multiply = _binary("multiply")
divide = _binary("divide")
floor_divide = _binary("floor_divide")
remainder = _binary("remainder")
power = _binary("power")
pow = power  # noqa: A001
maximum = _binary("maximum")
minimum = _binary("minimum")
equal = _binary("equal")
not_equal = _binary("not_equal")
less = _binary("less")
less_equal = _binary("less_equal")
greater = _binary("greater")
greater_equal = _binary("greater_equal")
logical_and = _binary("logical_and")
logical_or = _binary("logical_or")


def where(condition, a, b) -> Tensor:
    """``a`` where ``condition`` holds, else ``b`` (with broadcasting)."""
    condition = _tensor_arg("where", condition, (condition, a, b))
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = tensor(a)
    return apply(OPS["where"], condition, a, b)


def clip(x, min=None, max=None) -> Tensor:  # noqa: A002 - Array API names
    """Limit values to [min, max] (numbers or tensors that broadcast); NaN stays NaN.

    At a bound the gradient is 1, as PyTorch's clamp: a value equal to ``min`` passes
    through (written with where, not maximum, which would split the tie and give 0.5).
    When min > max every value becomes max, as in PyTorch.
    """
    x = _tensor_arg("clip", x)
    if min is not None:
        x = where(less(x, min), min if isinstance(min, Tensor) else _bound(x, min), x)
    if max is not None:
        x = where(greater(x, max), max if isinstance(max, Tensor) else _bound(x, max), x)
    return x


def _bound(x, value):
    """A number bound of clip, checked; it keeps x's dtype as a weak scalar."""
    return _number_arg("clip", "bound", value, (x,))


def astype(x, dtype) -> Tensor:
    x = _tensor_arg("astype", x)
    dt = _dtype_arg("astype", dtype, (x,))
    if x.dtype == dt:
        return x
    return apply(OPS["cast"], x, dtype=dt)


def to_device(x, device) -> Tensor:
    x = _tensor_arg("to_device", x)
    dev = _device_arg("to_device", device, (x,))
    if x.device == dev:
        return x
    return apply(OPS["to_device"], x, device=dev)


# --- reductions -------------------------------------------------------------------------

def _values_and_indices(name, x, axis, keepdims):
    """PyTorch's ``max(x, dim)``: the values are read at the indices, so the gradient goes
    to the returned index alone (a tie of 2, 2 gives [1, 0], not [0.5, 0.5])."""
    from .functional_scan import ValuesIndices

    arg = argmax if name == "max" else argmin
    indices = arg(x, axis=axis, keepdims=True)
    values = take_along_axis(x, indices, axis=axis)
    if not keepdims:
        values, indices = squeeze(values, axis=axis), squeeze(indices, axis=axis)
    return ValuesIndices(values, indices)


def _reduce(name):
    op = OPS[name]
    pairs = name in ("max", "min")  # PyTorch's max(x, dim=) returns (values, indices)

    def fn(x, *positional, axis=None, keepdims=False, **torch_keywords):
        x = _tensor_arg(name, x)
        if positional:
            # The Array API's axis is keyword-only: a positional one is PyTorch's dim
            # (torch.max(x, 1) is the pair; torch.sum(x, 1) the sums).
            if len(positional) > 2 or "dim" in torch_keywords or axis is not None:
                raise op_error(ArgumentError, name, (x,),
                               "give the axis once: positionally (PyTorch's dim) or axis=")
            torch_keywords["dim"] = positional[0]
            if len(positional) == 2:
                torch_keywords["keepdim"] = positional[1]
        torch_style = "dim" in torch_keywords
        if torch_keywords:
            axis, keepdims = _torch_axis(name, x, axis, keepdims, torch_keywords)
        try:
            attrs = normalize_reduction_attrs(name, x.ndim, {"axis": axis, "keepdims": keepdims})
        except RuleError as exc:
            raise _rule_error(name, (x,), exc) from None
        if pairs and torch_style and axis is not None:
            return _values_and_indices(name, x, axis, keepdims)
        return apply(op, x, **attrs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{name} over ``axis`` (all axes when None); PyTorch's ``dim=`` and "
                  "``keepdim=`` are accepted too."
                  + (" With ``dim=`` it returns PyTorch's (values, indices) pair."
                     if pairs else ""))
    return fn


def _torch_axis(op, x, axis, keepdims, torch_keywords):
    """Merge PyTorch's ``dim=``/``keepdim=`` into ``axis``/``keepdims``: giving both
    spellings of one argument, or another keyword, is an error naming ``op``."""
    for key in torch_keywords:
        if key not in ("dim", "keepdim"):
            raise op_error(ArgumentError, op, (x,), f"unexpected keyword argument {key!r}")
    if "dim" in torch_keywords:
        if axis is not None:
            raise op_error(ArgumentError, op, (x,),
                           "got both axis= and its PyTorch spelling dim=; give one")
        axis = torch_keywords["dim"]
    if "keepdim" in torch_keywords:
        if keepdims is not False:
            raise op_error(ArgumentError, op, (x,),
                           "got both keepdims= and its PyTorch spelling keepdim=; give one")
        keepdims = torch_keywords["keepdim"]
    return axis, keepdims


sum = _reduce("sum")  # noqa: A001
prod = _reduce("prod")
max = _reduce("max")  # noqa: A001
min = _reduce("min")  # noqa: A001
argmax = _reduce("argmax")
argmin = _reduce("argmin")


def _axes(op, x, axis):
    try:
        return normalize_axes(axis, x.ndim)
    except RuleError as exc:
        raise _rule_error(op, (x,), exc) from None


def _one_axis_keyword(op, x, axis, torch_keywords, default=None):
    """``axis``, or PyTorch's ``dim=`` in its place (both given, or another keyword, is an
    error naming ``op``)."""
    for key in torch_keywords:
        if key != "dim":
            raise op_error(ArgumentError, op, (x,), f"unexpected keyword argument {key!r}")
    if "dim" in torch_keywords:
        if axis is not default:
            raise op_error(ArgumentError, op, (x,),
                           "got both axis= and its PyTorch spelling dim=; give one")
        return torch_keywords["dim"]
    if axis is None and default is None and op == "expand_dims":
        raise op_error(ArgumentError, op, (x,), "missing the axis (or dim=) to insert")
    return axis


def normalize_axis_for(op: str, x, axis) -> int:
    """One axis of ``x``, non-negative; a bad one is an error that names ``op``."""
    try:
        return normalize_axis(axis, x.ndim)
    except RuleError as exc:
        raise _rule_error(op, (x,), exc) from None


def mean(x, axis=None, keepdims=False, **torch_keywords) -> Tensor:
    """Arithmetic mean; integer and bool inputs give float64 (as NumPy). ``dim=`` and
    ``keepdim=`` are accepted too."""
    x = _tensor_arg("mean", x)
    if torch_keywords:
        axis, keepdims = _torch_axis("mean", x, axis, keepdims, torch_keywords)
    axes = _axes("mean", x, axis)
    if x.dtype.kind != "f":
        x = astype(x, float64)
    count = math.prod(x.shape[i] for i in axes)
    # An empty mean is 0/0 = NaN, as in NumPy.
    return sum(x, axis=axes, keepdims=keepdims) / count


def var(x, axis=None, keepdims=False, correction=None, **torch_keywords) -> Tensor:
    """Variance. The Array API's default ``correction=0`` divides by N; ``correction=1``
    (or PyTorch's ``unbiased=True``) gives the unbiased estimate, dividing by N - 1.

    PyTorch's ``torch.var`` defaults to unbiased. A call in PyTorch's spelling (``dim=``)
    gets PyTorch's default, N - 1, as ``max(x, dim=)`` gets PyTorch's pair; one in the
    Array API's (``axis=`` or none) keeps the Array API's, N.
    """
    x = _tensor_arg("var", x)
    correction = _correction("var", x, correction, torch_keywords)
    if torch_keywords:
        axis, keepdims = _torch_axis("var", x, axis, keepdims, torch_keywords)
    axes = _axes("var", x, axis)
    if x.dtype.kind != "f":
        x = astype(x, float64)
    count = math.prod(x.shape[i] for i in axes)
    d = x - mean(x, axis=axes, keepdims=True)
    # N - correction <= 0 gives inf or NaN, as NumPy and PyTorch do.
    return sum(d * d, axis=axes, keepdims=keepdims) / float(count - correction)


def _correction(op, x, correction, torch_keywords):
    unbiased = torch_keywords.pop("unbiased", None)
    if unbiased is not None:
        if correction is not None:
            raise op_error(ArgumentError, op, (x,),
                           "got both correction= and PyTorch's unbiased=; give one")
        return 1 if _bool_arg(op, "unbiased", unbiased, (x,)) else 0
    if correction is None:
        return 1 if "dim" in torch_keywords else 0  # PyTorch's spelling, PyTorch's default
    return _number_arg(op, "correction", correction, (x,))


def std(x, axis=None, keepdims=False, correction=None, **torch_keywords) -> Tensor:
    """Standard deviation: the square root of :func:`var` (same ``correction=`` /
    ``unbiased=`` and ``dim=`` rules)."""
    x = _tensor_arg("std", x)
    correction = _correction("std", x, correction, torch_keywords)
    if torch_keywords:  # checked here, so that errors name std rather than var
        axis, keepdims = _torch_axis("std", x, axis, keepdims, torch_keywords)
    return sqrt(var(x, axis=axis, keepdims=keepdims, correction=correction))


def any(x, axis=None, keepdims=False, **torch_keywords) -> Tensor:  # noqa: A001
    x = _tensor_arg("any", x)
    if torch_keywords:
        axis, keepdims = _torch_axis("any", x, axis, keepdims, torch_keywords)
    if x.size == 0:
        keepdims = _bool_arg("any", "keepdims", keepdims, (x,))
        return full(reduced_shape(x.shape, _axes("any", x, axis), keepdims), False, bool_)
    return max(astype(x, bool_), axis=axis, keepdims=keepdims)


def all(x, axis=None, keepdims=False, **torch_keywords) -> Tensor:  # noqa: A001
    x = _tensor_arg("all", x)
    if torch_keywords:
        axis, keepdims = _torch_axis("all", x, axis, keepdims, torch_keywords)
    if x.size == 0:
        keepdims = _bool_arg("all", "keepdims", keepdims, (x,))
        return full(reduced_shape(x.shape, _axes("all", x, axis), keepdims), True, bool_)
    return min(astype(x, bool_), axis=axis, keepdims=keepdims)


# --- linear algebra ---------------------------------------------------------------------

def matmul(a, b) -> Tensor:
    """Matrix product: batched, broadcasting the batch dimensions; 1-D as in NumPy."""
    return apply(OPS["matmul"], _tensor_arg("matmul", a, (a, b)), _tensor_arg("matmul", b, (a, b)))


def matrix_transpose(x) -> Tensor:
    """Swap the last two axes (``x.mT``)."""
    x = _tensor_arg("matrix_transpose", x)
    ndim = x.ndim
    if ndim < 2:
        raise op_error(ShapeError, "matrix_transpose", (x,), "needs a tensor of rank >= 2")
    return apply(OPS["permute_dims"], x, axes=_last_two_swapped(ndim))


@functools.cache
def _last_two_swapped(ndim: int) -> tuple:
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


def tensordot(a, b, axes=2) -> Tensor:
    """Sum products over the last ``axes`` axes of ``a`` and the first of ``b`` (or pairs)."""
    a = _tensor_arg("tensordot", a, (a, b))
    b = _tensor_arg("tensordot", b, (a, b))
    if _is_int(axes):
        if not 0 <= axes <= builtins.min(a.ndim, b.ndim):
            raise op_error(ShapeError, "tensordot", (a, b),
                           f"axes={axes} needs both operands to have at least {axes} axes")
        axes_a = tuple(range(a.ndim - axes, a.ndim))
        axes_b = tuple(range(axes))
    else:
        pair = tuple(axes) if isinstance(axes, tuple | list) else ()
        if len(pair) != 2:
            raise op_error(ArgumentError, "tensordot", (a, b),
                           f"axes must be an int or a pair of axis sequences, got {axes!r}")
        axes_a, axes_b = (tuple(ax) if isinstance(ax, tuple | list) else (ax,) for ax in pair)
    try:
        axes_a = tuple(normalize_axis(i, a.ndim) for i in axes_a)
        axes_b = tuple(normalize_axis(i, b.ndim) for i in axes_b)
    except RuleError as exc:
        raise _rule_error("tensordot", (a, b), exc) from None
    if (a.ndim == 0 and axes_a) or (b.ndim == 0 and axes_b):
        raise op_error(ShapeError, "tensordot", (a, b), "a rank-0 tensor has no axis to contract")
    if len(axes_a) != len(axes_b) or builtins.any(
        a.shape[i] != b.shape[j] for i, j in zip(axes_a, axes_b)
    ):
        raise op_error(ShapeError, "tensordot", (a, b),
                       f"contracted axes {axes_a} and {axes_b} do not match in size")
    free_a = tuple(i for i in range(a.ndim) if i not in axes_a)
    free_b = tuple(i for i in range(b.ndim) if i not in axes_b)
    k = math.prod(a.shape[i] for i in axes_a)
    a2 = reshape(permute_dims(a, free_a + axes_a), (math.prod(a.shape[i] for i in free_a), k))
    b2 = reshape(permute_dims(b, axes_b + free_b), (k, math.prod(b.shape[i] for i in free_b)))
    out_shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b)
    return reshape(matmul(a2, b2), out_shape)


# --- shape manipulation -----------------------------------------------------------------

def reshape(x, shape) -> Tensor:
    x = _tensor_arg("reshape", x)
    try:
        shape = resolve_shape(_shape_like(shape), x.size)
    except RuleError as exc:
        raise _rule_error("reshape", (x,), exc) from None
    if shape == x.shape:
        return x
    return apply(OPS["reshape"], x, shape=shape)


def _shape_like(shape) -> tuple:
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise RuleError(f"a shape must be a sequence of ints, got {shape!r}",
                        ArgumentError) from None


def permute_dims(x, axes=None) -> Tensor:
    """Reorder axes (reverse them when ``axes`` is None)."""
    x = _tensor_arg("permute_dims", x)
    if axes is None:
        axes = tuple(reversed(range(x.ndim)))
    if not isinstance(axes, tuple | list) or len(axes) != x.ndim:
        raise op_error(ShapeError, "permute_dims", (x,),
                       f"axes {axes!r} are not a permutation of the {x.ndim} axes")
    try:
        axes = tuple(normalize_axis(a, x.ndim) for a in axes)
    except RuleError as exc:
        raise _rule_error("permute_dims", (x,), exc) from None
    if axes == tuple(range(x.ndim)):
        return x
    return apply(OPS["permute_dims"], x, axes=axes)


transpose = permute_dims


def swapaxes(x, axis1, axis2) -> Tensor:
    x = _tensor_arg("swapaxes", x)
    a1, a2 = normalize_axis_for("swapaxes", x, axis1), normalize_axis_for("swapaxes", x, axis2)
    if x.ndim == 0:
        return x
    axes = list(range(x.ndim))
    axes[a1], axes[a2] = axes[a2], axes[a1]
    return permute_dims(x, axes)


def expand_dims(x, axis=None, **torch_keywords) -> Tensor:
    x = _tensor_arg("expand_dims", x)
    axis = _one_axis_keyword("expand_dims", x, axis, torch_keywords)
    try:
        axes = (axis,) if not isinstance(axis, tuple | list) else axis
        axes = normalize_axes(axes, x.ndim + len(axes))
    except RuleError as exc:
        raise _rule_error("expand_dims", (x,), exc) from None
    dims = iter(x.shape)
    shape = tuple(1 if i in axes else next(dims) for i in range(x.ndim + len(axes)))
    return reshape(x, shape)


def squeeze(x, axis=None, **torch_keywords) -> Tensor:
    x = _tensor_arg("squeeze", x)
    if torch_keywords:
        axis = _one_axis_keyword("squeeze", x, axis, torch_keywords)
        if axis is not None:
            # PyTorch's squeeze(dim=d) leaves a dim of another size alone; the Array
            # API's (axis=) refuses it.
            axis = tuple(a for a in _axes("squeeze", x, axis) if x.shape[a] == 1)
            if not axis:
                return x  # (PyTorch returns a view of x; writes reach x either way)
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = _axes("squeeze", x, axis)
        bad = [i for i in axes if x.shape[i] != 1]
        if bad:
            raise op_error(ShapeError, "squeeze", (x,),
                           f"cannot squeeze axis {bad[0]} of size {x.shape[bad[0]]}")
    return reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def flatten(x, start_axis=0, end_axis=-1, *, start_dim=None, end_dim=None) -> Tensor:
    """Merge axes ``start_axis..end_axis`` (PyTorch's ``start_dim``/``end_dim``) into one."""
    x = _tensor_arg("flatten", x)
    start_axis = start_axis if start_dim is None else start_dim
    end_axis = end_axis if end_dim is None else end_dim
    if x.ndim == 0:
        return reshape(x, (1,))
    try:
        s, e = normalize_axis(start_axis, x.ndim), normalize_axis(end_axis, x.ndim)
    except RuleError as exc:
        raise _rule_error("flatten", (x,), exc) from None
    if s > e:
        raise op_error(ShapeError, "flatten", (x,),
                       f"start axis {start_axis} comes after end axis {end_axis}")
    shape = x.shape[:s] + (math.prod(x.shape[s:e + 1]),) + x.shape[e + 1:]
    return reshape(x, shape)


def broadcast_to(x, shape) -> Tensor:
    x = _tensor_arg("broadcast_to", x)
    try:
        shape = _shape_like(shape)
    except RuleError as exc:
        raise _rule_error("broadcast_to", (x,), exc) from None
    if shape == x.shape:
        return x
    return apply(OPS["broadcast_to"], x, shape=shape)


def concat(tensors, axis=0, **torch_keywords) -> Tensor:
    """Join tensors along an existing axis (``em.cat`` and ``dim=`` are PyTorch's
    spellings)."""
    tensors = _tensor_list_arg("concat", tensors)
    if torch_keywords:
        axis = _one_axis_keyword("concat", tensors[0], axis, torch_keywords, default=0)
    if tensors[0].ndim == 0:
        raise op_error(ShapeError, "concat", tuple(tensors),
                       "cannot concatenate rank-0 tensors (use stack)")
    try:
        axis = normalize_axis(axis, tensors[0].ndim)
    except RuleError as exc:
        raise _rule_error("concat", tuple(tensors), exc) from None
    if len(tensors) == 1:
        return tensors[0]
    return apply(OPS["concat"], *tensors, axis=axis)


def stack(tensors, axis=0, **torch_keywords) -> Tensor:
    """Join tensors along a new axis (``dim=`` too)."""
    tensors = _tensor_list_arg("stack", tensors)
    if torch_keywords:
        axis = _one_axis_keyword("stack", tensors[0], axis, torch_keywords, default=0)
    shapes = {t.shape for t in tensors}
    if len(shapes) > 1:
        raise op_error(ShapeError, "stack", tuple(tensors), "all tensors must have the same shape")
    try:
        axis = normalize_axis(axis, tensors[0].ndim + 1)
    except RuleError as exc:
        raise _rule_error("stack", tuple(tensors), exc) from None
    return concat([expand_dims(t, axis) for t in tensors], axis=axis)


# --- indexing ---------------------------------------------------------------------------

def _normalize_index(x, index, op="getitem"):
    """Split a user's index into a static description and its integer index tensors.

    A bool mask comes back alone, as ``(None, [mask])``: it must be the whole index.
    """
    x = _require_tensor(op, x)
    if not isinstance(index, tuple):
        index = (index,)
    items, tensors = [], []
    for item in index:
        if isinstance(item, bool):
            raise op_error(ArgumentError, op, (x,), "a Python bool is not a valid index")
        if isinstance(item, int | np.integer):
            items.append(("int", int(item)))
        elif isinstance(item, slice):
            bounds = (item.start, item.stop, item.step)
            if not builtins.all(v is None or _is_int(v) for v in bounds):
                raise op_error(ArgumentError, op, (x,),
                               f"slice bounds must be ints or None, got {item!r}")
            items.append(("slice",) + tuple(None if v is None else int(v) for v in bounds))
        elif item is None:
            items.append(("none",))
        elif item is Ellipsis:
            items.append(("ellipsis",))
        else:
            if isinstance(item, list | np.ndarray):
                item = tensor(item) if np.asarray(item).size else tensor(item, dtype=int64)
            if not isinstance(item, Tensor):
                raise op_error(ArgumentError, op, (x,),
                               f"unsupported index type {type(item).__name__}")
            if item.dtype == bool_:
                if len(index) != 1:
                    raise op_error(ArgumentError, op, (x, item),
                                   "a bool mask must be the whole index (x[mask])")
                return None, [item]
            items.append(("tensor", len(tensors)))
            tensors.append(item)
    return tuple(items), tensors


def getitem(x, index) -> Tensor:
    """``x[index]``: ints, slices, None, Ellipsis, integer index tensors, a bool mask."""
    static, tensors = _normalize_index(x, index)
    if static is None:  # a bool mask: the output size depends on the mask's values
        return apply(OPS["boolean_mask"], x, tensors[0])
    if static == (("slice", None, None, None),) or static == (("ellipsis",),):
        return x
    return apply(OPS["getitem"], x, *tensors, index=static)


def setitem(x, index, value) -> None:
    """``x[index] = value``: writes into ``x`` (an in-place update, like ``assign``)."""
    static, tensors = _normalize_index(x, index, "setitem")
    if static is None:
        mask = tensors[0]
        assign(x, where(mask, value, x))
        return
    if isinstance(value, Tensor | float | int | bool):
        pass
    else:
        value = tensor(value, dtype=x.dtype)
    assign(x, apply(OPS["index_put"], x, value, *tensors, index=static))


def assign(target, value) -> Tensor:
    """Write ``value`` into ``target``'s storage (an in-place update); returns ``target``.

    With autograd recording, ``target`` takes the history of ``value`` (so ``h += 1`` or
    ``x[i] = w`` differentiate as in PyTorch); ops that used ``target`` before the write
    refuse to backpropagate through the overwritten values. Under ``em.jit`` it becomes an
    explicit assign node applied at the end of the graph.
    """
    if not isinstance(target, Tensor):
        raise op_error(ArgumentError, "assign", (target, value),
                       f"the target must be a Tensor, got {type(target).__name__}")
    given = target  # returned as given (``g += 1`` rebinds g to what this returns)
    tracer = dispatch.current_tracer()
    if tracer is not None:  # an argument also read as a global: one object, as eagerly
        target, value = tracer.same_object(target), tracer.same_object(value)
    tracked = dispatch.grad_enabled() and (
        target.requires_grad or (isinstance(value, Tensor) and value.requires_grad))
    if tracked and target.requires_grad and target.is_leaf:
        raise op_error(BackwardError, "assign", (target, value),
                       "in-place update of a leaf tensor that requires grad; do it under "
                       "em.no_grad() (optimizers do) or use an out-of-place op")
    if value is target:  # nothing to write, and no history to loop into itself
        return given
    if tracer is not None:
        tracer.note_flags(target)  # a capture's flags may change: replays must too
    if isinstance(value, Tensor) and value.shape != target.shape:
        value = broadcast_to(value, target.shape)
    if tracked:
        _take_history(target, value)
    apply(OPS["assign"], target, value)
    mark_modified(target)
    return given


def _take_history(target: Tensor, value) -> None:
    """Make ``target``'s gradient flow into ``value``, the values about to be written to it."""
    with no_grad():
        before = copy(target)  # what target holds now, for vjps that read it
    before.requires_grad = target.requires_grad
    before._grad_fn = old_node = target._grad_fn
    # The node that made target saved target's own buffer as its output (exp, tanh, ...):
    # give it the copy, since the buffer is about to be overwritten.
    if old_node is not None and old_node.saved_output is not None \
            and old_node.saved_output._data is target._data:
        old_node.saved_output = before.detach()
    # value is often computed from target itself (``x[i] = v`` is index_put(x, v), ``h += 1``
    # is add(h, 1)): point that node at the copy, or target's history would loop into itself.
    node = value._grad_fn if isinstance(value, Tensor) else None
    if node is not None and builtins.any(x is target for x in node.inputs):
        node.inputs = tuple(before if x is target else x for x in node.inputs)
    if isinstance(value, Tensor) and value.requires_grad:
        target._grad_fn = GradNode(OPS["copy"], (value,), {}, None)
        target.requires_grad = True
    else:  # overwritten by constants: nothing flows back any more
        target._grad_fn = None
        target.requires_grad = False


def argwhere(x) -> Tensor:
    """Indices of the non-zero elements, one row each (its size depends on the values)."""
    return apply(OPS["argwhere"], _tensor_arg("argwhere", x))


def nonzero(x) -> tuple:
    rows = argwhere(x)
    return tuple(rows[:, i] for i in range(x.ndim))


def debug_print(x, fmt: str = "{}") -> Tensor:
    """Print ``x`` when this op runs: at once in eager mode, at every call of a jitted
    function in graph mode (no graph break, unlike print(x))."""
    if not isinstance(fmt, str) or "{" not in fmt:
        raise op_error(ArgumentError, "debug_print", (x, fmt),
                       "fmt must be a format string with a {} placeholder")
    return apply(OPS["debug_print"], _tensor_arg("debug_print", x), fmt=fmt)


def count_nonzero(x, axis=None) -> Tensor:
    return sum(astype(not_equal(x, 0), int64), axis=axis)


__all__ = [
    "tensor", "asarray", "full", "zeros", "ones", "full_like", "zeros_like", "ones_like",
    "arange", "linspace", "eye", "randn",
    "copy", "negative", "abs", "sign", "exp", "log", "log1p", "expm1", "sqrt", "square", "sin",
    "cos", "tanh", "erf", "reciprocal", "floor", "ceil", "round", "logical_not", "isnan",
    "isinf", "isfinite",
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power", "pow",
    "maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "logical_and", "logical_or", "where", "clip", "astype", "to_device",
    "sum", "prod", "max", "min", "argmax", "argmin", "mean", "var", "std", "any", "all",
    "matmul", "matrix_transpose", "tensordot",
    "reshape", "permute_dims", "transpose", "swapaxes", "expand_dims", "squeeze", "flatten",
    "broadcast_to", "concat", "stack", "getitem", "setitem", "assign", "argwhere", "nonzero",
    "count_nonzero", "debug_print",
]

# Families that live in their own modules, exported from here (and so as em.<name>).
from . import einsum as _einsum_module  # noqa: E402
from . import functional_pieces as _pieces  # noqa: E402
from . import functional_scan as _scan  # noqa: E402
from . import functional_scatter as _scatter  # noqa: E402
from .einsum import einsum  # noqa: E402,F401
from .functional_pieces import (  # noqa: E402,F401
    cat,
    chunk,
    clamp,
    expand,
    logaddexp,
    masked_fill,
    multinomial,
    repeat,
    split,
)
from .functional_scan import (  # noqa: E402,F401
    argsort,
    cumsum,
    gather,
    sort,
    take_along_axis,
    topk,
)
from .functional_scatter import index_add, one_hot, scatter_add, tril, triu  # noqa: E402,F401

__all__ += [name for module in (_einsum_module, _pieces, _scan, _scatter)
            for name in module.__all__ if name != "ValuesIndices"]
