"""Python numbers that stay inputs of the graph (dynamo's "automatic dynamic" scalars).

A jitted training step reads ``opt.lr``; a schedule changes it between calls. Frozen into
the graph as a constant, every schedule would be silently ignored; guarded by value, every
step would retrace. Instead, while tracing, such a number is a :class:`SymbolicScalar`:

* arithmetic with Python numbers gives another SymbolicScalar (``1 - beta ** t``), which
  remembers how to recompute itself from the live attribute at each call;
* used as an operand of a tensor op it becomes a 0-d graph input, read at every call;
* anything that needs the concrete number (``if lr > 0``, ``int(step)``, ``math.cos``,
  formatting) gets it, and the trace records a guard: a later call where that answer
  differs retraces (the Python control flow it decided may differ).

Optimizer hyperparameters are always read this way (``Optimizer.hyper``); scalar attributes
of other objects and scalar globals become symbolic after their second distinct value.
"""

from __future__ import annotations

import math
import operator

import numpy as np


class SymbolicScalar:
    """A Python int or float read from a live attribute or global while tracing."""

    __slots__ = ("value", "read", "label", "tracer")

    def __init__(self, value, read, label: str, tracer):
        self.value = plain_number(value)  # the number this trace sees
        self.read = read        # () -> the number at a later call
        self.label = label      # "opt.lr", "1 - beta1 ** opt.t" (for retrace reasons)
        self.tracer = tracer

    # --- staying symbolic ----------------------------------------------------------------
    def _combine(self, other, fn, symbol: str, reflected: bool = False):
        if isinstance(other, SymbolicScalar):
            other_value, other_read, other_label = other.value, other.read, other.label
        elif isinstance(other, int | float | np.integer | np.floating) and \
                not isinstance(other, bool | np.bool_):
            other_value = plain_number(other)
            other_label = repr(other_value)

            def other_read(v=other):
                return v
        else:
            return NotImplemented  # a Tensor: its reflected operator makes a graph op
        read = self.read
        if reflected:
            return SymbolicScalar(fn(other_value, self.value),
                                  lambda: fn(other_read(), read()),
                                  f"({other_label} {symbol} {self.label})", self.tracer)
        return SymbolicScalar(fn(self.value, other_value), lambda: fn(read(), other_read()),
                              f"({self.label} {symbol} {other_label})", self.tracer)

    def __add__(self, o): return self._combine(o, operator.add, "+")            # noqa: E704
    def __radd__(self, o): return self._combine(o, operator.add, "+", True)     # noqa: E704
    def __sub__(self, o): return self._combine(o, operator.sub, "-")            # noqa: E704
    def __rsub__(self, o): return self._combine(o, operator.sub, "-", True)     # noqa: E704
    def __mul__(self, o): return self._combine(o, operator.mul, "*")            # noqa: E704
    def __rmul__(self, o): return self._combine(o, operator.mul, "*", True)     # noqa: E704
    def __truediv__(self, o): return self._combine(o, operator.truediv, "/")    # noqa: E704
    def __rtruediv__(self, o): return self._combine(o, operator.truediv, "/", True)  # noqa: E704,E501
    def __pow__(self, o): return self._combine(o, operator.pow, "**")           # noqa: E704
    def __rpow__(self, o): return self._combine(o, operator.pow, "**", True)    # noqa: E704

    def __neg__(self):
        read = self.read
        return SymbolicScalar(-self.value, lambda: -read(), f"-{self.label}", self.tracer)

    def __pos__(self):
        return self

    # --- concrete answers, each guarded --------------------------------------------------
    def concrete(self, why: str):
        """The number itself: this trace now depends on it being exactly this value."""
        self.tracer.scalar_guard(self.read, self.value, f"{self.label} (used as {why})")
        return self.value

    def _decide(self, other, fn, symbol):
        other_value = other.concrete(symbol) if isinstance(other, SymbolicScalar) else other
        answer = fn(self.value, other_value)
        read = self.read
        self.tracer.scalar_guard(lambda: fn(read(), other_value), answer,
                                 f"{self.label} {symbol} {other_value!r}")
        return answer

    def __lt__(self, o): return self._decide(o, operator.lt, "<")   # noqa: E704
    def __le__(self, o): return self._decide(o, operator.le, "<=")  # noqa: E704
    def __gt__(self, o): return self._decide(o, operator.gt, ">")   # noqa: E704
    def __ge__(self, o): return self._decide(o, operator.ge, ">=")  # noqa: E704
    def __eq__(self, o): return self._decide(o, operator.eq, "==")  # noqa: E704
    def __ne__(self, o): return self._decide(o, operator.ne, "!=")  # noqa: E704

    def __bool__(self):
        return self._decide(0, operator.ne, "!=")

    def __float__(self):
        return float(self.concrete("float()"))

    def __int__(self):
        return int(self.concrete("int()"))

    def __index__(self):
        return operator.index(self.concrete("an index"))

    def __round__(self, ndigits=None):
        return round(self.concrete("round()"), ndigits)

    def __hash__(self):
        return hash(self.concrete("a dict key"))

    def __format__(self, spec):
        return format(self.concrete("text"), spec)

    def __repr__(self):
        return repr(self.concrete("text"))

    __str__ = __repr__

    def __trunc__(self):
        return math.trunc(self.concrete("trunc()"))

    def dtype_with(self, tensor_dtypes) -> np.dtype:
        """The dtype eager mode casts this Python number to next to these tensors."""
        if not tensor_dtypes:
            return np.result_type(self.value)
        return np.result_type(*tensor_dtypes, self.value)


def is_number(value) -> bool:
    """An int or float (Python's or NumPy's) that may become symbolic; bools decide
    control flow and stay guarded by value."""
    if isinstance(value, bool | np.bool_) or not isinstance(
            value, int | float | np.integer | np.floating):
        return False
    return not math.isnan(value)


def plain_number(value):
    """NumPy scalars as the Python numbers eager mode turns them into (weakly typed)."""
    return value.item() if isinstance(value, np.generic) else value


__all__ = ["SymbolicScalar", "is_number"]
