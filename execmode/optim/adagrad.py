"""Adagrad (PyTorch's ``optim.Adagrad``): per-element learning rates from the running sum
of squared gradients."""

from __future__ import annotations

from .. import functional as F
from ..errors import ArgumentError
from .optimizer import Optimizer, engine_flags


class Adagrad(Optimizer):
    """``sum += g * g``; ``p -= clr * g / (sqrt(sum) + eps)`` with
    ``clr = lr / (1 + (step - 1) * lr_decay)``; ``g += weight_decay * p`` first. The
    step count is one 0-d tensor per group (a jitted step counts without retracing)."""

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, fused=None):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize, **engine_flags(
                                          foreach=foreach, differentiable=differentiable,
                                          fused=fused)))

    def _check_group(self, group: dict) -> None:
        super()._check_group(group)
        for key in ("lr_decay", "weight_decay", "initial_accumulator_value", "eps"):
            if group[key] < 0:
                raise ArgumentError(f"Adagrad: {key} must be >= 0, got {group[key]}")

    def _init_state(self, group: dict, indices: list[int]) -> None:
        first = group["params"][0]
        step = F.zeros((), dtype=first.dtype, device=first.device)  # shared by the group
        start = group["initial_accumulator_value"]
        for i, p in zip(indices, group["params"]):
            self.state[i] = {"step": step,
                             "sum": F.full(p.shape, start, dtype=p.dtype, device=p.device)}

    def _step_group(self, group: dict, indices: list[int]) -> None:
        lr, lr_decay = self.hyper("lr", group), self.hyper("lr_decay", group)
        decay, eps = self.hyper("weight_decay", group), self.hyper("eps", group)
        t = self.state[indices[0]]["step"]
        F.assign(t, t + 1)
        clr = lr / (1 + (t - 1) * lr_decay) if lr_decay else lr
        for i, p in zip(indices, group["params"]):
            g = self._grad(p, group)
            if g is None:
                continue
            if decay:
                g = g + decay * p
            total = self.state[i]["sum"]
            F.assign(total, total + g * g)
            F.assign(p, p - clr * (g / (F.sqrt(total) + eps)))


__all__ = ["Adagrad"]
