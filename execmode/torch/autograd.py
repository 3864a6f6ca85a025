"""``torch.autograd``: ``Variable`` (the tensor itself, as in PyTorch since 0.4),
``backward``, ``grad`` (gradients returned rather than accumulated into ``.grad``), and
the grad-mode switches. ``create_graph=True`` (a differentiable backward, for gradient
penalties and higher derivatives) is not supported."""

from __future__ import annotations

from .. import autograd as _autograd
from .._tensor import Tensor
from ..errors import ArgumentError, BackwardError
from ._functions import enable_grad, no_grad, set_grad_enabled  # noqa: F401


def Variable(data, requires_grad=False, volatile=False):  # noqa: N802 - PyTorch's name
    """The tensor itself (with ``requires_grad`` set when asked)."""
    return data.requires_grad_(True) if requires_grad else data


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             inputs=None):
    """``tensors.backward(grad_tensors)`` for each tensor given."""
    if not isinstance(tensors, list | tuple):
        tensors, grad_tensors = [tensors], [grad_tensors]
    grad_tensors = grad_tensors or [None] * len(tensors)
    for k, (t, g) in enumerate(zip(tensors, grad_tensors)):
        # Graphs the tensors share are walked once per tensor: kept until the last.
        keep = retain_graph or k < len(tensors) - 1
        t.backward(g, retain_graph=keep, create_graph=create_graph, inputs=inputs)


def _leaves(outputs) -> list:
    """The tensors whose .grad a backward from ``outputs`` accumulates into."""
    found, seen = [], set()
    for out in outputs:
        if out._grad_fn is None:
            candidates = [out]
        else:
            candidates = []
            for t in _autograd._topological_order(out):
                multi = isinstance(t, _autograd.MultiOutputOp)
                candidates += [*(t.inputs if multi else t._grad_fn.inputs), t]
        for x in candidates:
            if isinstance(x, Tensor) and x.requires_grad and id(x) not in seen and (
                    x._grad_fn is None or x._retains_grad):
                seen.add(id(x))
                found.append(x)
    return found


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned as a tuple; no
    tensor's ``.grad`` changes (PyTorch's ``torch.autograd.grad``). The graph is freed
    afterwards unless ``retain_graph=True``."""
    if create_graph:
        raise ArgumentError("torch.autograd.grad(create_graph=True) is not supported: "
                            "execmode's backward is not itself differentiable")
    if is_grads_batched:
        raise ArgumentError("torch.autograd.grad(is_grads_batched=True) is not supported")
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs] * len(outputs)
    for x in inputs:
        if not x.requires_grad:
            raise BackwardError("One of the differentiated Tensors does not require grad")
    for out in outputs:
        if not out.requires_grad:
            raise BackwardError("element 0 of tensors does not require grad and does not "
                                "have a grad_fn")
    # Every .grad the backward would touch is set aside, and put back afterwards.
    touched = {id(x): x for x in _leaves(outputs)}
    touched.update({id(x): x for x in inputs})
    kept = {key: (x.grad, x._retains_grad) for key, x in touched.items()}
    try:
        for x in touched.values():
            x.grad = None
        for x in inputs:
            if x._grad_fn is not None:
                x._retains_grad = True
        backward(outputs, grad_outputs, retain_graph=retain_graph)
        result = tuple(x.grad for x in inputs)
    finally:
        for key, x in touched.items():
            x.grad, x._retains_grad = kept[key]
    if any(g is None for g in result):
        if materialize_grads:
            from .. import functional as F

            result = tuple(F.zeros_like(x) if g is None else g
                           for x, g in zip(inputs, result))
        elif not allow_unused:
            raise BackwardError("One of the differentiated Tensors appears to not have been "
                                "used in the graph. Set allow_unused=True if this is the "
                                "desired behavior.")
    return result


class detect_anomaly:  # noqa: N801
    """Accepted and does nothing: execmode's errors already name the op, its operands and
    the line (``em.breakpoint``'s ``nan`` condition stops at the first NaN)."""

    def __init__(self, check_nan=True):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def set_detect_anomaly(mode: bool) -> None:
    """Accepted and does nothing (see ``detect_anomaly``)."""
