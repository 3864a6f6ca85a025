"""Value summaries of op outputs: min, max, mean, std and NaN/Inf counts.

Computed on the recording thread, right after the op, because later in-place updates
would change the values. Off by default: a summary reads the whole output several times
(about the cost of the op itself for elementwise ops). As in the debugger's own summary
(execmode/debug/summary.py): min and max ignore NaNs but see infinities (a tensor holding
inf reads max=inf, not the largest finite value); mean and std are over the finite values,
in float64, so one Inf does not turn the mean into Inf. All NaN: min and max are None.
"""

from __future__ import annotations

import numpy as np
from execmode.profilers.rows import Summary

from execmode.debug.summary import one_copy

_EMPTY = Summary(None, None, None, None, 0, 0)
_SMALL = 4096  # elements: below this, the cheaper small-array path


def summarize(array) -> Summary:
    """The summary of a NumPy or CuPy array (CuPy computes on the GPU, then copies 6 numbers).
    A broadcast view (an expand's output) is read once per distinct element."""
    array, repeat = one_copy(array)
    summary = _summarize(array)
    if repeat > 1 and (summary.nan or summary.inf):
        summary = summary._replace(nan=summary.nan * repeat, inf=summary.inf * repeat)
    return summary


def _summarize(array) -> Summary:
    size = array.size
    if size == 0:
        return _EMPTY
    kind = array.dtype.kind
    if kind == "b":
        count = int(array.sum())
        mean = count / size
        low = 0.0 if count < size else 1.0
        high = 1.0 if count > 0 else 0.0
        return Summary(low, high, mean, float(np.sqrt(mean * (1 - mean))), 0, 0)
    if kind != "f":
        return Summary(float(array.min()), float(array.max()), float(array.mean()),
                       float(array.std()), 0, 0)
    xp = np if isinstance(array, np.ndarray) else _namespace(array)
    finite = xp.isfinite(array)
    nan = inf = 0
    values = array
    if not bool(finite.all()):
        n_finite = int(xp.count_nonzero(finite))
        nan_mask = xp.isnan(array)
        nan = int(xp.count_nonzero(nan_mask))
        inf = size - n_finite - nan
        low = high = None
        if nan < size:  # the infinities count for min and max
            not_nan = array[~nan_mask]
            low, high = float(not_nan.min()), float(not_nan.max())
        if n_finite == 0:
            return Summary(low, high, None, None, nan, inf)
        values = array[finite]
        if values.size <= _SMALL and xp is np:
            return _small(values, nan, inf)._replace(min=low, max=high)
        values64 = values.astype(np.float64, copy=False)
        return Summary(low, high, float(values64.mean()), float(values64.std()), nan, inf)
    if values.size <= _SMALL and xp is np:
        return _small(values, nan, inf)
    values64 = values.astype(np.float64, copy=False)
    return Summary(float(values.min()), float(values.max()), float(values64.mean()),
                   float(values64.std()), nan, inf)


def _small(values: np.ndarray, nan: int, inf: int) -> Summary:
    # Few elements: NumPy's per-call cost dominates, and np.std alone is ~5 us of Python.
    flat = values.reshape(-1).astype(np.float64)
    n = flat.size
    mean = float(np.add.reduce(flat)) / n
    centred = flat - mean
    std = (float(np.dot(centred, centred)) / n) ** 0.5
    return Summary(float(flat.min()), float(flat.max()), mean, std, nan, inf)


def _namespace(array):
    from execmode.backend import namespace_of

    return namespace_of(array)
