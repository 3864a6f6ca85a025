"""Seeded random numbers: ``em.random.seed(0)`` makes every draw after it reproducible."""

from __future__ import annotations

import numpy as np

_generator = np.random.default_rng(0)


def seed(n: int) -> None:
    """Reset execmode's generator (NumPy's PCG64) to a known state."""
    global _generator
    _generator = np.random.default_rng(n)


def generator() -> np.random.Generator:
    return _generator


def normal(shape, mean=0.0, std=1.0, *, dtype=None, device=None, requires_grad=False):
    """Samples from N(mean, std^2)."""
    from .functional import _random

    return _random("random_normal", shape, dtype, device, requires_grad, mean=float(mean),
                   std=float(std))


def uniform(shape, low=0.0, high=1.0, *, dtype=None, device=None, requires_grad=False):
    """Samples from U[low, high)."""
    from .functional import _random

    return _random("random_uniform", shape, dtype, device, requires_grad, low=float(low),
                   high=float(high))


def randint(low, high, shape, *, dtype=None, device=None):
    """Integers in [low, high)."""
    from .dtypes import int64
    from .functional import _random

    return _random("random_randint", shape, dtype or int64, device, False, low=int(low),
                   high=int(high))


def multinomial(probs, num_samples, replacement=False):
    """Indices drawn from each row of (unnormalised) probabilities: ``num_samples`` per row,
    with or without replacement. Seeded like every draw here; under ``em.jit`` the draw
    happens at each call, in order, so eager and jit give the same indices."""
    return _draw_multinomial(probs, num_samples, replacement)


def _draw_multinomial(probs, num_samples, replacement):
    from . import functional as F
    from .errors import ArgumentError, op_error
    from .ops import OPS

    probs = F._require_tensor("multinomial", probs)
    num_samples = F._int_arg("multinomial", "num_samples", num_samples, (probs,))
    replacement = F._bool_arg("multinomial", "replacement", replacement, (probs,))
    if num_samples <= 0:
        raise op_error(ArgumentError, "multinomial", (probs,),
                       f"num_samples must be > 0, got {num_samples}")
    return F.apply(OPS["random_multinomial"], probs, num_samples=num_samples,
                   replacement=replacement)
