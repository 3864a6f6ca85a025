"""Adadelta (PyTorch's ``optim.Adadelta``, Zeiler 2012): step sizes from running averages
of squared gradients and of squared updates, scaled by ``lr`` (1.0 by default)."""

from __future__ import annotations

from .. import functional as F
from ..errors import ArgumentError
from .optimizer import Optimizer, engine_flags


class Adadelta(Optimizer):
    """``sq = rho * sq + (1 - rho) * g**2``;
    ``delta = sqrt(acc + eps) / sqrt(sq + eps) * g``;
    ``acc = rho * acc + (1 - rho) * delta**2``; ``p -= lr * delta``
    (``g += weight_decay * p`` first)."""

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, foreach=None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False):
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, **engine_flags(
                                          foreach=foreach, capturable=capturable,
                                          differentiable=differentiable)))

    def _check_group(self, group: dict) -> None:
        super()._check_group(group)
        if not 0 <= group["rho"] <= 1:
            raise ArgumentError(f"Adadelta: rho must be in [0, 1], got {group['rho']}")
        if group["eps"] < 0 or group["weight_decay"] < 0:
            raise ArgumentError(f"Adadelta: eps and weight_decay must be >= 0, got "
                                f"{group['eps']}, {group['weight_decay']}")

    def _init_state(self, group: dict, indices: list[int]) -> None:
        first = group["params"][0]
        step = F.zeros((), dtype=first.dtype, device=first.device)  # shared by the group
        for i, p in zip(indices, group["params"]):
            self.state[i] = {"step": step, "square_avg": F.zeros_like(p),
                             "acc_delta": F.zeros_like(p)}

    def _step_group(self, group: dict, indices: list[int]) -> None:
        lr, rho = self.hyper("lr", group), self.hyper("rho", group)
        eps, decay = self.hyper("eps", group), self.hyper("weight_decay", group)
        t = self.state[indices[0]]["step"]
        F.assign(t, t + 1)
        for i, p in zip(indices, group["params"]):
            g = self._grad(p, group)
            if g is None:
                continue
            if decay:
                g = g + decay * p
            state = self.state[i]
            sq, acc = state["square_avg"], state["acc_delta"]
            F.assign(sq, rho * sq + (1 - rho) * g * g)
            delta = F.sqrt(acc + eps) / F.sqrt(sq + eps) * g
            F.assign(acc, rho * acc + (1 - rho) * delta * delta)
            F.assign(p, p - lr * delta)


__all__ = ["Adadelta"]
