"""Simple layers: Linear, Embedding, LayerNorm, Flatten, Identity, activations, MLP."""

from __future__ import annotations

import math

import numpy as np

from .. import functional as F
from .. import random as em_random
from .._tensor import Tensor
from ..errors import ArgumentError, IndexingError, ShapeError
from ..op_errors import op_error
from . import functional as NF
from .containers import Sequential
from .module import Module, Parameter


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
        """``x @ weight.T + bias``."""
        return NF.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A lookup table: ``Embedding(vocab, dim)(ids)`` has shape ``ids.shape + (dim,)``.

    Initialised N(0, 1) as PyTorch; the row ``padding_idx`` starts at zero and receives no
    gradient. The gradient of the lookup is the indexing op's vjp (rows scatter-added).
    ``sparse=True`` is accepted and gives the same (dense) gradient; ``max_norm`` (which
    renormalizes rows in place during the forward) and ``scale_grad_by_freq`` are
    refused."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, *, dtype=None, device=None):
        super().__init__()
        if max_norm is not None or scale_grad_by_freq:
            raise op_error(ArgumentError, "Embedding", (),
                           "max_norm and scale_grad_by_freq are not supported")
        self.sparse = sparse
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise IndexingError(f"Embedding: padding_idx {padding_idx} is outside the "
                                    f"table of {num_embeddings} rows")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx
        if _weight is not None:
            weight = F.astype(_weight, dtype, copy=False) if dtype is not None else _weight
        else:
            weight = em_random.normal((num_embeddings, embedding_dim), dtype=dtype,
                                      device=device)
            if padding_idx is not None:
                weight[padding_idx] = 0.0
        self.weight = Parameter(weight.detach(), requires_grad=not _freeze)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, sparse: bool = False) -> Embedding:
        """An Embedding over the rows of ``embeddings`` (2-d), frozen unless ``freeze``
        is False."""
        if not isinstance(embeddings, Tensor) or embeddings.ndim != 2:
            raise op_error(ShapeError, "Embedding.from_pretrained", (embeddings,),
                           "embeddings must be a 2-d tensor (rows, dim)")
        rows, dim = embeddings.shape
        return cls(rows, dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def forward(self, ids):
        """The rows at ``ids`` (integers in [0, num_embeddings))."""
        return NF._lookup(ids, self.weight, self.padding_idx, "Embedding")

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


class LayerNorm(Module):
    """Normalize over the last dims (``normalized_shape``), then scale by ``weight``
    (ones) and shift by ``bias`` (zeros): PyTorch's ``elementwise_affine`` and ``bias``
    switch them off."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, *, dtype=None, device=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        self.weight = Parameter(F.ones(shape, dtype=dtype, device=device)) \
            if elementwise_affine else None
        self.bias = Parameter(F.zeros(shape, dtype=dtype, device=device)) \
            if elementwise_affine and bias else None

    def forward(self, x):
        """``layer_norm(x, normalized_shape, weight, bias, eps)``."""
        return NF.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


class Unflatten(Module):
    """Splits dimension ``dim`` into ``unflattened_size`` (the inverse of Flatten)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x):
        """``x`` with ``dim`` reshaped to ``unflattened_size``."""
        dim = self.dim + x.ndim if self.dim < 0 else self.dim
        if not 0 <= dim < x.ndim:
            raise op_error(IndexingError, "Unflatten", (x,),
                           f"dim={self.dim} does not fit a {x.ndim}-d input")
        return F.reshape(x, (*x.shape[:dim], *self.unflattened_size, *x.shape[dim + 1:]))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Flatten(Module):
    """Flattens dimensions ``start_dim..end_dim`` into one (default: all but the batch)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        """``x`` with dims ``start_dim..end_dim`` merged into one."""
        nd = x.ndim
        start = self.start_dim + nd if self.start_dim < 0 else self.start_dim
        end = self.end_dim + nd if self.end_dim < 0 else self.end_dim
        if not 0 <= start <= end < max(nd, 1):
            raise op_error(IndexingError, "Flatten", (x,),
                           f"start_dim={self.start_dim}, end_dim={self.end_dim} do not fit "
                           f"a {nd}-d input")
        if nd == 0:
            return F.reshape(x, (1,))
        shape = x.shape
        return F.reshape(x, (*shape[:start], int(np.prod(shape[start:end + 1])),
                             *shape[end + 1:]))

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Identity(Module):
    """Returns its input (a placeholder that keeps state_dict keys stable)."""

    def __init__(self, *args, **kwargs):  # PyTorch's Identity ignores its arguments too
        super().__init__()

    def forward(self, x):
        """``x`` itself."""
        return x


class ReLU(Module):
    """``max(x, 0)``; ``inplace=True`` writes the result into ``x``, as PyTorch's."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        """``relu(x)``."""
        out = NF.relu(x)
        return F.assign(x, out) if self.inplace else out

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """``tanh(x)``."""

    def forward(self, x):
        """``tanh(x)``."""
        return F.tanh(x)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``, finite for every input."""

    def forward(self, x):
        """``sigmoid(x)``."""
        return NF.sigmoid(x)


class GELU(Module):
    """Gaussian error linear unit (``approximate="tanh"``: the tanh formula)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        """``gelu(x, approximate)``."""
        return NF.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class MLP(Sequential):
    """Linear layers with an activation between them: MLP([512, 256, 128, 2])."""

    def __init__(self, sizes, activation=ReLU, *, dtype=None, device=None):
        layers: list[Module] = []
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(Linear(n_in, n_out, dtype=dtype, device=device))
            if i < len(sizes) - 2:
                layers.append(activation())
        super().__init__(*layers)


__all__ = ["GELU", "MLP", "Embedding", "Flatten", "Identity", "LayerNorm", "Linear", "ReLU",
           "Sigmoid", "Tanh", "Unflatten"]
