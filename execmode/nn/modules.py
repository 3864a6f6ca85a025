"""Small layers for examples and benchmarks: Module, Linear, Sequential, activations, MLP.

Calling a module opens a named scope with its attribute name ("fc1"), so profiles and
graphs group ops by layer as PyTorch's profiler groups them by module.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from .. import functional as F
from .. import random as em_random
from ..scope import named_scope
from ..tensor import Tensor
from . import functional as NF


class Parameter(Tensor):
    """A leaf tensor that a Module owns and an optimizer updates (requires_grad=True)."""

    def __new__(cls, data: Tensor):
        p = object.__new__(cls)
        p._data = data._data
        p.requires_grad = True
        return p


class Module:
    """Base class: parameters are found by walking attributes (Parameters, Modules, lists)."""

    def __init__(self):
        self._scope_name = None
        self.training = True

    def __setattr__(self, name, value):
        if isinstance(value, Module) and not name.startswith("_"):
            value._scope_name = name
        super().__setattr__(name, value)

    def forward(self, *args, **kwargs):
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        with named_scope(self._scope_name or type(self).__name__.lower()):
            return self.forward(*args, **kwargs)

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        seen: set[int] = set()
        for name, value in vars(self).items():
            if name.startswith("_"):
                continue
            yield from _named_parameters_of(value, f"{prefix}{name}", seen)

    def parameters(self) -> list[Parameter]:
        return [p for _, p in self.named_parameters()]

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    def num_parameters(self) -> int:
        return sum(p.size for p in self.parameters())


def _named_parameters_of(value, name, seen):
    if isinstance(value, Parameter):
        if id(value) not in seen:
            seen.add(id(value))
            yield name, value
    elif isinstance(value, Module):
        for sub, p in value.named_parameters(prefix=f"{name}."):
            if id(p) not in seen:
                seen.add(id(p))
                yield sub, p
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _named_parameters_of(item, f"{name}.{i}", seen)


class Linear(Module):
    """y = x @ W.T + b, initialised like PyTorch (uniform in +-1/sqrt(in_features))."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 dtype=None, device=None):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(em_random.uniform((out_features, in_features), -bound, bound,
                                                  dtype=dtype, device=device))
        self.bias = (Parameter(em_random.uniform((out_features,), -bound, bound, dtype=dtype,
                                                 device=device)) if bias else None)

    def forward(self, x):
        return NF.linear(x, self.weight, self.bias)

    def __repr__(self) -> str:
        return f"Linear({self.in_features}, {self.out_features}, bias={self.bias is not None})"


class ReLU(Module):
    def forward(self, x):
        return NF.relu(x)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    def forward(self, x):
        return NF.sigmoid(x)


class GELU(Module):
    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return NF.gelu(x, self.approximate)


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps: float = 1e-5, *, dtype=None, device=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = Parameter(F.ones(shape, dtype=dtype, device=device))
        self.bias = Parameter(F.zeros(shape, dtype=dtype, device=device))

    def forward(self, x):
        return NF.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class Sequential(Module):
    def __init__(self, *layers: Module):
        super().__init__()
        self.layers = list(layers)
        for i, layer in enumerate(self.layers):
            layer._scope_name = f"{i}_{type(layer).__name__.lower()}"

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def named_parameters(self, prefix: str = ""):
        # PyTorch's naming: "0.weight", "2.bias".
        for i, layer in enumerate(self.layers):
            yield from layer.named_parameters(prefix=f"{prefix}{i}.")

    def __getitem__(self, i):
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)


class MLP(Sequential):
    """Linear layers with an activation between them: MLP([512, 256, 128, 2])."""

    def __init__(self, sizes, activation=ReLU, *, dtype=None, device=None):
        layers: list[Module] = []
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(Linear(n_in, n_out, dtype=dtype, device=device))
            if i < len(sizes) - 2:
                layers.append(activation())
        super().__init__(*layers)
