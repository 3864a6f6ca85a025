"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter), PyTorch's
``optim.AdamW``: ``p *= 1 - lr * weight_decay`` before the Adam update, instead of adding
``weight_decay * p`` to the gradient (which Adam's normalization would scale away)."""

from __future__ import annotations

from .adam import Adam


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01, as PyTorch's)."""

    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach=None, capturable: bool = False,
                 differentiable: bool = False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                         capturable=capturable, differentiable=differentiable, fused=fused)


__all__ = ["AdamW"]
