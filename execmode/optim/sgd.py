"""SGD with momentum, dampening, Nesterov momentum and L2 weight decay (PyTorch's
``optim.SGD``)."""

from __future__ import annotations

from .. import functional as F
from ..errors import ArgumentError
from . import plain
from .optimizer import Optimizer, engine_flags


class SGD(Optimizer):
    """``p -= lr * g`` with ``g += weight_decay * p`` and, with momentum,
    ``buf = momentum * buf + (1 - dampening) * g`` (``buf = g`` at the first step, as
    PyTorch) and ``g = buf`` (``g + momentum * buf`` with ``nesterov``). ``maximize``
    ascends. ``foreach``/``fused`` are accepted and change nothing (under ``em.jit`` the
    step is one fused graph anyway)."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False,
                 foreach=None, differentiable: bool = False, fused=None):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, **engine_flags(
                                          foreach=foreach, differentiable=differentiable,
                                          fused=fused)))

    def _check_group(self, group: dict) -> None:
        super()._check_group(group)
        if group["momentum"] < 0 or group["weight_decay"] < 0:
            raise ArgumentError(f"SGD: momentum and weight_decay must be >= 0, got "
                                f"{group['momentum']}, {group['weight_decay']}")
        if group["nesterov"] and (not group["momentum"] or group["dampening"]):
            raise ArgumentError("SGD: nesterov momentum needs momentum > 0 and zero "
                                "dampening")

    def _init_state(self, group: dict, indices: list[int]) -> None:
        if not group["momentum"]:
            return
        first = group["params"][0]
        # With dampening the first step sets buf = g (PyTorch's), later ones damp: a 0-d
        # flag per group, 0 until the first step, so a jitted step stays one graph.
        started = F.zeros((), dtype=first.dtype, device=first.device) \
            if group["dampening"] else None
        for i, p in zip(indices, group["params"]):
            self.state[i] = {"momentum_buffer": F.zeros_like(p)}
            if started is not None:
                self.state[i]["momentum_started"] = started

    def _step_group(self, group: dict, indices: list[int]) -> None:
        if plain.sgd_group(self, group, indices):  # nobody watches: the same ops in place
            return
        lr, momentum, decay = self.hyper("lr", group), self.hyper("momentum", group), \
            self.hyper("weight_decay", group)
        dampening = self.hyper("dampening", group)
        scale = None
        if momentum and group["dampening"]:
            started = self.state[indices[0]]["momentum_started"]
            scale = 1 - dampening * started
            F.assign(started, F.ones_like(started))
        for i, p in zip(indices, group["params"]):
            g = self._grad(p, group)
            if g is None:
                continue
            if decay:
                g = g + decay * p
            if momentum:
                buf = self.state[i]["momentum_buffer"]
                F.assign(buf, momentum * buf + (g if scale is None else scale * g))
                g = g + momentum * buf if group["nesterov"] else buf
            F.assign(p, p - lr * g)


__all__ = ["SGD"]
