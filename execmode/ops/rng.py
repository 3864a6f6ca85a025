"""The engine's random state: one NumPy generator (PCG64) that every random op draws from.

Here, below the op definitions that draw from it, so that ops and the graph interpreter
read it without importing the user-facing ``em.random`` (which calls the function API).
"""

from __future__ import annotations

import numpy as np

_generator = np.random.default_rng(0)


def seed(n: int) -> None:
    """Reset execmode's generator (NumPy's PCG64) to a known state."""
    global _generator
    _generator = np.random.default_rng(n)


def generator() -> np.random.Generator:
    return _generator


class drawing_from:  # noqa: N801 - used as a context, like no_grad
    """Within the block every random op draws from ``gen`` (a NumPy Generator) instead of
    the engine's own: what a PyTorch ``generator=`` argument means (execmode.torch). Eager
    draws only; the caller refuses it while tracing, where ops draw later, at each call."""

    def __init__(self, gen: np.random.Generator):
        self._gen = gen

    def __enter__(self):
        global _generator
        self._previous, _generator = _generator, self._gen
        return self._gen

    def __exit__(self, *exc):
        global _generator
        _generator = self._previous
        return False
