"""Optimizers: SGD (with momentum) and Adam.

Updates are in-place writes under ``no_grad`` (``p -= lr * g``), so under ``em.jit`` they
become assign nodes at the end of the training-step graph. All optimizer state (momentum,
Adam moments, the step count) lives in tensors created up front: a Python counter would be
frozen at trace time inside a jitted step.
"""

from __future__ import annotations

from . import functional as F
from .autograd import no_grad
from .errors import ArgumentError


class Optimizer:
    def __init__(self, params, lr: float):
        self.params = list(params)
        if not self.params:
            raise ArgumentError("the optimizer got an empty parameter list")
        if lr <= 0:
            raise ArgumentError(f"learning rate must be positive, got {lr}")
        self.lr = lr

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = F.zeros_like(p)

    def step(self) -> None:
        with no_grad():
            self._step()

    def _step(self) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    def __init__(self, params, lr: float = 0.01, momentum: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False):
        super().__init__(params, lr)
        self.momentum, self.weight_decay, self.nesterov = momentum, weight_decay, nesterov
        self.buffers = [F.zeros_like(p) for p in self.params] if momentum else None

    def _step(self) -> None:
        for i, p in enumerate(self.params):
            g = p.grad
            if g is None:
                continue
            if self.weight_decay:
                g = g + self.weight_decay * p
            if self.momentum:
                buf = self.buffers[i]
                F.assign(buf, self.momentum * buf + g)
                g = g + self.momentum * buf if self.nesterov else buf
            F.assign(p, p - self.lr * g)


class Adam(Optimizer):
    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0):
        super().__init__(params, lr)
        self.beta1, self.beta2 = betas
        self.eps, self.weight_decay = eps, weight_decay
        self.m = [F.zeros_like(p) for p in self.params]
        self.v = [F.zeros_like(p) for p in self.params]
        self.t = F.zeros((), dtype=self.params[0].dtype, device=self.params[0].device)

    def _step(self) -> None:
        F.assign(self.t, self.t + 1)
        bias1 = 1 - F.power(self.beta1, self.t)
        bias2 = 1 - F.power(self.beta2, self.t)
        for p, m, v in zip(self.params, self.m, self.v):
            g = p.grad
            if g is None:
                continue
            if self.weight_decay:
                g = g + self.weight_decay * p
            F.assign(m, self.beta1 * m + (1 - self.beta1) * g)
            F.assign(v, self.beta2 * v + (1 - self.beta2) * g * g)
            m_hat = m / bias1
            v_hat = v / bias2
            F.assign(p, p - self.lr * m_hat / (F.sqrt(v_hat) + self.eps))
