"""Value statistics of one array: min, max, mean, std, NaN/Inf counts, sum, histogram.

The one place they are computed. The debugger's ``TensorStats`` (its conditions and the
summaries it sends) and the profiler's recorder (the ``v_min`` .. ``v_inf`` columns of
``op_events``) both read them from here, so a number the TUI shows for a paused op and the
one a recorded session holds come from the same arithmetic.

The rules, the same for every reader:

* NaNs are counted, never a statistic. min and max see infinities (a tensor holding inf
  reads max=inf, not its largest finite value: ``max > 1e3`` must hold on inf); mean, std
  and sum are over the finite values, in float64, so one Inf does not make them inf.
* "No value" (an empty tensor, all NaN; all non-finite for mean/std) is ``None``.
* A broadcast view (expand, broadcast_to: stride 0) is read once per distinct element
  (:func:`one_copy`); counts are scaled back. A 1 MiB base expanded to 3 GiB is read once.
* Stats run on the array's own device (CuPy on a GPU); only scalars and the histogram come
  back to the host.
* Complex values are read by their magnitude ``|z|`` (:func:`readable`): a NaN part reads
  NaN, an infinite one inf (``max > 1e3`` holds on ``1e4j``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .backend import namespace_of, to_numpy

_SMALL = 4096  # elements: below this, the cheaper small-array path of _moments


class ValueStats(NamedTuple):
    """The value statistics of one array (None: no value, see the module's rules)."""

    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    nan: int
    inf: int


_EMPTY = ValueStats(None, None, None, None, 0, 0)


def one_copy(array):
    """(the array without its broadcast axes, how many times each element repeats), with
    complex values as their magnitudes (:func:`readable`)."""
    strides = getattr(array, "strides", None)
    if not strides or 0 not in strides or array.size == 0:
        return readable(array), 1
    index = tuple(slice(0, 1) if st == 0 and n > 1 else slice(None)
                  for st, n in zip(strides, array.shape))
    values = array[index]
    return readable(values), array.size // values.size


def readable(array):
    """The real values the statistics read: a complex array's magnitudes (NaN where a
    part is NaN, inf where one is infinite), any other array itself."""
    if array.dtype.kind != "c":
        return array
    return namespace_of(array).abs(array)


def value_stats(array) -> ValueStats:
    """All six statistics of a NumPy or CuPy array, in as few passes as the values allow:
    the profiler asks for them after every op when summaries are on."""
    values, repeat = one_copy(array)
    stats = _value_stats(values)
    if repeat > 1 and (stats.nan or stats.inf):
        stats = stats._replace(nan=stats.nan * repeat, inf=stats.inf * repeat)
    return stats


def nan_count(array) -> int:
    """The NaN count alone (a ``nan`` breakpoint asks for nothing else, after every op)."""
    if array.dtype.kind not in "fc":
        return 0
    values, repeat = one_copy(array)
    return repeat * int(namespace_of(values).isnan(values).sum())


def inf_count(array) -> int:
    """The Inf count alone (see :func:`nan_count`)."""
    if array.dtype.kind not in "fc":
        return 0
    values, repeat = one_copy(array)
    return repeat * int(namespace_of(values).isinf(values).sum())


def finite_sum(array) -> float:
    """The sum of the finite values in float64 (NaN when there are none)."""
    values, repeat = one_copy(array)
    values = _finite(values)
    if values.size == 0:
        return math.nan
    if values.dtype.kind == "b":
        values = values.astype(np.float64)
    return float(repeat * namespace_of(values).sum(values, dtype=np.float64))


def histogram(array, bins: int = 20) -> dict:
    """``{"counts": [...], "edges": [...]}`` of the finite values, on the host."""
    values, repeat = one_copy(array)
    values = to_numpy(_finite(values)).astype(np.float64).reshape(-1)
    if values.size == 0:
        return {"counts": [], "edges": []}
    counts, edges = np.histogram(values, bins=bins)
    return {"counts": (counts * repeat).tolist(), "edges": edges.tolist()}


# --- the arithmetic ---------------------------------------------------------------------------

def _value_stats(array) -> ValueStats:
    size = array.size
    if size == 0:
        return _EMPTY
    kind = array.dtype.kind
    if kind == "b":
        count = int(array.sum())
        mean = count / size
        low = 0.0 if count < size else 1.0
        high = 1.0 if count > 0 else 0.0
        return ValueStats(low, high, mean, float(np.sqrt(mean * (1 - mean))), 0, 0)
    if kind != "f":
        return ValueStats(float(array.min()), float(array.max()), float(array.mean()),
                          float(array.std()), 0, 0)
    xp = namespace_of(array)
    finite = xp.isfinite(array)
    if bool(finite.all()):  # the common case: one mask, no copies
        mean, std = _moments(array, xp)
        return ValueStats(float(array.min()), float(array.max()), mean, std, 0, 0)
    n_finite = int(xp.count_nonzero(finite))
    nan_mask = xp.isnan(array)
    nan = int(xp.count_nonzero(nan_mask))
    inf = size - n_finite - nan
    low = high = None
    if nan < size:  # the infinities count for min and max
        not_nan = array[~nan_mask]
        low, high = float(not_nan.min()), float(not_nan.max())
    if n_finite == 0:
        return ValueStats(low, high, None, None, nan, inf)
    mean, std = _moments(array[finite], xp)
    return ValueStats(low, high, mean, std, nan, inf)


def _moments(values, xp) -> tuple:
    """(mean, std) of finite float values, in float64."""
    if values.size <= _SMALL and xp is np:
        # Few elements: NumPy's per-call cost dominates, and np.std alone is ~5 us of Python.
        flat = values.reshape(-1).astype(np.float64)
        mean = float(np.add.reduce(flat)) / flat.size
        centred = flat - mean
        return mean, (float(np.dot(centred, centred)) / flat.size) ** 0.5
    values64 = values.astype(np.float64, copy=False)
    return float(values64.mean()), float(values64.std())


def _finite(values):
    """``values`` without NaN and Inf (the same array when it has none)."""
    if values.dtype.kind != "f":
        return values
    xp = namespace_of(values)
    finite = xp.isfinite(values)
    return values if bool(finite.all()) else values[finite]
