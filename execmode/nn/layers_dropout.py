"""The Dropout layer: active while ``module.training`` is True.

Under ``em.jit`` the trace reads ``self.training`` as a guarded Python value, so switching
a model to eval (``model.training = False``, or ``model.eval()``) retraces instead of
replaying a graph that still drops.
"""

from __future__ import annotations

from .dropout import check_probability, dropout, dropout1d, dropout2d, dropout3d
from .modules import Module


class Dropout(Module):
    """Zeroes elements with probability ``p`` while training (kept ones scaled by
    1 / (1 - p)); the identity in eval."""

    _dropout = staticmethod(dropout)

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.p = check_probability(type(self).__name__, "p", p, ())
        self.inplace = inplace

    def forward(self, x):
        """``dropout(x, p, self.training, inplace)``."""
        return self._dropout(x, self.p, self.training, self.inplace)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p}, inplace={self.inplace})"


class Dropout1d(Dropout):
    """Channel dropout over (N, C, L): whole channels zeroed while training."""

    _dropout = staticmethod(dropout1d)


class Dropout2d(Dropout):
    """Channel dropout over (N, C, H, W): whole feature maps zeroed while training."""

    _dropout = staticmethod(dropout2d)


class Dropout3d(Dropout):
    """Channel dropout over (N, C, D, H, W)."""

    _dropout = staticmethod(dropout3d)
