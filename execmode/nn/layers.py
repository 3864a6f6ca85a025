"""Simple layers: Linear, Embedding, LayerNorm, Flatten, Identity, activations, MLP."""

from __future__ import annotations

import math

import numpy as np

from .. import functional as F
from .. import random as em_random
from .._tensor import Tensor
from ..errors import DTypeError, IndexingError, op_error
from ..ops import OPS
from . import functional as NF
from .containers import Sequential
from .module import Module, Parameter

# check_labels' ignore_index that no index equals: an Embedding ignores none.
_NO_IGNORE = -(2**62)


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

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A lookup table: ``Embedding(vocab, dim)(ids)`` has shape ``ids.shape + (dim,)``.

    Initialised N(0, 1) as PyTorch; the row ``padding_idx`` starts at zero and receives no
    gradient. The gradient of the lookup is the indexing op's vjp (rows scatter-added)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 *, dtype=None, device=None):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise IndexingError(f"Embedding: padding_idx {padding_idx} is outside the "
                                    f"table of {num_embeddings} rows")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx
        weight = em_random.normal((num_embeddings, embedding_dim), dtype=dtype, device=device)
        if padding_idx is not None:
            weight[padding_idx] = 0.0
        self.weight = Parameter(weight)

    def forward(self, ids):
        if not isinstance(ids, Tensor) or ids.dtype.kind not in "iu":
            raise op_error(DTypeError, "Embedding", (ids,),
                           "expects integer indices (em.int64), got "
                           f"{getattr(ids, 'dtype', type(ids).__name__)}")
        # A checking op, eagerly and under jit alike (a graph input's values are known only
        # when it runs): indexing alone would read row -1 as the last row, as NumPy does.
        F.apply(OPS["check_labels"], ids, num_classes=self.num_embeddings,
                ignore_index=_NO_IGNORE, caller="Embedding", noun="row")
        rows = self.weight[ids]
        if self.padding_idx is None:
            return rows
        # Padding positions read the row's value but pass no gradient to it.
        keep = F.expand_dims(ids != self.padding_idx, axis=-1)
        return F.where(keep, rows, rows.detach())

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps: float = 1e-5, *, dtype=None, device=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = Parameter(F.ones(shape, dtype=dtype, device=device))
        self.bias = Parameter(F.zeros(shape, dtype=dtype, device=device))

    def forward(self, x):
        return NF.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


class Flatten(Module):
    """Flattens dimensions ``start_dim..end_dim`` into one (default: all but the batch)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
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
        return x


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
           "Sigmoid", "Tanh"]
