"""Optimizers: SGD (with momentum) and Adam.

Updates are in-place writes under ``no_grad`` (``p -= lr * g``), so under ``em.jit`` they
become functional updates written back into the parameters at the end of the training-step
graph. All optimizer state (momentum, Adam moments, the step count) lives in tensors
created up front. Hyperparameters (``opt.lr``, betas, eps, momentum, weight decay) are
plain attributes a schedule may change between steps; the step reads them through
:meth:`Optimizer.hyper`, so a jitted step takes them as graph inputs at every call instead
of freezing the value it was traced with.
"""

from __future__ import annotations

from . import dispatch
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

    def hyper(self, name: str):
        """The hyperparameter ``name`` as this step must use it: the attribute's value
        eagerly; under ``em.jit`` a number the graph reads at every call (symbolic.py),
        so changing ``opt.lr`` between jitted steps works as it does eagerly."""
        tracer = dispatch.current_tracer()
        if tracer is None:
            return getattr(self, name)
        return tracer.scalar_input(self, name, f"{type(self).__name__.lower()}.{name}")

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
        lr, momentum, decay = self.hyper("lr"), self.hyper("momentum"), \
            self.hyper("weight_decay")
        for i, p in enumerate(self.params):
            g = p.grad
            if g is None:
                continue
            if decay:
                g = g + decay * p
            if momentum:
                buf = self.buffers[i]
                F.assign(buf, momentum * buf + g)
                g = g + momentum * buf if self.nesterov else buf
            F.assign(p, p - lr * g)


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
        lr, beta1, beta2 = self.hyper("lr"), self.hyper("beta1"), self.hyper("beta2")
        eps, decay = self.hyper("eps"), self.hyper("weight_decay")
        F.assign(self.t, self.t + 1)
        bias1 = 1 - F.power(beta1, self.t)
        bias2 = 1 - F.power(beta2, self.t)
        for p, m, v in zip(self.params, self.m, self.v):
            g = p.grad
            if g is None:
                continue
            if decay:
                g = g + decay * p
            F.assign(m, beta1 * m + (1 - beta1) * g)
            F.assign(v, beta2 * v + (1 - beta2) * g * g)
            m_hat = m / bias1
            v_hat = v / bias2
            F.assign(p, p - lr * m_hat / (F.sqrt(v_hat) + eps))
