"""Movement ops: reshape, permute_dims, broadcast_to, concat, and indexing.

They move or select elements without arithmetic. reshape/permute/broadcast return views in
eager mode where NumPy can; graph mode may copy.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..errors import DTypeError, IndexingError
from .elementwise import sum_to_shape
from .registry import INDEXING, MOVEMENT, F, OpDef, RuleError, broadcast_shapes, register


def _same_dtype(dtypes, attrs):
    # Movement ops never change the dtype (probing them on dummies would need real shapes).
    return dtypes[0]


# --- reshape ----------------------------------------------------------------------------

def resolve_shape(shape, size: int) -> tuple:
    """Replace one -1 in ``shape`` so that it holds ``size`` elements. A traced size's
    expression (symbolic_sizes.SymInt) stays one, so that a size-generic plan evaluates it
    at each call."""
    shape = tuple(d if isinstance(d, int) and d.__class__ is not bool else int(d)
                  for d in shape)
    if shape.count(-1) > 1:
        raise RuleError(f"reshape to {shape}: only one dimension can be -1")
    if any(d < -1 for d in shape):
        raise RuleError(f"reshape to {shape}: negative dimension")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or size % known:
            raise RuleError(f"cannot reshape {size} elements into {shape}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    if math.prod(shape) != size:
        raise RuleError(f"cannot reshape {size} elements into {shape}")
    return shape


def _reshape_rule(x, *, shape):
    return resolve_shape(shape, math.prod(x.shape))


register(OpDef(
    name="reshape", dtype_rule=_same_dtype, kind=MOVEMENT, impl=lambda xp, a, *, shape: xp.reshape(a, shape),
    shape_rule=_reshape_rule, vjp=lambda g, out, x, *, shape: (_reshape_back(g, x.shape),),
))


def _reshape_back(g, shape):
    """``g`` reshaped to ``shape``, a shape g's elements are known to fill: the op itself,
    without F.reshape's checks of a user's shape (backward runs this for every view)."""
    return g if g.shape == shape else F.apply_op("reshape", g, shape=shape)


# --- permute_dims -----------------------------------------------------------------------

def _permute_rule(x, *, axes):
    if sorted(axes) != list(range(len(x.shape))):
        raise RuleError(f"axes {axes} are not a permutation of the {len(x.shape)} axes")
    return tuple(x.shape[i] for i in axes)


def _permute_vjp(g, out, x, *, axes):
    return (F.apply_op("permute_dims", g, axes=inverse_permutation(axes)),)


@functools.lru_cache(maxsize=256)
def inverse_permutation(axes: tuple) -> tuple:
    # the permutation that undoes ``axes`` (a valid one: the forward op checked it)
    return tuple(int(i) for i in np.argsort(axes))


register(OpDef(
    name="permute_dims", dtype_rule=_same_dtype, kind=MOVEMENT,
    # The method, not xp.transpose: the same view, without NumPy's Python-level wrapper
    # (a microsecond of every linear layer's weight.mT).
    impl=lambda xp, a, *, axes: a.transpose(axes),
    shape_rule=_permute_rule, vjp=_permute_vjp,
))


# --- broadcast_to -----------------------------------------------------------------------

def _broadcast_rule(x, *, shape):
    if len(shape) < len(x.shape) or broadcast_shapes(x.shape, shape) != tuple(shape):
        raise RuleError(f"cannot broadcast {tuple(x.shape)} to {tuple(shape)}")
    return tuple(shape)


register(OpDef(
    name="broadcast_to", dtype_rule=_same_dtype, kind=MOVEMENT,
    impl=lambda xp, a, *, shape: xp.broadcast_to(a, shape),
    shape_rule=_broadcast_rule,
    vjp=lambda g, out, x, *, shape: (sum_to_shape(g, x.shape),),
))


# --- concat -----------------------------------------------------------------------------

def _concat_rule(*xs, axis):
    first = xs[0].shape
    if len(first) == 0:
        raise RuleError("cannot concatenate rank-0 tensors (use stack)")
    for x in xs[1:]:
        if len(x.shape) != len(first) or any(
            a != b for i, (a, b) in enumerate(zip(first, x.shape)) if i != axis
        ):
            raise RuleError(
                f"all shapes must match except on axis {axis}: "
                + ", ".join(str(tuple(x.shape)) for x in xs)
            )
    return tuple(
        sum(x.shape[axis] for x in xs) if i == axis else d for i, d in enumerate(first)
    )


def _concat_vjp(g, out, *xs, axis):
    grads, start = [], 0
    for x in xs:
        stop = start + x.shape[axis]
        index = (slice(None),) * axis + (slice(start, stop),)
        grads.append(g[index])
        start = stop
    return tuple(grads)


register(OpDef(
    name="concat", kind=MOVEMENT, dtype_rule=lambda dtypes, attrs: np.result_type(*dtypes),
    impl=lambda xp, *arrays, axis: xp.concatenate(arrays, axis=axis),
    shape_rule=_concat_rule, vjp=_concat_vjp,
))


# --- indexing ---------------------------------------------------------------------------
# A static index is a tuple of items, each one of:
#   ("int", i) | ("slice", start, stop, step) | ("none",) | ("ellipsis",) | ("tensor", k)
# where ("tensor", k) stands for the k-th extra input (an integer index tensor).

def index_to_key(index, arrays):
    """Turn a static index plus its index arrays into a NumPy key."""
    key = []
    for item in index:
        tag = item[0]
        if tag == "int":
            key.append(item[1])
        elif tag == "slice":
            key.append(slice(item[1], item[2], item[3]))
        elif tag == "none":
            key.append(None)
        elif tag == "ellipsis":
            key.append(Ellipsis)
        else:
            key.append(arrays[item[1]])
    return tuple(key)


def basic_key(index) -> tuple:
    """The NumPy key of a basic index (no index tensors), always making a view: integers
    alone would give a NumPy scalar."""
    key = index_to_key(index, ())
    return key if Ellipsis in key else key + (Ellipsis,)


def format_index(index) -> str:
    parts = []
    for item in index:
        tag = item[0]
        if tag == "int":
            parts.append(str(item[1]))
        elif tag == "slice":
            start, stop, step = item[1:]
            text = f"{'' if start is None else start}:{'' if stop is None else stop}"
            if step is not None:
                text += f":{step}"
            parts.append(text)
        elif tag == "none":
            parts.append("None")
        elif tag == "ellipsis":
            parts.append("...")
        else:
            parts.append(f"<index {item[1]}>")
    return "[" + ", ".join(parts) + "]"


def _probe_index(shape, index, index_avals):
    """Apply the index to a zero-memory stand-in of ``shape`` to learn NumPy's result shape."""
    stand_in = np.broadcast_to(np.empty((), np.float32), shape)
    arrays = [np.zeros(a.shape, np.int64) for a in index_avals]
    try:
        return stand_in[index_to_key(index, arrays)].shape
    except IndexError as exc:
        raise RuleError(f"index {format_index(index)}: {exc}", IndexingError) from None


def _getitem_rule(x, *index_avals, index):
    for a in index_avals:
        if a.dtype.kind not in "iu":
            raise RuleError(f"index tensors must be integer, got {a.dtype}", DTypeError)
    return _probe_index(x.shape, index, index_avals)


def _getitem_impl(xp, a, *index_arrays, index):
    try:
        return a[index_to_key(index, index_arrays)]
    except IndexError as exc:
        # An index tensor's value out of range: the shape rule, which sees no values, cannot
        # explain it. Anything else (a float index tensor) the rule explains.
        if all(arr.dtype.kind in "iu" for arr in index_arrays):
            raise RuleError(f"index {format_index(index)}: {exc}", IndexingError) from None
        raise


def _getitem_vjp(g, out, x, *index_tensors, index):
    return (F.apply_op("index_add", g, *index_tensors, shape=tuple(x.shape), index=index),) + (
        None,
    ) * len(index_tensors)


register(OpDef(
    name="getitem", dtype_rule=_same_dtype, kind=INDEXING, impl=_getitem_impl, shape_rule=_getitem_rule,
    vjp=_getitem_vjp, nondiff_inputs=(1, 2, 3, 4, 5, 6, 7, 8),
    doc="x[index] with ints, slices, None, Ellipsis and integer index tensors.",
))


def _index_add_rule(g, *index_avals, shape, index):
    return tuple(shape)


def _index_add_impl(xp, g, *index_arrays, shape, index):
    out = xp.zeros(shape, dtype=g.dtype)
    key = index_to_key(index, index_arrays)
    if index_arrays:
        if xp is np:
            if not _add_rows_by_rank(out, key, g):
                np.add.at(out, key, g)
        else:
            import cupyx  # noqa: PLC0415 - GPU only

            cupyx.scatter_add(out, key, g)
    else:
        out[key] = g
    return out


# np.add.at adds one element at a time (~0.4 us a row of 64 here). Rows picked by one index
# array (an embedding's backward) go faster in rounds: round k adds every row's k-th
# occurrence with one fancy-indexed +=, whose positions are then distinct. Each output row
# still gets 0 + g_first + g_second + ... in the index's order: np.add.at's bits (but for
# which NaN's payload survives where two NaNs meet: NumPy's SIMD add may keep the other's).
_MOST_ROUNDS = 64


def _add_rows_by_rank(out, key, g) -> bool:
    """``np.add.at(out, key, g)`` for ``key = (rows,)`` with ``g`` of shape ``rows.shape +
    out.shape[1:]``, in rounds; False (nothing done) for anything else, an index out of
    range (np.add.at raises it) or a row repeated more than _MOST_ROUNDS times."""
    if len(key) != 1 or key[0].__class__ is not np.ndarray or out.ndim == 0:
        return False
    rows = key[0]
    n = out.shape[0]
    if rows.dtype.kind not in "iu" or rows.size == 0 or g.shape != rows.shape + out.shape[1:]:
        return False
    flat = rows.ravel()
    low, high = flat.min(), flat.max()
    if low < -n or high >= n:
        return False
    if low < 0:
        flat = np.where(flat < 0, flat + n, flat)
    counts = np.bincount(flat, minlength=n)
    most = int(counts.max())
    if most > _MOST_ROUNDS:
        return False
    values = g.reshape((flat.size,) + out.shape[1:])
    if most == 1:
        out[flat] += values
        return True
    order = np.argsort(flat, kind="stable")
    first = np.cumsum(counts) - counts  # where each row's run starts in sorted order
    rank = np.empty_like(flat)
    rank[order] = np.arange(flat.size) - first[flat[order]]
    # Positions grouped by rank (stable: index order within a round), gathered once.
    by_rank = np.argsort(rank, kind="stable")
    rows, picked = flat[by_rank], values[by_rank]
    ends = np.cumsum(np.bincount(rank, minlength=most))
    start = 0
    for end in ends.tolist():
        out[rows[start:end]] += picked[start:end]
        start = end
    return True


register(OpDef(
    name="index_add", dtype_rule=_same_dtype, kind=INDEXING, impl=_index_add_impl, shape_rule=_index_add_rule,
    vjp=lambda g, out, src, *idx, shape, index: (F.apply_op("getitem", g, *idx, index=index),)
    + (None,) * len(idx),
    nondiff_inputs=(1, 2, 3, 4, 5, 6, 7, 8),
    doc="Gradient of getitem: zeros of `shape` with `g` added at `index` (repeats add up).",
))


def _index_put_rule(x, v, *index_avals, index):
    target = _probe_index(x.shape, index, index_avals)
    try:
        broadcast_shapes(v.shape, target)
        if len(v.shape) > len(target) and any(d != 1 for d in v.shape[: len(v.shape) - len(target)]):
            raise RuleError("too many dimensions")
    except RuleError:
        raise RuleError(
            f"cannot assign a value of shape {tuple(v.shape)} to x{format_index(index)} "
            f"of shape {target}"
        ) from None
    return tuple(x.shape)


def _index_put_impl(xp, a, v, *index_arrays, index):
    out = a.copy()
    try:
        out[index_to_key(index, index_arrays)] = v
    except IndexError as exc:
        # An index tensor's value out of range, as in getitem (the rule sees no values).
        if all(arr.dtype.kind in "iu" for arr in index_arrays):
            raise RuleError(f"index {format_index(index)}: {exc}", IndexingError) from None
        raise
    return out


def _index_put_vjp(g, out, x, v, *idx, index):
    gx = F.apply_op("index_put", g, 0.0, *idx, index=index) if hasattr(x, "shape") else None
    gv = None
    if hasattr(v, "shape"):
        gv = sum_to_shape(F.apply_op("getitem", g, *idx, index=index), v.shape)
    return (gx, gv) + (None,) * len(idx)


register(OpDef(
    name="index_put", dtype_rule=_same_dtype, kind=INDEXING, impl=_index_put_impl, shape_rule=_index_put_rule,
    vjp=_index_put_vjp, nondiff_inputs=(2, 3, 4, 5, 6, 7, 8),
    doc="A copy of x with x[index] = v (x[index] = v on a tensor assigns through it).",
))


# --- data-dependent shapes (graph breaks under jit) -------------------------------------

def _data_dependent_rule(*avals, **attrs):
    # Only reached while tracing: the tracer breaks the graph before asking for a shape.
    raise RuleError("the output shape depends on the input values")


def _boolean_mask_impl(xp, a, m):
    if a.shape[:m.ndim] != m.shape and not (m.size == 0 and m.ndim <= a.ndim):
        # NumPy takes a mask with no elements whatever its shape (it selects nothing); the
        # standard leaves a mismatch unspecified, and the conformance suite draws one
        raise RuleError(f"a mask of shape {m.shape} does not match the leading dimensions of "
                        f"a tensor of shape {a.shape}", IndexingError)  # NumPy's kind too
    if a.shape[:m.ndim] != m.shape:
        return xp.empty((0,) + a.shape[m.ndim:], a.dtype)
    return a[m]


register(OpDef(
    name="boolean_mask", dtype_rule=_same_dtype, kind=INDEXING, impl=_boolean_mask_impl,
    shape_rule=_data_dependent_rule, data_dependent_shape=True, nondiff_inputs=(1,),
    vjp=lambda g, out, x, m: (F.apply_op("masked_scatter", g, m, shape=tuple(x.shape)), None),
    doc="x[mask] for a bool mask: the selected elements, flattened.",
))


def _masked_scatter_impl(xp, g, m, *, shape):
    out = xp.zeros(shape, dtype=g.dtype)
    out[m] = g
    return out


register(OpDef(
    name="masked_scatter", kind=INDEXING, impl=_masked_scatter_impl,
    shape_rule=lambda g, m, *, shape: tuple(shape), dtype_rule=_same_dtype,
    nondiff_inputs=(1,),
    vjp=lambda g, out, src, m, *, shape: (F.apply_op("boolean_mask", g, m), None),
    doc="Gradient of boolean_mask: zeros of `shape` with `g` written where the mask is set.",
))
register(OpDef(
    name="argwhere", kind=INDEXING, impl=lambda xp, a: xp.argwhere(a),
    shape_rule=_data_dependent_rule,
    data_dependent_shape=True,
    doc="Indices of non-zero elements, one row per element (nonzero stacks its columns).",
))
