"""Gather and scatter along one axis, one_hot, and the label check of the losses.

``take_along_axis(x, index, axis)`` reads ``x`` at ``index`` along ``axis`` and at the
index's own position on every other axis (PyTorch's ``gather``: the index may be smaller
than ``x`` on the other axes). ``scatter_add`` is its transpose (and its vjp): ``src`` added
into a copy of ``x`` at the same positions, repeats adding up.

An index value out of range is only known when the op runs: these ops *may raise* (see
``passes/dce.py``), so graph mode keeps them and raises the error eager raises, at the
user's line, even when nothing reads their result.
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError, IndexingError
from .movement import _same_dtype
from .registry import INDEXING, F, OpDef, RuleError, register


def _check_index_aval(name, x, index, axis):
    if index.dtype.kind not in "iu":
        raise RuleError(f"the index must be an integer tensor, got {index.dtype}", DTypeError)
    if len(index.shape) != len(x.shape):
        raise RuleError(f"the index has rank {len(index.shape)} but the tensor has rank "
                        f"{len(x.shape)}; they must match (use expand_dims)")
    for d, (i, n) in enumerate(zip(index.shape, x.shape)):
        if d != axis and i > n:
            raise RuleError(f"the index has size {i} on axis {d}, larger than the tensor's "
                            f"{n} (shapes {tuple(index.shape)} and {tuple(x.shape)})")


def check_index_values(xp, index, size: int, what: str = "index") -> None:
    """Raise an IndexingError naming the first value of ``index`` outside [0, size)."""
    if index.size == 0:
        return
    bad = (index < 0) | (index >= size)
    if bool(bad.any()):
        pos = tuple(int(p) for p in np.argwhere(_host(xp, bad))[0])
        value = int(_host(xp, index)[pos])
        raise RuleError(f"{what} {value} at position {pos} is out of range [0, {size})",
                        IndexingError)


def _host(xp, a):
    return a if xp is np else a.get()


def _positions(xp, index, axis):
    """A NumPy key selecting, at every position of ``index``, that position on each other
    axis and ``index``'s value on ``axis``."""
    key = []
    for d, n in enumerate(index.shape):
        if d == axis:
            key.append(index)
        else:
            shape = [1] * index.ndim
            shape[d] = n
            key.append(xp.arange(n).reshape(shape))
    return tuple(key)


# --- take_along_axis (gather) -------------------------------------------------------------

def _take_rule(x, index, *, axis):
    _check_index_aval("take_along_axis", x, index, axis)
    return tuple(index.shape)


def _take_impl(xp, a, index, *, axis):
    _check_index_aval("take_along_axis", a, index, axis)  # eager runs no shape rule
    check_index_values(xp, index, a.shape[axis])
    return a[_positions(xp, index, axis)]


def _take_vjp(g, out, x, index, *, axis):
    zeros = F.zeros(x.shape, dtype=g.dtype, device=g.device)
    return F.apply_op("scatter_add", zeros, index, g, axis=axis), None


register(OpDef(
    name="take_along_axis", kind=INDEXING, impl=_take_impl, shape_rule=_take_rule,
    dtype_rule=_same_dtype, vjp=_take_vjp, nondiff_inputs=(1,), may_raise=True,
    doc="out[..i..] = x[..index[..i..] on axis..] (PyTorch's gather).",
))


# --- scatter_add --------------------------------------------------------------------------

def _scatter_rule(x, index, src, *, axis):
    _check_index_aval("scatter_add", x, index, axis)
    if tuple(src.shape) != tuple(index.shape):
        raise RuleError(f"src has shape {tuple(src.shape)} but the index has shape "
                        f"{tuple(index.shape)}; they must match")
    return tuple(x.shape)


def _scatter_impl(xp, a, index, src, *, axis):
    _scatter_rule(a, index, src, axis=axis)  # eager runs no shape rule
    check_index_values(xp, index, a.shape[axis])
    out = a.astype(np.result_type(a.dtype, src.dtype), copy=True)
    key = _positions(xp, index, axis)
    if xp is np:
        np.add.at(out, key, src)
    else:
        import cupyx  # noqa: PLC0415 - GPU only

        cupyx.scatter_add(out, key, src)
    return out


def _scatter_vjp(g, out, x, index, src, *, axis):
    gx = g if getattr(x, "requires_grad", False) else None
    gsrc = None
    if getattr(src, "requires_grad", False):
        gsrc = F.apply_op("take_along_axis", g, index, axis=axis)
    return gx, None, gsrc


register(OpDef(
    name="scatter_add", kind=INDEXING, impl=_scatter_impl, shape_rule=_scatter_rule,
    dtype_rule=lambda dtypes, attrs: np.result_type(dtypes[0], dtypes[2]),
    vjp=_scatter_vjp, nondiff_inputs=(1,), may_raise=True,
    doc="A copy of x with src added at index along axis (repeats add up): gather's vjp.",
))


# --- one_hot ------------------------------------------------------------------------------

def _one_hot_rule(x, *, num_classes):
    if x.dtype.kind not in "iu":
        raise RuleError(f"one_hot needs an integer tensor, got {x.dtype}", DTypeError)
    return tuple(x.shape) + (num_classes,)


def _one_hot_impl(xp, a, *, num_classes):
    _one_hot_rule(a, num_classes=num_classes)
    check_index_values(xp, a, num_classes, "class")
    return (a[..., None] == xp.arange(num_classes)).astype(np.int64)


register(OpDef(
    name="one_hot", kind=INDEXING, impl=_one_hot_impl, shape_rule=_one_hot_rule,
    dtype_rule=lambda dtypes, attrs: np.dtype(np.int64), may_raise=True,
    doc="one_hot(x, num_classes): int64 rows with a 1 at each class index.",
))


# --- the label check of cross_entropy and nll_loss ----------------------------------------

def _labels_rule(target, *, num_classes, ignore_index, caller, noun="class"):
    if target.dtype.kind not in "iu":
        raise RuleError(f"class labels must be integers, got {target.dtype}", DTypeError)
    return tuple(target.shape)


def _labels_impl(xp, target, *, num_classes, ignore_index, caller, noun="class"):
    """The mask of labels that count (not ``ignore_index``); raises for any other label
    outside [0, num_classes), naming it (eager PyTorch raises too; a silent loss of 0
    would hide the bug). ``noun="row"``: the indices of an Embedding's table."""
    _labels_rule(target, num_classes=num_classes, ignore_index=ignore_index, caller=caller)
    keep = target != ignore_index
    bad = keep & ((target < 0) | (target >= num_classes))
    if bool(bad.any()):
        pos = tuple(int(p) for p in np.argwhere(_host(xp, bad))[0])
        value = int(_host(xp, target)[pos])
        if noun == "row":
            raise RuleError(f"{caller}: index {value} at position {pos} is outside the "
                            f"table of {num_classes} rows", IndexingError)
        raise RuleError(
            f"{caller}: target holds class {value} at position {pos}, outside [0, "
            f"{num_classes}) for {num_classes} classes (ignore_index={ignore_index})",
            IndexingError)
    return keep


register(OpDef(
    name="check_labels", kind=INDEXING, impl=_labels_impl, shape_rule=_labels_rule,
    dtype_rule=lambda dtypes, attrs: np.dtype(np.bool_), may_raise=True,
    doc="The mask of class labels that are not ignore_index; raises for labels outside "
        "[0, num_classes).",
))
