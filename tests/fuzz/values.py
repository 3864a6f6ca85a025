"""Literal tensors as source text: ``em.tensor([[0.25, -1.5], [nan, -0.0]], dtype=em.float32)``.

Values are drawn so that most arithmetic is exact: small multiples of 1/4 add, subtract
and multiply without rounding in float32, in any order, so sums, matmuls and fused
kernels must agree bit for bit with eager. Other values (``inexact_values``), NaN/Inf/-0.0
(``special_floats``), values near the float's largest (``near_limits``) and int64
extremes (``int_extremes``) come when their feature is on.
A program with values that are not exact gets the tolerance of compare.py
(program.is_inexact_text sees them in its text).
"""

from __future__ import annotations

import math
import random

import numpy as np

FLOAT_SPECIALS = ("nan", "inf", "-inf", "-0.0")
INT_EXTREMES = (2**63 - 1, -(2**63), 2**31, -(2**31) - 1, -1, 0)
DTYPE_NAMES = {"float32": "em.float32", "float64": "em.float64", "int64": "em.int64",
               "bool": "em.bool"}


def _float_text(v: float, dtype: str) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if dtype == "float32":
        return str(np.float32(v))  # the shortest text that rounds back to this float32
    return repr(float(v))


class ValueMaker:
    """Draws element values for one program (its features decide which kinds)."""

    def __init__(self, rng: random.Random, features: dict):
        self.rng = rng
        self.features = features
        # Per program: some get special or inexact values, the others stay exact and plain.
        self.specials = bool(features.get("special_floats")) and rng.random() < 0.5
        self.inexact = bool(features.get("inexact_values")) and rng.random() < 0.4
        self.extremes = bool(features.get("int_extremes")) and rng.random() < 0.5
        # Drawn from the stream's state without consuming it: the programs of a seed stay
        # what they were before this feature. The state's ints only: its last item is
        # None, whose hash is an address in Python 3.11 (a program would differ from one
        # process to the next, and --program would not rebuild a campaign's).
        self.near_limits = bool(features.get("near_limits")) and \
            random.Random(hash(rng.getstate()[1])).random() < 0.25

    def element(self, dtype: str) -> tuple[str, str | None]:
        """One element as text, and the feature it exercises (None for a plain value)."""
        r = self.rng.random()
        if dtype == "bool":
            return ("True" if self.rng.random() < 0.5 else "False"), None
        if dtype == "int64":
            if self.extremes and r < 0.15:
                return str(self.rng.choice(INT_EXTREMES)), "int_extremes"
            return str(self.rng.randint(-6, 6)), None
        if self.specials and r < 0.1:
            return self.rng.choice(FLOAT_SPECIALS), "special_floats"
        if self.near_limits and r < 0.3:
            # Near the float's largest: sums and means overflow in float32 partial sums
            # where eager's do (issue 38), products and squares overflow.
            big = 3.4e38 if dtype == "float32" else 1.79e308
            v = self.rng.choice((-1.0, 1.0)) * big * self.rng.choice((0.3, 0.5, 0.9, 1.0))
            return _float_text(v, dtype), "near_limits"
        if self.inexact and r < 0.3:
            v = self.rng.uniform(-3.0, 3.0)
            return _float_text(float(np.float32(round(v, 3))), dtype), "inexact_values"
        return _float_text(self.rng.randint(-12, 12) / 4.0, dtype), None

    def literal(self, shape: tuple, dtype: str, requires_grad: bool = False) -> tuple[str, set]:
        """``em.tensor(...)`` text for a tensor of ``shape``, and the value features used."""
        extra = ", requires_grad=True" if requires_grad else ""
        if 0 in shape:
            dims = ", ".join(str(d) for d in shape)
            return f"em.zeros({dims}, dtype={DTYPE_NAMES[dtype]}{extra})", set()
        tags = set()

        def nest(dims):
            if not dims:
                text, tag = self.element(dtype)
                if tag:
                    tags.add(tag)
                return text
            return "[" + ", ".join(nest(dims[1:]) for _ in range(dims[0])) + "]"

        body = nest(list(shape))
        return f"em.tensor({body}, dtype={DTYPE_NAMES[dtype]}{extra})", tags

    def scalar(self, dtype: str = "float32") -> str:
        """A Python number for ``x * c`` and writes (specials when they are on). 0 and 1
        only with ``identity_ops``: ``x + 0``, ``x * 1``, ``x / 1.0`` are identities that
        the simplifier rewrites (issue 13, class 2)."""
        ident = bool(self.features.get("identity_ops")) and self.rng.random() < 0.15
        if dtype.startswith(("int", "uint")):
            return str(self.rng.choice((0, 1) if ident else (2, 3, -1)))
        if ident:
            return self.rng.choice(("0.0", "1.0", "0"))
        if self.specials and self.rng.random() < 0.15:
            return self.rng.choice(("nan", "inf", "-0.0"))
        return repr(self.rng.choice((0.5, 2.0, -1.5, 0.25, 3.0)))
