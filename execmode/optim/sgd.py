"""SGD with momentum, Nesterov momentum and L2 weight decay (PyTorch's ``optim.SGD``,
without dampening)."""

from __future__ import annotations

from .. import functional as F
from ..errors import ArgumentError
from .optimizer import Optimizer


class SGD(Optimizer):
    """``p -= lr * g`` with ``g += weight_decay * p`` and, with momentum,
    ``buf = momentum * buf + g`` (``g + momentum * buf`` with ``nesterov``)."""

    def __init__(self, params, lr: float = 0.01, momentum: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      nesterov=nesterov))

    def _check_group(self, group: dict) -> None:
        super()._check_group(group)
        if group["momentum"] < 0 or group["weight_decay"] < 0:
            raise ArgumentError(f"SGD: momentum and weight_decay must be >= 0, got "
                                f"{group['momentum']}, {group['weight_decay']}")
        if group["nesterov"] and not group["momentum"]:
            raise ArgumentError("SGD: nesterov momentum needs momentum > 0")

    def _init_state(self, group: dict, indices: list[int]) -> None:
        if group["momentum"]:
            for i, p in zip(indices, group["params"]):
                self.state[i] = {"momentum_buffer": F.zeros_like(p)}

    def _step_group(self, group: dict, indices: list[int]) -> None:
        lr, momentum, decay = self.hyper("lr", group), self.hyper("momentum", group), \
            self.hyper("weight_decay", group)
        for i, p in zip(indices, group["params"]):
            g = p.grad
            if g is None:
                continue
            if decay:
                g = g + decay * p
            if momentum:
                buf = self.state[i]["momentum_buffer"]
                F.assign(buf, momentum * buf + g)
                g = g + momentum * buf if group["nesterov"] else buf
            F.assign(p, p - lr * g)


__all__ = ["SGD"]
