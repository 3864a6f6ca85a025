"""How far each float of a model's state may move in one jitted step, and why.

One step from the same state (runner.run_lockstep) differs from eager's only by rounding:
the graph's kernels round differently from NumPy (C's libm against NumPy's SIMD
functions: 1-2 ulps; float64 sums against NumPy's pairwise float32 sums; generated matmul
loops against BLAS; results laid out C-ordered where NumPy keeps a transpose, so that a
later sum adds in another order). :func:`allowance` turns that into a bound per element:

* **values the step computes** (the loss, gradients, optimizer moments, running
  statistics): ``RTOL`` of the element plus ``ATOL`` of the quantity's *scale*. The
  scale of a gradient is the largest gradient of the model in this step, not of its own
  array: rounding errors scale with the terms a backward pass adds, so a gradient that
  is mathematically zero (a bias before a batch norm) comes out as rounding noise of the
  other gradients' size, differently in each mode. Moments in gradient units (momentum
  buffers, Adam's ``exp_avg``, RMSprop's ``grad_avg``) take the gradient scale, squared
  ones (``exp_avg_sq``, ``square_avg``) its square; a running mean takes the root of
  its running variance (a batch norm after a batch norm averages values of spread 1 to
  a mean that is rounding noise).
* **parameters**: an update is lr x a function of the gradient. For SGD (momentum,
  Nesterov) that function is linear, so the parameter moves by at most
  lr x (1 + momentum) x the gradient's bound; Adadelta's is linear too, with a gain of at
  most sqrt(acc_delta + eps) / sqrt(eps). Adam, AdamW, RMSprop and Adagrad divide by the
  root of a running square: where a gradient element is itself rounding noise (within its bound
  of zero), its normalized step is noise over noise, anything up to the optimizer's
  largest step, and eager's and the kernels' noise differ: there the parameter (and
  RMSprop's momentum buffer) may move by lr x twice that largest step (adaptive_step),
  "float32 ulps times the optimizer's amplification of a zero true gradient".
* on top, ``SENSITIVITY_FACTOR`` times what the perturbed eager run moved (2 ulps on every
  float of the state the step starts from, and its transcendental and summing ops nudged
  as tests/fuzz/rounding.py does): whatever else this model amplifies (a layer norm of a
  nearly constant row, a batch norm of two nearly equal rows), measured rather than
  guessed.

A wrong value (a stale gradient, an update applied twice or not at all, a lost write)
moves a parameter by a whole learning-rate step where its gradient is not noise, orders
of magnitude beyond these bounds.
"""

from __future__ import annotations

import math
import re

import numpy as np

# ~170 float32 ulps (2^-23 ~ 1.2e-7) of the element and of the scale: a step chains 10-50
# ops forward and back, each within a few ulps of its inputs' scale.
RTOL, ATOL = 2e-5, 2e-5
# The perturbed run moves 2 ulps at its state and at each transcendental and sum, all one
# way; the jitted run rounds at every op, each its own way.
SENSITIVITY_FACTOR = 8.0

_STATE = re.compile(r"opt\.state\[(\d+)\]\['(\w+)'\]")
_GRAD_UNITS = ("momentum_buffer", "exp_avg", "grad_avg")
_SQUARED_UNITS = ("exp_avg_sq", "max_exp_avg_sq", "square_avg", "sum", "acc_delta")


def allowance(spec, before: dict | None, after: dict, sensitivity: dict):
    """allow(path, eager array, jit array) -> the largest |difference| per element, for
    the step that turned the eager state ``before`` (None: the first step) into
    ``after``."""
    model = _ModelStep(spec, before or {}, after)

    def allow(path, e, o):
        with np.errstate(all="ignore"):  # (Inf and NaN after inputs near the limits)
            e64 = np.abs(e.astype(np.float64))
            finite = e64[np.isfinite(e64)]
            own_scale = float(finite.max()) if finite.size else 0.0
            bound = RTOL * e64 + ATOL * own_scale
            bound = bound + model.extra(path, e.shape)
            return bound + SENSITIVITY_FACTOR * sensitivity.get(path, 0.0)
    return allow


class _ModelStep:
    """What one eager step did: its gradients (observed, or recovered from the optimizer's
    moments when the step set them to None), their scale, each parameter's group."""

    def __init__(self, spec, before: dict, after: dict):
        self.spec, self.before, self.after = spec, before, after
        self.names = [p[len("param "):] for p in after if p.startswith("param ")]
        self.grads = {i: self._gradient(i, name) for i, name in enumerate(self.names)}
        scales = [float(np.max(np.abs(g[np.isfinite(g)]))) for g in self.grads.values()
                  if g is not None and np.isfinite(g).any()]
        self.grad_scale = max(scales, default=0.0)

    def _hyper(self, i: int, key: str, default=0.0):
        group = 1 if self.spec.group_split and i >= self.spec.group_split else 0
        value = self.after.get(f"opt.param_groups[{group}][{key!r}]", default)
        return default if value is None else value

    def _gradient(self, i: int, name: str):
        """The gradient the update used, as |values| (for the noise mask)."""
        with np.errstate(all="ignore"):  # (Inf and NaN after inputs near the limits)
            return self._recover_gradient(i, name)

    def _recover_gradient(self, i: int, name: str):
        g = self.after.get(f"grad {name}")
        if g is not None and hasattr(g, "array"):
            return np.abs(g.array.astype(np.float64))
        opt = self.spec.optimizer

        def state(obs, key):
            v = obs.get(f"opt.state[{i}][{key!r}]")
            return None if v is None else v.array.astype(np.float64)

        if opt in ("Adam", "AdamW"):
            m_new, m_old = state(self.after, "exp_avg"), state(self.before, "exp_avg")
            if m_new is None:
                return None
            b1 = self._hyper(i, "betas", (0.9, 0.999))[0]
            return np.abs((m_new - b1 * (0 if m_old is None else m_old)) / (1 - b1))
        if opt == "RMSprop":
            sq_new, sq_old = state(self.after, "square_avg"), state(self.before, "square_avg")
            if sq_new is None:
                return None
            a = self._hyper(i, "alpha", 0.99)
            return np.sqrt(np.maximum((sq_new - a * (0 if sq_old is None else sq_old))
                                      / (1 - a), 0))
        if opt == "Adagrad":
            s_new, s_old = state(self.after, "sum"), state(self.before, "sum")
            if s_new is None:
                return None
            return np.sqrt(np.maximum(s_new - (0 if s_old is None else s_old), 0))
        if opt == "Adadelta":
            sq_new, sq_old = state(self.after, "square_avg"), state(self.before, "square_avg")
            if sq_new is None:
                return None
            rho = self._hyper(i, "rho", 0.9)
            return np.sqrt(np.maximum((sq_new - rho * (0 if sq_old is None else sq_old))
                                      / (1 - rho), 0))
        if opt == "SGD":
            b_new, b_old = state(self.after, "momentum_buffer"), \
                state(self.before, "momentum_buffer")
            if b_new is None:
                return None
            m = self._hyper(i, "momentum")
            return np.abs(b_new - m * (0 if b_old is None else b_old))
        return None

    def _grad_bound(self, i: int, shape):
        g = self.grads.get(i)
        base = ATOL * self.grad_scale
        return base if g is None or g.shape != shape else RTOL * g + base

    def extra(self, path: str, shape):
        """The part of the bound that depends on the model's other quantities."""
        if path.startswith("grad "):
            return ATOL * self.grad_scale
        if path.startswith("buffer ") and path.endswith(".running_mean"):
            # A batch mean's rounding scales with the spread of what it averages, not
            # with the mean (a batch norm after a batch norm averages to rounding noise).
            var = self.after.get(path[:-len("mean")] + "var")
            if var is not None and hasattr(var, "array"):
                finite = var.array[np.isfinite(var.array)]
                return ATOL * math.sqrt(float(finite.max())) if finite.size else 0.0
        if path.startswith("param "):
            i = self.names.index(path[len("param "):])
            return self._param_extra(i, shape)
        found = _STATE.fullmatch(path)
        if found is None:
            return 0.0
        i, key = int(found.group(1)), found.group(2)
        if key in _SQUARED_UNITS:
            return ATOL * self.grad_scale ** 2 + 2 * self.grad_scale * ATOL * self.grad_scale
        if key in _GRAD_UNITS:
            extra = 2 * ATOL * self.grad_scale
            if self.spec.optimizer == "RMSprop" and key == "momentum_buffer":
                extra = extra + self._noise(i, shape) * 2 * adaptive_step(self, i)
            return extra
        return 0.0

    def _noise(self, i: int, shape):
        """1 where the gradient element is within its bound of zero, else 0."""
        g = self.grads.get(i)
        if g is None or g.shape != shape:
            return np.ones(shape)  # not known: any element may be noise
        return (g <= self._grad_bound(i, shape)).astype(np.float64)

    def _param_extra(self, i: int, shape):
        lr = float(self._hyper(i, "lr"))
        momentum = float(self._hyper(i, "momentum") or 0.0)
        linear = lr * (1 + momentum) * self._grad_bound(i, shape)
        if self.spec.optimizer == "SGD":
            return linear
        if self.spec.optimizer == "Adadelta":
            # update = sqrt(acc_delta + eps) / sqrt(square_avg + eps) x g: linear in g
            # with a gain of at most sqrt(acc_delta + eps) / sqrt(eps).
            acc = self.after.get(f"opt.state[{i}]['acc_delta']")
            eps = float(self._hyper(i, "eps", 1e-6))
            finite = acc.array[np.isfinite(acc.array)] if acc is not None else ()
            top = float(np.max(finite)) if len(finite) else 0.0
            return linear * math.sqrt(max(top, 0.0) + eps) / math.sqrt(eps)
        return linear + self._noise(i, shape) * lr * 2 * adaptive_step(self, i)


def adaptive_step(step: _ModelStep, i: int) -> float:
    """The largest |normalized step| the optimizer can take for one element, whatever its
    gradient (the amplification of a gradient that is rounding noise)."""
    opt = step.spec.optimizer
    if opt in ("Adam", "AdamW"):
        b1, b2 = step._hyper(i, "betas", (0.9, 0.999))
        count = step.after.get(f"opt.state[{i}]['step']")
        t = float(count.array) if count is not None else 1.0
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t
        # |m| <= (1-b1) sum b1^k |g_k|, v >= (1-b2) sum b2^k g_k^2; Cauchy-Schwarz.
        ratio = b1 * b1 / b2
        return (1 - b1) / math.sqrt(1 - b2) / math.sqrt(max(1 - ratio, 1e-12)) \
            * math.sqrt(c2) / c1
    if opt == "Adagrad":  # g / sqrt(sum of g^2 so far): at most 1 in size
        return 1.0
    if opt == "RMSprop":
        a = float(step._hyper(i, "alpha", 0.99))
        momentum = float(step._hyper(i, "momentum") or 0.0)
        one = 1 / math.sqrt(a * (1 - a)) if step._hyper(i, "centered", False) \
            else 1 / math.sqrt(1 - a)
        return one / (1 - momentum)
    return 0.0


__all__ = ["ATOL", "RTOL", "SENSITIVITY_FACTOR", "adaptive_step", "allowance"]
