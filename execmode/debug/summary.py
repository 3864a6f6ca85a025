"""Tensor summaries: what the debugger shows instead of a tensor's values.

The numbers come from :mod:`execmode.stats` (shared with the profiler's recorder); this
module shapes them for the agent: lazy ``TensorStats`` for breakpoint conditions, the JSON
summary the protocol carries (with the array's memory), its one-line text form, and
bounded slices of values.
"""

from __future__ import annotations

import math

import numpy as np

from .. import stats
from ..backend import to_numpy
from ..dtypes import type_text


class TensorStats:
    """Lazy statistics of one array: ``stats.nan``, ``stats.max``, ``stats.abs_max``...

    The agent's view of :mod:`execmode.stats`: the names a breakpoint condition reads, the
    op it belongs to, and the summary sent to the TUI. A condition evaluated after every op
    pays only for what it names: ``nan`` counts NaNs, ``max`` computes the statistics once.
    """

    def __init__(self, array, op: str = "", scope: str = "", location=None):
        self.array = array
        self.op = op
        self.scope = scope
        self.location = location
        self._cache: dict = {}

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

    # Value statistics (execmode.stats has the rules). "No value" reads NaN here, not None,
    # so that a condition compares it (``max > 1e3`` is False) instead of raising.
    @property
    def nan_count(self) -> int:
        return self._get("nan_count", lambda: stats.nan_count(self.array))

    @property
    def inf_count(self) -> int:
        return self._get("inf_count", lambda: stats.inf_count(self.array))

    @property
    def nan(self) -> bool:
        return self.nan_count > 0

    @property
    def inf(self) -> bool:
        return self.inf_count > 0

    @property
    def finite(self) -> bool:
        return not self.nan and not self.inf

    def _values(self) -> stats.ValueStats:
        if "values" not in self._cache:
            values = self._cache["values"] = stats.value_stats(self.array)
            # The counts came with them: a summary does not count NaNs a second time.
            self._cache.setdefault("nan_count", values.nan)
            self._cache.setdefault("inf_count", values.inf)
        return self._cache["values"]

    @property
    def min(self) -> float:
        return _or_nan(self._values().min)

    @property
    def max(self) -> float:
        return _or_nan(self._values().max)

    @property
    def mean(self) -> float:
        return _or_nan(self._values().mean)

    @property
    def std(self) -> float:
        return _or_nan(self._values().std)

    @property
    def abs_max(self) -> float:
        # The largest magnitude is at one end of the range (NaN when there is none).
        low, high = self.min, self.max
        return math.nan if math.isnan(low) else max(abs(low), abs(high))

    @property
    def sum(self) -> float:
        return self._get("sum", lambda: stats.finite_sum(self.array))

    def histogram(self, bins: int = 20) -> dict:
        return stats.histogram(self.array, bins)

    def summary(self, histogram: bool = False) -> dict:
        out = {
            "shape": list(self.shape), "dtype": self.dtype, "device": self.device,
            "type": type_text(self.shape, self.array.dtype),
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


def _or_nan(v) -> float:
    return math.nan if v is None else v


def bounded_slice(array, index_text: str, max_elements: int = 1000) -> dict:
    """``array[index]`` for a user's index text ("[3, :10]"), capped in size."""
    from .conditions import parse_index

    index = parse_index(index_text)
    try:
        part = array[index]
        # One element of a NumPy array is a NumPy scalar, not an array (CuPy gives 0-d).
        part = part if isinstance(part, np.generic) else to_numpy(part)
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
