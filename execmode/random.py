"""Seeded random numbers: ``em.random.seed(0)`` makes every draw after it reproducible.

The generator itself lives in ``ops/rng.py``, below the ops that draw from it."""

from __future__ import annotations

from . import functional as F
from .dtypes import int64
from .functional.creation import _random
from .ops.rng import generator, seed  # noqa: F401 - em.random.seed, em.random.generator


def normal(shape, mean=0.0, std=1.0, *, dtype=None, device=None, requires_grad=False):
    """Samples from N(mean, std^2)."""
    return _random("random_normal", shape, dtype, device, requires_grad, mean=float(mean),
                   std=float(std))


def uniform(shape, low=0.0, high=1.0, *, dtype=None, device=None, requires_grad=False):
    """Samples from U[low, high)."""
    return _random("random_uniform", shape, dtype, device, requires_grad, low=float(low),
                   high=float(high))


def randint(low, high, shape, *, dtype=None, device=None):
    """Integers in [low, high)."""
    return _random("random_randint", shape, dtype or int64, device, False, low=int(low),
                   high=int(high))


def multinomial(probs, num_samples, replacement=False):
    """Indices drawn from each row of (unnormalised) probabilities: ``num_samples`` per row,
    with or without replacement. Seeded like every draw here; under ``em.jit`` the draw
    happens at each call, in order, so eager and jit give the same indices."""
    return F.multinomial(probs, num_samples, replacement)
