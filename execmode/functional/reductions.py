"""Reductions: sum, prod, max, min, argmax, argmin (one primitive each, PyTorch's
positional ``dim`` and ``(values, indices)`` pair accepted) and the composites over them
(mean, var, std, any, all, count_nonzero).

The module's ``sum``, ``max``, ``min``, ``any`` and ``all`` shadow Python's on purpose: a
body here that calls them means the tensor reduction.
"""

from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor
from ..dispatch import apply, plain_arrays, plain_tensor
from ..dtypes import bool_, float64, int64
from ..errors import ArgumentError
from ..op_errors import op_error
from ..ops import OPS
from ..ops.reductions import normalize_reduction_attrs, reduced_shape
from ..ops.registry import RuleError
from .arguments import _axes, _bool_arg, _number_arg, _rule_error, _tensor_arg, _torch_axis
from .creation import astype, full
from .elementwise import maximum, minimum, not_equal, sqrt, where
from .gather_scatter import gather_along
from .scan import ValuesIndices
from .shape import squeeze


def _values_and_indices(name, x, axis, keepdims):
    """PyTorch's ``max(x, dim)``: the values are read at the indices, so the gradient goes
    to the returned index alone (a tie of 2, 2 gives [1, 0], not [0.5, 0.5])."""
    arg = argmax if name == "max" else argmin
    indices = arg(x, axis=axis, keepdims=True)
    values = gather_along(x, indices, axis)
    if not keepdims:
        values, indices = squeeze(values, axis=axis), squeeze(indices, axis=axis)
    return ValuesIndices(values, indices)


_ndarray = np.ndarray
_ELEMENTWISE = {"max": "maximum", "min": "minimum"}
_ELEMENTWISE_FN = {"max": maximum, "min": minimum}


def _reduce(name):
    op = OPS[name]
    pairs = name in ("max", "min")  # PyTorch's max(x, dim=) returns (values, indices)
    accumulates = name in ("sum", "prod")  # these take dtype=

    registered_impl = op.impl  # (a test may put another in place: then the op runs)

    def fn(x, *positional, axis=None, keepdims=False, dtype=None, **torch_keywords):
        if not positional and dtype is None and not torch_keywords \
                and x.__class__ is Tensor and keepdims.__class__ is bool:
            attrs = _known_attrs(name, axis, keepdims, x._data)
            if attrs is not None:
                arrays = plain_arrays(x)  # nobody watches, nothing to record: at once
                if arrays is not None and op.impl is registered_impl:
                    try:
                        return plain_tensor(registered_impl(np, arrays[0], **attrs))
                    except Exception:  # noqa: BLE001 - the op runs again and explains it
                        pass
                return apply(op, x, **attrs)
        x = _tensor_arg(name, x)
        if dtype is not None:
            if not accumulates:
                raise op_error(ArgumentError, name, (x,), f"{name} takes no dtype=")
            # sum(x, dtype=float64): x cast first, so the sum runs in that dtype, and the
            # result cast too (int32 sums come out of the op as int64)
            out = fn(astype(x, dtype, copy=False), *positional, axis=axis, keepdims=keepdims,
                     **torch_keywords)
            return astype(out, dtype, copy=False)
        if pairs and positional and isinstance(positional[0], Tensor):
            # PyTorch's max(x, other) of two tensors: the elementwise maximum.
            if len(positional) > 1 or torch_keywords or axis is not None or keepdims:
                raise op_error(ArgumentError, name, (x, positional[0]),
                               f"{name}(x, other) of two tensors takes no axis; use "
                               f"em.{_ELEMENTWISE[name]}(x, other)")
            return _ELEMENTWISE_FN[name](x, positional[0])
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
                  + (" ``dtype=`` casts x first, so the result has that dtype."
                     if accumulates else "")
                  + (" With ``dim=`` it returns PyTorch's (values, indices) pair; with a "
                     f"second tensor, PyTorch's ``{name}(x, other)``, the elementwise "
                     f"{_ELEMENTWISE[name]}." if pairs else ""))
    return fn


# A training step reduces over the same few axes at every call (softmax, layer norm, the
# vjps' sums to a broadcast operand's shape): the attributes normalized once per (op,
# axis, keepdims, rank) are kept. Only for an axis of None, an exact int or a tuple of
# exact ints on a NumPy array or a traced value (a function with graph breaks re-traces
# its reductions at every call), so that a bool or float axis (equal to an int as a key)
# still meets the general path's checks.
_ATTRS: dict = {}


def _known_attrs(name: str, axis, keepdims: bool, data):
    """The normalized attributes of ``name`` over ``axis``, or None (the general path)."""
    if data.__class__ is _ndarray:
        ndim = data.ndim
    elif getattr(data, "tracer", None) is not None:  # a traced value (graph/traced_value)
        ndim = len(data.shape)
    else:
        return None
    if axis.__class__ is tuple:
        for a in axis:
            if a.__class__ is not int:
                return None
    elif axis is not None and axis.__class__ is not int:
        return None
    key = (name, axis, keepdims, ndim)
    attrs = _ATTRS.get(key)
    if attrs is None:
        try:
            attrs = normalize_reduction_attrs(name, ndim, {"axis": axis, "keepdims": keepdims})
        except RuleError:
            return None
        if len(_ATTRS) < 4096:
            _ATTRS[key] = attrs
    return attrs


sum = _reduce("sum")  # noqa: A001
prod = _reduce("prod")
max = _reduce("max")  # noqa: A001
min = _reduce("min")  # noqa: A001
argmax = _reduce("argmax")
argmin = _reduce("argmin")


def mean(x, axis=None, keepdims=False, **torch_keywords) -> Tensor:
    """Arithmetic mean; integer and bool inputs give float64 (as NumPy), complex ones
    their own dtype. ``dim=`` and ``keepdim=`` are accepted too."""
    x = _tensor_arg("mean", x)
    if torch_keywords:
        axis, keepdims = _torch_axis("mean", x, axis, keepdims, torch_keywords)
    axes = _axes("mean", x, axis)
    if x.dtype.kind not in "fc":
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
    if x.dtype.kind not in "fc":
        x = astype(x, float64)
    count = math.prod(x.shape[i] for i in axes)
    d = x - mean(x, axis=axes, keepdims=True)
    if d.dtype.kind == "c":  # |d|^2, real, as NumPy and PyTorch give a complex var
        re, im = apply(OPS["real"], d), apply(OPS["imag"], d)
        squares = re * re + im * im
    else:
        squares = d * d
    # N - correction <= 0 gives inf or NaN, as NumPy and PyTorch do.
    return sum(squares, axis=axes, keepdims=keepdims) / float(count - correction)


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
    return _truth_reduction("any", max, False, x, axis, keepdims, torch_keywords)


def all(x, axis=None, keepdims=False, **torch_keywords) -> Tensor:  # noqa: A001
    return _truth_reduction("all", min, True, x, axis, keepdims, torch_keywords)


def _truth_reduction(name, reduce, empty, x, axis, keepdims, torch_keywords) -> Tensor:
    """any (the max of the truth values) or all (their min); over no elements, ``empty``
    (which max and min refuse)."""
    x = _tensor_arg(name, x)
    if torch_keywords:
        axis, keepdims = _torch_axis(name, x, axis, keepdims, torch_keywords)
    if x.size == 0:
        keepdims = _bool_arg(name, "keepdims", keepdims, (x,))
        return full(reduced_shape(x.shape, _axes(name, x, axis), keepdims), empty, bool_)
    return reduce(astype(x, bool_, copy=False), axis=axis, keepdims=keepdims)


def count_nonzero(x, axis=None, keepdims=False) -> Tensor:
    """How many elements are not zero, over ``axis`` (all axes when None), as int64."""
    return sum(astype(not_equal(x, 0), int64), axis=axis, keepdims=keepdims)


def norm_root(total, order):
    """``total ** (1 / order)`` (``sqrt`` for 2) of a sum of powers, order > 0, whose gradient
    is 0 where ``total`` is 0: PyTorch's subgradient of a norm at the zero vector, where
    the root's own derivative would give inf * 0 = NaN. The values are the root's. (em.linalg's
    norms and the PyTorch front end's ``x.norm``; not an Array API name.)"""
    zero = total == 0
    safe = where(zero, 1.0, total)
    root = sqrt(safe) if order == 2 else safe ** (1.0 / order)
    return where(zero, 0.0, root)
