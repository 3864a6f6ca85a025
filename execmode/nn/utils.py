"""``em.nn.utils``: gradient clipping, and zeroing gradients for ``zero_grad``.

``clip_grad_norm_`` is tensor math end to end (no ``.item()``), so inside a jitted
training step it stays in the graph: no graph break, the norm is an output like any other.
"""

from __future__ import annotations

import math

from .. import functional as F
from .._tensor import Tensor
from ..errors import ArgumentError
from ..grad_mode import no_grad


def _grads(parameters, fn: str) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    params = list(parameters)
    for p in params:
        if not isinstance(p, Tensor):
            raise ArgumentError(f"{fn}: expects tensors (model.parameters()), got "
                                f"{type(p).__name__}")
    return [p.grad for p in params if p.grad is not None]


def _norm(g: Tensor, norm_type: float) -> Tensor:
    if norm_type == math.inf:
        return F.max(F.abs(g))
    if norm_type == 2.0:
        return F.sqrt(F.sum(g * g))
    if norm_type == 1.0:
        return F.sum(F.abs(g))
    return F.power(F.sum(F.power(F.abs(g), norm_type)), 1.0 / norm_type)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Tensor:
    """Scale the gradients in place so that their joint norm is at most ``max_norm``;
    returns the norm before clipping (a 0-d tensor), as PyTorch.

    ``error_if_nonfinite=True`` needs the norm's value in Python: under ``em.jit`` that is
    a graph break."""
    norm_type = float(norm_type)
    if not norm_type > 0:
        raise ArgumentError(f"clip_grad_norm_: norm_type must be positive, got {norm_type}")
    grads = _grads(parameters, "clip_grad_norm_")
    if not grads:
        return F.zeros(())
    with no_grad():
        norms = [_norm(g, norm_type) for g in grads]
        total = norms[0] if len(norms) == 1 else _norm(F.stack(norms), norm_type)
        if error_if_nonfinite and not bool(F.isfinite(total)):
            raise ArgumentError(f"clip_grad_norm_: the total norm of order {norm_type} of the "
                                f"gradients is non-finite ({float(total)}); pass "
                                f"error_if_nonfinite=False to clip anyway")
        # As PyTorch: scale by min(1, max_norm / (norm + 1e-6)), always (no branch on the
        # value), so the step is the same graph whatever the norm.
        coef = F.minimum(max_norm / (total + 1e-6), 1.0)
        for g in grads:
            F.assign(g, g * coef)
    return total


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every gradient into [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters, "clip_grad_value_"):
            F.assign(g, F.clip(g, -clip_value, clip_value))


def zero_grads(parameters, set_to_none: bool = True) -> None:
    """``zero_grad`` of optimizers and modules, PyTorch's: each ``.grad`` becomes None, or
    with ``set_to_none=False`` is zeroed in place (the same tensor, so a reference someone
    holds, or a jitted function's write-back, sees the zeros), cut from any history."""
    for p in parameters:
        if set_to_none:
            # Written without reading: under em.jit a read would be a guard on whether
            # the .grad was None (a retrace at the second call, when it no longer is).
            p.grad = None
            continue
        g = p.grad
        if g is None:
            continue
        if g._grad_fn is not None:  # detach_(), as PyTorch
            g._grad_fn = None
        g.requires_grad = False
        with no_grad():
            g.zero_()


__all__ = ["clip_grad_norm_", "clip_grad_value_", "zero_grads"]
