"""The Dropout layer: active while ``module.training`` is True.

Under ``em.jit`` the trace reads ``self.training`` as a guarded Python value, so switching
a model to eval (``model.training = False``, or ``model.eval()``) retraces instead of
replaying a graph that still drops.
"""

from __future__ import annotations

from .dropout import check_probability, dropout
from .modules import Module


class Dropout(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.p = check_probability("Dropout", "p", p, ())
        self.inplace = inplace

    def forward(self, x):
        return dropout(x, self.p, self.training, self.inplace)

    def __repr__(self) -> str:
        return f"Dropout(p={self.p}, inplace={self.inplace})"
