"""PyTorch functions that ``em`` (the Array API namespace) has no name for: each is the
Tensor method of the same name (``torch.cumprod(x, 1)`` is ``x.cumprod(1)``) or a few
``em`` ops (``cdist``, ``searchsorted``, ``tril_indices``), so it traces and differentiates
as they do. Those whose result's size depends on the values (``unique``, ``bincount``)
read the values: under em.jit they are a graph break.
"""

from __future__ import annotations

import numpy as np

from .. import api as em
from .._tensor import Tensor
from ..errors import ArgumentError
from ..op_errors import op_error


def _method(name, doc):
    def function(input, *args, **kwargs):  # noqa: A002 - PyTorch's argument name
        return getattr(input, name)(*args, **kwargs)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


cumprod = _method("cumprod", "Running products along ``dim``.")
trunc = fix = _method("trunc", "Round toward zero.")
fmod = _method("fmod", "The remainder with the dividend's sign (C's fmod).")
diag = _method("diag", "A 1-D tensor's diagonal matrix, or a 2-D tensor's diagonal.")
trace = _method("trace", "The sum of a matrix's main diagonal.")
diff = _method("diff", "Differences of neighbours along ``dim``, ``n`` times.")
nan_to_num = _method("nan_to_num", "NaN and +-inf replaced by finite numbers.")
masked_select = _method("masked_select", "The elements where ``mask`` holds, as 1-D.")
unique = _method("unique", "The distinct values, sorted (a graph break under em.jit).")
lerp = _method("lerp", "``input + weight * (end - input)``.")
atan = arctan = _method("atan", "The arc tangent (float64's accuracy; see Tensor.atan).")
atan2 = arctan2 = _method("atan2", "The angle of the point (other, input), in its quadrant.")


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, N) int64 row and column indices of a ``row`` x ``col`` matrix's lower
    triangle (PyTorch's ``tril_indices``)."""
    rows, cols = np.tril_indices(row, offset, col)
    out = em.tensor(np.stack([rows, cols]).astype(np.int64), device=device)
    return out if dtype is None else em.astype(out, dtype, copy=False)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, N) int64 indices of a ``row`` x ``col`` matrix's upper triangle."""
    rows, cols = np.triu_indices(row, offset, col)
    out = em.tensor(np.stack([rows, cols]).astype(np.int64), device=device)
    return out if dtype is None else em.astype(out, dtype, copy=False)


def cdist(x1, x2, p=2.0):
    """Pairwise p-norm distances between the rows of ``x1`` (..., P, M) and ``x2``
    (..., R, M): (..., P, R)."""
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise op_error(ArgumentError, "cdist", (x1, x2), "expects (..., P, M) and (..., R, M)")
    difference = em.expand_dims(x1, axis=-2) - em.expand_dims(x2, axis=-3)
    return difference.norm(p, dim=-1)


def dist(input, other, p=2):  # noqa: A002
    """The p-norm of ``input - other``."""
    return (input - other).norm(p)


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """For each value, the index where it would go in ``sorted_sequence`` (its last axis)
    to keep it sorted: the first such index, or the last with ``right=True``."""
    if sorter is not None:
        raise op_error(ArgumentError, "searchsorted", (sorted_sequence,),
                       "sorter= is not supported; sort the sequence first")
    right = right or side == "right"
    scalar = not isinstance(values, Tensor)
    v = em.tensor(values, dtype=sorted_sequence.dtype) if scalar else values
    seq = sorted_sequence
    if seq.ndim == 1:
        below = em.expand_dims(seq, axis=0) if v.ndim else seq
        v_col = em.expand_dims(v, axis=-1) if v.ndim else v
        if v.ndim > 1:
            below = em.reshape(seq, (1,) * v.ndim + (seq.shape[0],))
    else:
        below, v_col = em.expand_dims(seq, axis=-2), em.expand_dims(v, axis=-1)
    hits = (below <= v_col) if right else (below < v_col)
    out = em.sum(em.astype(hits, em.int64), axis=-1)
    return em.astype(out, em.int32) if out_int32 else out


def bincount(input, weights=None, minlength=0):  # noqa: A002
    """How often each value 0, 1, ... occurs in a 1-D int64 tensor (the sums of
    ``weights`` instead, when given). Its length depends on the values."""
    if input.ndim != 1:
        raise op_error(ArgumentError, "bincount", (input,), "expects a 1-D tensor")
    w = None if weights is None else weights.numpy()
    counts = np.bincount(input.numpy(), weights=w, minlength=minlength)
    if weights is None:
        return em.tensor(counts.astype(np.int64), device=input.device)
    return em.tensor(counts.astype(weights.numpy().dtype if w.dtype.kind == "f"
                                   else np.float64), device=input.device)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``torch.cosine_similarity``: ``torch.nn.functional.cosine_similarity``."""
    from ..nn import functional as NF

    return NF.cosine_similarity(x1, x2, dim=dim, eps=eps)


__all__ = ["arctan", "arctan2", "atan", "atan2", "bincount", "cdist", "cosine_similarity", "cumprod", "diag", "diff", "dist",
           "fix", "fmod", "lerp", "masked_select", "nan_to_num",
           "searchsorted", "trace", "tril_indices", "triu_indices", "trunc", "unique"]
