"""How NumPy sums floats, for kernels that must keep eager's overflow (issue 38).

A kernel sums float32 in float64 (more accurate, and vectorised in any order), so where
eager's float32 partial sums overflow, ``mean([3e38, 3e38, -3e38])`` is inf eagerly and
1e38 in the kernel. A kernel therefore also sums ``|value|``: while that stays under
:func:`overflow_bound`, no float32 partial sum in any order can overflow, and the float64
result stands (within rounding of eager's). Past it (values near the float limits, or
Inf/NaN among them: rare), the kernel sums that output again exactly as NumPy does, bit
for bit, so eager's inf, -inf or NaN comes out where eager's does.

NumPy's ``add.reduce`` (checked against NumPy on random shapes, axes and layouts, see
tests/codegen/test_eager_sum.py) walks the input in memory order, size-1 axes dropped.
When the innermost axis is reduced, each run of contiguous reduced axes innermost in
memory is summed pairwise (``pairwise_sum``: under 8 values one after another from -0.0,
up to 128 in 8 interleaved accumulators, above that halves of multiples of 8), and the
runs' sums are added in order into the output, which starts at 0.0. When the innermost
axis is kept, every point is added in order into its output. This module gives, per
kernel, the order of the reduce loops and the run length (``eager_plan``), from the memory
layout eager's summed array has (an input's, or the one NumPy gives a fresh result:
``fresh_strides``); the C renderer (render_reduction.py) and the kernel-IR interpreter
replay it.

Products use no pairwise scheme: NumPy multiplies in order, and so do kernels (no vector
reassociation, no parallel chunks), so overflow and underflow fall where eager's do.
"""

from __future__ import annotations

import math

import numpy as np

# Half an ulp of 1.0: the relative error of one rounding.
_UNIT_ROUNDOFF = {np.dtype(np.float32): 2.0 ** -24, np.dtype(np.float64): 2.0 ** -53}


def checks_overflow(op: str, dtype) -> bool:
    """Does a kernel summing ``dtype`` need the check (float32 and float64 sums)?"""
    return op == "sum" and np.dtype(dtype) in _UNIT_ROUNDOFF


def overflow_bound(dtype, points: int) -> float:
    """A bound on the kernel's sum of |values| (itself summed in ``dtype``, in any order)
    below which no partial sum of ``points`` values in ``dtype``, in any order and with a
    rounding at every step, can reach the overflow threshold. Each partial sum is at most
    (1 + u)^points * S, S the exact sum of |v|; the computed sum of |v| is at least
    S * (1 - u)^points; so comparing it with max * exp(-2 * points * u) is safe."""
    dtype = np.dtype(dtype)
    u = _UNIT_ROUNDOFF[dtype]
    return float(np.finfo(dtype).max) * math.exp(-2.0 * points * u) * (1.0 - 1e-6)


def eager_plan(sizes, roles, source_strides) -> tuple[tuple, int]:
    """(the reduce loops in NumPy's nesting order, the pairwise run length) for a kernel
    with loop ``sizes`` and ``roles``, summing values laid out in memory with
    ``source_strides`` (per loop: an input's own strides, or ``fresh_strides`` of the op
    that computed them)."""
    loops = [i for i, size in enumerate(sizes) if size > 1]
    order = sorted(loops, key=lambda i: -abs(source_strides[i]))  # outermost first
    reduce_order = tuple(i for i in order if roles[i] == "reduce")
    run = 1
    if order and roles[order[-1]] == "reduce":
        run = sizes[order[-1]]
        for outer, inner in zip(reversed(order[:-1]), reversed(order[1:])):
            if roles[outer] != "reduce" or \
                    abs(source_strides[outer]) != abs(source_strides[inner]) * sizes[inner]:
                break
            run *= sizes[outer]
    return reduce_order, run


def fresh_strides(operands, sizes) -> tuple:
    """Element strides (per loop) of the array a NumPy ufunc allocates for operands with
    these strides (per loop; 0 where broadcast), in its default order "K": NumPy's
    iterator sorts the axes by stride with a stable insertion sort in which an axis moves
    outward past another only if every operand striding both says so (on a conflict C
    order wins), then allocates the result contiguous in that order
    (npyiter_find_best_axis_ordering)."""
    ndim = len(sizes)
    perm = list(range(ndim - 1, -1, -1))  # the iterator's axes, innermost first
    for i0 in range(1, ndim):
        j0, position = perm[i0], i0
        for i1 in range(i0 - 1, -1, -1):
            j1 = perm[i1]
            ambiguous, swap = True, False
            for strides in operands:
                if strides[j0] != 0 and strides[j1] != 0:
                    if abs(strides[j1]) <= abs(strides[j0]):
                        swap = False
                    elif ambiguous:
                        swap = True
                    ambiguous = False
            if not ambiguous:
                if not swap:
                    break
                position = i1
        if position != i0:
            perm[position + 1:i0 + 1] = perm[position:i0]
            perm[position] = j0
    out, step = [0] * ndim, 1
    for j in perm:
        out[j] = step
        step *= max(sizes[j], 1)
    return tuple(out)


# --- NumPy's order, with NumPy (the kernel-IR interpreter; the tests) -------------------

def eager_sum(points: np.ndarray, run: int):
    """Eager's sum of one output's ``points`` (1-D, in NumPy's order): runs of ``run``
    points summed pairwise (by NumPy itself: ``add.reduce`` of a contiguous run is
    0.0 + pairwise_sum, and the sum never holds -0.0 for that 0.0 to change), added in
    order to 0.0."""
    t = points.dtype.type
    if run > 1:
        runs = np.add.reduce(np.ascontiguousarray(points).reshape(-1, run), axis=1)
    else:
        runs = points
    # add.accumulate adds one after another: the running sum, from 0.0.
    return t(np.add.accumulate(np.concatenate([np.zeros(1, points.dtype), runs]))[-1])


__all__ = ["checks_overflow", "eager_plan", "eager_sum", "fresh_strides", "overflow_bound"]
