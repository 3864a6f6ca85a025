"""TransformerEncoderLayer, TransformerEncoder, TransformerDecoderLayer, TransformerDecoder
and Transformer, PyTorch's (post-norm by default, ``norm_first`` for pre-norm), over
MultiheadAttention.

Submodules and parameters are named as PyTorch names them (``self_attn``, ``linear1``,
``linear2``, ``norm1``, ``norm2``; ``layers.0...`` in the encoder), so a PyTorch
``state_dict`` loads one to one. PyTorch's inference fast path (nested tensors) is not
there: eval runs the same ops as training without dropout.
"""

from __future__ import annotations

import copy

from .. import functional as F
from ..errors import ArgumentError
from ..op_errors import op_error
from . import functional as NF
from . import init
from .containers import ModuleList
from .layers import LayerNorm, Linear
from .layers_attention import MultiheadAttention
from .layers_dropout import Dropout
from .module import Module

_ACTIVATIONS = {"relu": NF.relu, "gelu": NF.gelu}


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with dropout, a residual connection
    and LayerNorm. ``activation``: "relu", "gelu", a function or a module."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, *,
                 device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise op_error(ArgumentError, "TransformerEncoderLayer", (),
                               f"activation must be 'relu', 'gelu' or a callable, got "
                               f"{activation!r}")
            activation = _ACTIVATIONS[activation]
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None,
                is_causal: bool = False):
        """The layer's output, shaped like ``src`` ((L, N, E), or (N, L, E) with
        ``batch_first``). Masks follow MultiheadAttention's convention (True: not
        allowed)."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (deep copies, as PyTorch's), then
    ``norm`` if given."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm=None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """Every layer in turn (the same masks for each), then the final norm."""
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x


class TransformerDecoderLayer(Module):
    """Self-attention over the target, attention to the encoder's output (``memory``) and a
    feed-forward block, each with dropout, a residual connection and LayerNorm (PyTorch's
    names: ``self_attn``, ``multihead_attn``, ``linear1/2``, ``norm1/2/3``)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, *,
                 device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1, self.dropout2, self.dropout3 = (Dropout(dropout) for _ in range(3))
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise op_error(ArgumentError, "TransformerDecoderLayer", (),
                               f"activation must be 'relu', 'gelu' or a callable, got "
                               f"{activation!r}")
            activation = _ACTIVATIONS[activation]
        self.activation = activation

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False):
        """The layer's output, shaped like ``tgt``."""
        x = tgt
        if self.norm_first:
            x = x + self._sa(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                              memory_is_causal)
            return x + self._ff(self.norm3(x))
        x = self.norm1(x + self._sa(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha(x, memory, memory_mask, memory_key_padding_mask,
                                     memory_is_causal))
        return self.norm3(x + self._ff(x))

    def _sa(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _mha(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False,
                                is_causal=is_causal)[0]
        return self.dropout2(x)

    def _ff(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer``, then ``norm`` if given."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None,
                tgt_is_causal=None, memory_is_causal: bool = False):
        """Every layer in turn, then the final norm."""
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return self.norm(x) if self.norm is not None else x


class Transformer(Module):
    """PyTorch's ``nn.Transformer``: an encoder (``num_encoder_layers`` layers and a final
    LayerNorm) and a decoder (the same), parameters of rank >= 2 Xavier-uniform."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, *,
                 device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        layer = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                     layer_norm_eps=layer_norm_eps, batch_first=batch_first,
                     norm_first=norm_first, bias=bias, **kw)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, **layer), num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, **layer), num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal: bool = False):
        """The decoder's output for ``tgt`` attending to the encoded ``src``."""
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """A float (sz, sz) mask: 0 on and below the diagonal, -inf above."""
        ones = F.ones((sz, sz), dtype=dtype, device=device)
        return F.where(F.triu(ones, k=1) > 0, F.full_like(ones, float("-inf")),
                       F.zeros_like(ones))


__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer",
           "TransformerEncoder", "TransformerEncoderLayer"]
