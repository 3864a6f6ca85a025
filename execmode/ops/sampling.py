"""multinomial: class indices drawn from rows of probabilities, on execmode's generator.

Like the other random ops it is impure: graph mode never folds, merges or drops it, and
each call of a jitted function draws at run time from the same generator, in the order the
ops run, so eager and jit draw the same numbers for the same seed. The draws happen on the
host (as randn's do), so a seed gives the same samples on every device.
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError, IndexingError
from . import rng
from .registry import OPAQUE, OpDef, RuleError, register


def _multinomial_rule(p, *, num_samples, replacement):
    if len(p.shape) not in (1, 2):
        raise RuleError(f"probabilities must be 1-D or 2-D, got shape {tuple(p.shape)}")
    if p.dtype.kind != "f":
        raise RuleError(f"probabilities must be floating point, got {p.dtype}", DTypeError)
    if not replacement and num_samples > p.shape[-1]:
        raise RuleError(f"cannot draw {num_samples} samples without replacement from "
                        f"{p.shape[-1]} categories")
    return tuple(p.shape[:-1]) + (num_samples,)


def _multinomial_impl(xp, p, *, num_samples, replacement):
    host = np.asarray(p if xp is np else p.get(), dtype=np.float64)
    rows = host.reshape(-1, host.shape[-1])
    if not np.isfinite(rows).all() or (rows < 0).any():
        raise RuleError("probabilities must be finite and non-negative", IndexingError)
    totals = rows.sum(axis=1, keepdims=True)
    if (totals <= 0).any():
        raise RuleError("every row of probabilities needs a positive sum", IndexingError)
    gen = rng.generator()
    if replacement:
        # Inverse CDF: one uniform per sample, located in the row's cumulative sums.
        cdf = np.cumsum(rows / totals, axis=1)
        cdf[:, -1] = 1.0
        u = gen.random((rows.shape[0], num_samples))
        out = np.stack([np.searchsorted(c, ui, side="right") for c, ui in zip(cdf, u)])
        out = np.minimum(out, rows.shape[1] - 1)
    else:
        if ((rows > 0).sum(axis=1) < num_samples).any():
            raise RuleError(f"a row has fewer than {num_samples} categories of non-zero "
                            "probability to draw without replacement", IndexingError)
        # Gumbel top-k: the k largest of log(p) + Gumbel noise are a draw without
        # replacement in proportion to p (categories of probability 0 never come).
        with np.errstate(divide="ignore"):
            keys = np.log(rows) - np.log(-np.log(gen.random(rows.shape)))
        out = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    out = out.astype(np.int64).reshape(host.shape[:-1] + (num_samples,))
    return out if xp is np else xp.asarray(out)


register(OpDef(
    name="random_multinomial", kind=OPAQUE, impl=_multinomial_impl,
    shape_rule=_multinomial_rule, dtype_rule=lambda dtypes, attrs: np.dtype(np.int64),
    impure=True, may_raise=True,
    doc="Category indices drawn in proportion to each row of probabilities.",
))
