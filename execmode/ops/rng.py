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
