"""Adam (PyTorch's ``optim.Adam``: L2 weight decay added to the gradient, or decoupled
with ``decoupled_weight_decay=True``; amsgrad; maximize)."""

from __future__ import annotations

from .. import functional as F
from ..errors import ArgumentError
from . import plain
from .optimizer import Optimizer, engine_flags


class Adam(Optimizer):
    """Moments ``m``, ``v`` per parameter and one step count per group (a 0-d tensor, so
    a jitted step counts without retracing); bias-corrected update
    ``p -= lr * m_hat / (sqrt(v_hat) + eps)``. ``foreach``/``fused``/``capturable`` are
    accepted and change nothing (see ``engine_flags``)."""

    decoupled = False  # AdamW: weight decay applied to the parameter, not the gradient

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused=None,
                 decoupled_weight_decay: bool = False):
        self.decoupled = self.decoupled or bool(decoupled_weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, **engine_flags(
                                          foreach=foreach, capturable=capturable,
                                          differentiable=differentiable, fused=fused)))

    def _check_group(self, group: dict) -> None:
        super()._check_group(group)
        group["betas"] = tuple(group["betas"])
        name = type(self).__name__
        if len(group["betas"]) != 2 or not all(0 <= b < 1 for b in group["betas"]):
            raise ArgumentError(f"{name}: betas must be two numbers in [0, 1), got "
                                f"{group['betas']}")
        if group["eps"] < 0 or group["weight_decay"] < 0:
            raise ArgumentError(f"{name}: eps and weight_decay must be >= 0, got "
                                f"{group['eps']}, {group['weight_decay']}")

    def _init_state(self, group: dict, indices: list[int]) -> None:
        first = group["params"][0]
        step = F.zeros((), dtype=first.dtype, device=first.device)  # shared by the group
        for i, p in zip(indices, group["params"]):
            self.state[i] = {"step": step, "exp_avg": F.zeros_like(p),
                             "exp_avg_sq": F.zeros_like(p)}
            if group["amsgrad"]:
                self.state[i]["max_exp_avg_sq"] = F.zeros_like(p)

    def _step_group(self, group: dict, indices: list[int]) -> None:
        if plain.adam_group(self, group, indices):  # nobody watches: the same ops in place
            return
        lr, (beta1, beta2) = self.hyper("lr", group), self.hyper("betas", group)
        eps, decay = self.hyper("eps", group), self.hyper("weight_decay", group)
        t = self.state[indices[0]]["step"]
        F.assign(t, t + 1)
        bias1 = 1 - F.power(beta1, t)
        bias2 = 1 - F.power(beta2, t)
        for i, p in zip(indices, group["params"]):
            g = self._grad(p, group)
            if g is None:
                continue
            state = self.state[i]
            if decay and self.decoupled:
                F.assign(p, p * (1 - lr * decay))
            elif decay:
                g = g + decay * p
            m, v = state["exp_avg"], state["exp_avg_sq"]
            F.assign(m, beta1 * m + (1 - beta1) * g)
            F.assign(v, beta2 * v + (1 - beta2) * g * g)
            if group["amsgrad"]:
                F.assign(state["max_exp_avg_sq"], F.maximum(state["max_exp_avg_sq"], v))
                v = state["max_exp_avg_sq"]
            m_hat = m / bias1
            v_hat = v / bias2
            F.assign(p, p - lr * m_hat / (F.sqrt(v_hat) + eps))


__all__ = ["Adam"]
