"""``torch.autograd``: ``Variable`` (the tensor itself, as in PyTorch since 0.4),
``backward``, and the grad-mode switches. ``grad()`` (gradients returned rather than
accumulated) is not supported: call ``backward()`` and read ``.grad``."""

from __future__ import annotations

from ._functions import enable_grad, no_grad, set_grad_enabled  # noqa: F401


def Variable(data, requires_grad=False, volatile=False):  # noqa: N802 - PyTorch's name
    """The tensor itself (with ``requires_grad`` set when asked)."""
    return data.requires_grad_(True) if requires_grad else data


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    """``tensors.backward(grad_tensors)`` for each tensor given."""
    if not isinstance(tensors, list | tuple):
        tensors, grad_tensors = [tensors], [grad_tensors]
    grad_tensors = grad_tensors or [None] * len(tensors)
    for t, g in zip(tensors, grad_tensors):
        t.backward(g)


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
