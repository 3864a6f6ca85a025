"""RMSprop (PyTorch's ``optim.RMSprop``: smoothing ``alpha``, optional momentum and
centering, L2 weight decay)."""

from __future__ import annotations

from .. import functional as F
from ..errors import ArgumentError
from . import plain
from .optimizer import Optimizer, engine_flags


class RMSprop(Optimizer):
    """``sq = alpha * sq + (1 - alpha) * g**2``; ``p -= lr * g / (sqrt(sq) + eps)``
    (``sq - mean(g)**2`` when ``centered``; through a momentum buffer when
    ``momentum > 0``); ``maximize`` ascends."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered,
                                      maximize=maximize, **engine_flags(
                                          capturable=capturable, foreach=foreach,
                                          differentiable=differentiable)))

    def _check_group(self, group: dict) -> None:
        super()._check_group(group)
        for key in ("alpha", "eps", "weight_decay", "momentum"):
            if group[key] < 0:
                raise ArgumentError(f"RMSprop: {key} must be >= 0, got {group[key]}")

    def _init_state(self, group: dict, indices: list[int]) -> None:
        first = group["params"][0]
        step = F.zeros((), dtype=first.dtype, device=first.device)  # shared by the group
        for i, p in zip(indices, group["params"]):
            state = {"step": step, "square_avg": F.zeros_like(p)}
            if group["momentum"]:
                state["momentum_buffer"] = F.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = F.zeros_like(p)
            self.state[i] = state

    def _step_group(self, group: dict, indices: list[int]) -> None:
        if plain.rmsprop_group(self, group, indices):  # nobody watches: the ops in place
            return
        lr, alpha, eps = self.hyper("lr", group), self.hyper("alpha", group), \
            self.hyper("eps", group)
        decay, momentum = self.hyper("weight_decay", group), self.hyper("momentum", group)
        t = self.state[indices[0]]["step"]
        F.assign(t, t + 1)  # counted as PyTorch counts it (state_dict), not used
        for i, p in zip(indices, group["params"]):
            g = self._grad(p, group)
            if g is None:
                continue
            state = self.state[i]
            if decay:
                g = g + decay * p
            sq = state["square_avg"]
            F.assign(sq, alpha * sq + (1 - alpha) * g * g)
            if group["centered"]:
                ga = state["grad_avg"]
                F.assign(ga, alpha * ga + (1 - alpha) * g)
                avg = F.sqrt(sq - ga * ga) + eps
            else:
                avg = F.sqrt(sq) + eps
            if momentum:
                buf = state["momentum_buffer"]
                F.assign(buf, momentum * buf + g / avg)
                F.assign(p, p - lr * buf)
            else:
                F.assign(p, p - lr * g / avg)


__all__ = ["RMSprop"]
