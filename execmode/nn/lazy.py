"""Lazy layers: ``LazyLinear(out_features)`` learns ``in_features`` from its first input,
as PyTorch's (d2l builds its models this way).

Until then its weight and bias are ``UninitializedParameter``s (no shape, no values); the
first call makes them real, in place (the same objects), initialised as Linear's, and the
module becomes a ``Linear`` (PyTorch's ``cls_to_become``). An optimizer may be built
before that (d2l does): it makes the state of such a parameter group at its first step,
which must come after the model's first call and run eagerly. A first call under
``em.jit`` / ``torch.compile`` (as PyTorch's dynamo allows) makes the parameters eagerly
all the same, from the input's static shape: real tensors the trace reads by reference. ``load_state_dict`` into an uninitialized module takes
the checkpoint's shapes.
"""

from __future__ import annotations

import math

from .. import dispatch
from .. import functional as F
from .. import random as em_random
from ..errors import ShapeError
from ..op_errors import op_error
from .layers import Linear
from .module import Module, Parameter


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet (a lazy module's, until its first call)."""

    _em_uninitialized = True  # what optimizers and load_state_dict look for

    def __new__(cls, requires_grad: bool = True, *, dtype=None, device=None):
        p = Parameter.__new__(cls, F.zeros((0,), dtype=dtype, device=device), requires_grad)
        return p

    def materialize(self, shape, *, dtype=None, device=None) -> None:
        """Become a real (zero) parameter of ``shape``, in place."""
        like = F.zeros(tuple(shape), dtype=dtype or self.dtype, device=device or self.device)
        self._data = like._data
        self.__class__ = Parameter

    def __repr__(self) -> str:
        return "<UninitializedParameter>"


class LazyLinear(Linear):
    """``Linear`` whose ``in_features`` is the last size of its first input."""

    def __init__(self, out_features: int, bias: bool = True, *, dtype=None, device=None):
        Module.__init__(self)
        self.in_features, self.out_features = 0, out_features
        self.weight = UninitializedParameter(dtype=dtype, device=device)
        self.bias = UninitializedParameter(dtype=dtype, device=device) if bias else None

    def initialize_parameters(self, x) -> None:
        """Make the parameters real for input ``x`` (PyTorch's name), as Linear inits."""
        if x.ndim < 1:
            raise op_error(ShapeError, "LazyLinear", (x,), "expects an input with features")
        # Under em.jit (torch.compile of a lazy model, as PyTorch's dynamo allows) the
        # parameters are made eagerly all the same (the input's shape is static): real
        # tensors the trace then reads by reference, as any parameter.
        tracer = dispatch.set_tracer(None)
        try:
            in_features = x.shape[-1]
            bound = 1 / math.sqrt(in_features) if in_features else 0.0
            weight = em_random.uniform((self.out_features, in_features), -bound, bound,
                                       dtype=self.weight.dtype, device=self.weight.device)
            self.weight.materialize(weight.shape)
            self.weight._data = weight._data
            if isinstance(self.bias, UninitializedParameter):
                bias = em_random.uniform((self.out_features,), -bound, bound,
                                         dtype=self.bias.dtype, device=self.bias.device)
                self.bias.materialize(bias.shape)
                self.bias._data = bias._data
        finally:
            dispatch.set_tracer(tracer)
        self._become_linear()

    def _become_linear(self) -> None:
        self.in_features = self.weight.shape[1]
        self.__class__ = Linear

    def forward(self, x):
        """Initialize from ``x`` on the first call, then ``Linear.forward``."""
        if isinstance(self.weight, UninitializedParameter):
            self.initialize_parameters(x)
        else:  # loaded from a state_dict: only the class is left to change
            self._become_linear()
        return Linear.forward(self, x)

    def extra_repr(self) -> str:
        return f"0, {self.out_features}, bias={self.bias is not None} (uninitialized)"


__all__ = ["LazyLinear", "UninitializedParameter"]
