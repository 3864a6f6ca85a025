"""Tensor summaries: what the debugger shows instead of a tensor's values.

Stats are computed lazily (a breakpoint ``nan`` asks only for the NaN count) and on the
array's own device; only scalars and the histogram come back to the host.
"""

from __future__ import annotations

import math

import numpy as np

from ..backend import to_numpy
from ..dtypes import short_name


class TensorStats:
    """Lazy statistics of one array: ``stats.nan``, ``stats.max``, ``stats.abs_max``..."""

    def __init__(self, array, op: str = "", scope: str = "", location=None):
        self.array = array
        self.op = op
        self.scope = scope
        self.location = location
        self._cache: dict = {}
        # A broadcast view (expand, broadcast_to: stride 0) repeats each distinct element
        # the same number of times: its min/max/mean/std are those of one copy, and its
        # counts that many times one copy's. Statistics read one copy (a 1 MiB base
        # expanded to 3 GiB is read once, not 768 times).
        self._values, self._repeat = one_copy(array)

    def _get(self, name, compute):
        if name not in self._cache:
            self._cache[name] = compute()
        return self._cache[name]

    # metadata
    @property
    def shape(self) -> tuple:
        return tuple(self.array.shape)

    @property
    def ndim(self) -> int:
        return self.array.ndim

    @property
    def size(self) -> int:
        return int(math.prod(self.array.shape))

    @property
    def dtype(self) -> str:
        return str(self.array.dtype)

    @property
    def device(self) -> str:
        return "cpu" if type(self.array) is np.ndarray else f"cuda:{self.array.device.id}"

    # Value statistics, NaN-aware: NaNs are counted, never a statistic. min, max and
    # abs_max see an Inf (``max > 1e3`` holds on inf, and a summary reads inf/-inf);
    # mean, std and sum are over the finite values (one Inf would make them inf or nan).
    @property
    def nan_count(self) -> int:
        if self.array.dtype.kind != "f":
            return 0
        return self._get("nan_count", lambda: self._repeat * int(
            _xp(self._values).isnan(self._values).sum()))

    @property
    def inf_count(self) -> int:
        if self.array.dtype.kind != "f":
            return 0
        return self._get("inf_count", lambda: self._repeat * int(
            _xp(self._values).isinf(self._values).sum()))

    @property
    def nan(self) -> bool:
        return self.nan_count > 0

    @property
    def inf(self) -> bool:
        return self.inf_count > 0

    @property
    def finite(self) -> bool:
        return not self.nan and not self.inf

    def _finite_values(self):
        a = self._values
        if a.dtype.kind == "f" and (self.nan or self.inf):
            return a[_xp(a).isfinite(a)]
        return a

    def _values_but_nan(self):
        a = self._values
        if a.dtype.kind == "f" and self.nan:
            return a[~_xp(a).isnan(a)]
        return a

    def _reduce(self, name, fn, with_inf: bool = False):
        def compute():
            values = self._values_but_nan() if with_inf else self._finite_values()
            if values.size == 0:
                return math.nan
            return float(fn(_xp(values), values.astype(np.float64) if values.dtype.kind == "b"
                            else values))
        return self._get(name, compute)

    @property
    def min(self) -> float:
        return self._reduce("min", lambda xp, v: xp.min(v), with_inf=True)

    @property
    def max(self) -> float:
        return self._reduce("max", lambda xp, v: xp.max(v), with_inf=True)

    @property
    def mean(self) -> float:
        return self._reduce("mean", lambda xp, v: xp.mean(v, dtype=np.float64))

    @property
    def std(self) -> float:
        return self._reduce("std", lambda xp, v: xp.std(v, dtype=np.float64))

    @property
    def abs_max(self) -> float:
        return self._reduce("abs_max", lambda xp, v: xp.max(xp.abs(v)), with_inf=True)

    @property
    def sum(self) -> float:
        return self._reduce("sum", lambda xp, v: self._repeat * xp.sum(v, dtype=np.float64))

    def histogram(self, bins: int = 20) -> dict:
        values = to_numpy(self._finite_values()).astype(np.float64).reshape(-1)
        if values.size == 0:
            return {"counts": [], "edges": []}
        counts, edges = np.histogram(values, bins=bins)
        return {"counts": (counts * self._repeat).tolist(), "edges": edges.tolist()}

    def summary(self, histogram: bool = False) -> dict:
        out = {
            "shape": list(self.shape), "dtype": self.dtype, "device": self.device,
            "type": f"{short_name(self.array.dtype)}[{','.join(map(str, self.shape))}]",
            "size": self.size, "nan_count": self.nan_count, "inf_count": self.inf_count,
        }
        out.update(memory(self.array))
        if self.size and self.array.dtype.kind in "fiub":
            out.update(min=_num(self.min), max=_num(self.max), mean=_num(self.mean),
                       std=_num(self.std), abs_max=_num(self.abs_max))
        if histogram and self.size:
            out["histogram"] = self.histogram()
        return out


def memory(array) -> dict:
    """What an array's bytes are: ``nbytes`` (its elements times their size) and, for a view,
    ``base_nbytes``, the buffer it shares. A view allocates nothing, and an expanded view's
    ``nbytes`` can be far larger than any memory in use, so the two are shown apart."""
    out = {"nbytes": int(array.nbytes)}
    root = getattr(array, "base", None)
    while getattr(root, "base", None) is not None:  # NumPy and CuPy: the owner of the buffer
        root = root.base
    if root is not None:
        out["base_nbytes"] = int(getattr(root, "nbytes", None) or memoryview(root).nbytes)
    return out


def one_copy(array):
    """(the array without its broadcast axes, how many times each element repeats)."""
    strides = getattr(array, "strides", None)
    if not strides or 0 not in strides or array.size == 0:
        return array, 1
    index = tuple(slice(0, 1) if st == 0 and n > 1 else slice(None)
                  for st, n in zip(strides, array.shape))
    values = array[index]
    return values, array.size // values.size


def summarize(array, histogram: bool = False) -> dict:
    return TensorStats(array).summary(histogram)


def format_summary(s: dict) -> str:
    parts = [s["type"]]
    if "min" in s:
        parts.append(f"min={_fmt(s['min'])} max={_fmt(s['max'])} mean={_fmt(s['mean'])} "
                     f"std={_fmt(s['std'])}")
    if s.get("nan_count"):
        parts.append(f"NaN={s['nan_count']}")
    if s.get("inf_count"):
        parts.append(f"Inf={s['inf_count']}")
    return "  ".join(parts)


def _fmt(v) -> str:
    if v is None:
        return "nan"
    if isinstance(v, str):  # "inf" / "-inf" (see _num)
        return v
    return f"{v:.4g}"


def _num(v):
    # JSON has no NaN/Inf: None stands for "no value" (an empty or all-NaN tensor), and an
    # infinite min/max is the text "inf" / "-inf", which every reader prints as it is.
    if v is None or math.isnan(v):
        return None
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def _xp(array):
    if type(array) is np.ndarray:
        return np
    import cupy  # noqa: PLC0415 - only reached with CuPy arrays

    return cupy


def bounded_slice(array, index_text: str, max_elements: int = 1000) -> dict:
    """``array[index]`` for a user's index text ("[3, :10]"), capped in size."""
    from .conditions import parse_index

    index = parse_index(index_text)
    try:
        part = to_numpy(array[index])
    except (IndexError, TypeError, ValueError) as exc:
        raise ValueError(f"index {index_text} does not fit shape {tuple(array.shape)}: {exc}") \
            from None
    part = np.asarray(part)
    flat = part.reshape(-1)
    truncated = flat.size > max_elements
    values = flat[:max_elements]
    data = [None if isinstance(v, float) and not math.isfinite(v) else v
            for v in values.tolist()]
    text = np.array2string(part if not truncated else values, threshold=max_elements,
                           precision=5, separator=", ")
    return {"shape": list(part.shape), "values": data, "truncated": truncated, "text": text}
