"""MultiheadAttention with PyTorch's parameters, masks and return values.

Parameters are named as PyTorch names them (``in_proj_weight`` (3E, E), ``in_proj_bias``,
``out_proj.weight``, ``out_proj.bias``), so a PyTorch ``state_dict`` maps one to one.
Masks follow *MultiheadAttention's* convention, the opposite of
``scaled_dot_product_attention``'s: a bool ``attn_mask`` or ``key_padding_mask`` is True
where attention is NOT allowed. Query, key and value share ``embed_dim`` (no kdim/vdim,
no bias_kv, no zero_attn).
"""

from __future__ import annotations

import math

from .. import functional as F
from .. import random as em_random
from ..errors import ArgumentError, ShapeError
from ..op_errors import op_error
from .attention import attention, causal_mask
from .dropout import check_probability
from .functional import linear
from .modules import Linear, Module, Parameter

_NAME = "MultiheadAttention"


class MultiheadAttention(Module):
    """Multi-head attention with PyTorch's parameters (``in_proj_weight``,
    ``in_proj_bias``, ``out_proj``), masks (True: not allowed) and layouts
    (``batch_first``); returns ``(output, weights)``."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, *, device=None, dtype=None):
        super().__init__()
        if not isinstance(embed_dim, int) or not isinstance(num_heads, int) or num_heads < 1 \
                or embed_dim % num_heads:
            raise op_error(ArgumentError, _NAME, (),
                           f"embed_dim {embed_dim!r} must be divisible by num_heads "
                           f"{num_heads!r}")
        if add_bias_kv or add_zero_attn or kdim not in (None, embed_dim) \
                or vdim not in (None, embed_dim):
            raise op_error(ArgumentError, _NAME, (),
                           "add_bias_kv, add_zero_attn and kdim/vdim other than embed_dim "
                           "are not supported")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout = check_probability(_NAME, "dropout", dropout, ())
        self.batch_first = bool(batch_first)
        # PyTorch's _reset_parameters: xavier_uniform_ in_proj, zero biases; out_proj keeps
        # Linear's weight init.
        bound = math.sqrt(6.0 / (embed_dim + 3 * embed_dim))
        self.in_proj_weight = Parameter(em_random.uniform((3 * embed_dim, embed_dim), -bound,
                                                          bound, dtype=dtype, device=device))
        self.in_proj_bias = (Parameter(F.zeros(3 * embed_dim, dtype=dtype, device=device))
                             if bias else None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype, device=device)
        if bias:
            self.out_proj.bias = Parameter(F.zeros(embed_dim, dtype=dtype, device=device))

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False):
        """(output, weights): output like query; weights (N, L, S) averaged over heads, or
        (N, H, L, S) with ``average_attn_weights=False``, or None without
        ``need_weights``. ``is_causal`` without an ``attn_mask`` builds the causal mask."""
        operands = tuple(t for t in (query, key, value) if t is not None)
        q, k, v = (F._require_tensor(_NAME, t, operands) for t in (query, key, value))
        unbatched = q.ndim == 2
        if unbatched:
            q, k, v = (F.expand_dims(t, 0 if self.batch_first else 1) for t in (q, k, v))
        if q.ndim != 3 or k.ndim != 3 or v.ndim != 3 or q.shape[-1] != self.embed_dim \
                or k.shape != v.shape:
            layout = "(N, L, E)" if self.batch_first else "(L, N, E)"
            raise op_error(ShapeError, _NAME, operands,
                           f"query, key and value must be {layout} or (L, E) with "
                           f"E = {self.embed_dim}, and key and value alike")
        if not self.batch_first:
            q, k, v = (F.swapaxes(t, 0, 1) for t in (q, k, v))
        n, length, _ = q.shape
        source = k.shape[1]
        mask = self._merged_mask(attn_mask, key_padding_mask, is_causal, n, length, source,
                                 unbatched, q, operands)
        heads = [self._heads(linear(t, w, b), n) for t, w, b in
                 zip((q, k, v), self._in_weights(), self._in_biases())]
        dropout_p = self.dropout if self.training else 0.0
        out, weights = attention(_NAME, heads[0], heads[1], heads[2], mask, dropout_p,
                                 False, None)
        out = F.reshape(F.swapaxes(out, 1, 2), (n, length, self.embed_dim))
        out = self.out_proj(out)
        if not self.batch_first:
            out = F.swapaxes(out, 0, 1)
        if unbatched:
            out = F.squeeze(out, axis=0 if self.batch_first else 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = F.mean(weights, axis=1)
        return out, (F.squeeze(weights, axis=0) if unbatched else weights)

    def _in_weights(self):
        e = self.embed_dim
        return [self.in_proj_weight[i * e:(i + 1) * e] for i in range(3)]

    def _in_biases(self):
        if self.in_proj_bias is None:
            return [None] * 3
        e = self.embed_dim
        return [self.in_proj_bias[i * e:(i + 1) * e] for i in range(3)]

    def _heads(self, x, n):
        """(N, L, E) -> (N, H, L, D)."""
        return F.swapaxes(F.reshape(x, (n, x.shape[1], self.num_heads, self.head_dim)), 1, 2)

    def _merged_mask(self, attn_mask, key_padding_mask, is_causal, n, length, source,
                     unbatched, like, operands):
        """One float mask (additive, -inf where not allowed) broadcastable to
        (N, H, L, S), or None."""
        if attn_mask is None and is_causal:
            attn_mask = F.logical_not(causal_mask(length, source, like.device))
        merged = None
        if attn_mask is not None:
            attn_mask = F._require_tensor(_NAME, attn_mask, operands)
            if attn_mask.shape == (length, source):
                pass
            elif attn_mask.shape == (n * self.num_heads, length, source):
                attn_mask = F.reshape(attn_mask, (n, self.num_heads, length, source))
            else:
                raise op_error(ShapeError, _NAME, operands + (attn_mask,),
                               f"attn_mask must be ({length}, {source}) or "
                               f"({n * self.num_heads}, {length}, {source})")
            merged = _additive(attn_mask, like)
        if key_padding_mask is not None:
            key_padding_mask = F._require_tensor(_NAME, key_padding_mask, operands)
            if unbatched:
                key_padding_mask = F.expand_dims(key_padding_mask, 0)
            if key_padding_mask.shape != (n, source):
                raise op_error(ShapeError, _NAME, operands + (key_padding_mask,),
                               f"key_padding_mask must be ({n}, {source})")
            padding = F.reshape(_additive(key_padding_mask, like), (n, 1, 1, source))
            merged = padding if merged is None else merged + padding
        return merged


def _additive(mask, like):
    """A float mask: bool True (not allowed) becomes -inf, False 0; floats as they are."""
    if mask.dtype.kind == "b":
        return F.where(mask, -math.inf, F.zeros((), dtype=like.dtype, device=like.device))
    return F.astype(mask, like.dtype, copy=False)
