"""Loss modules (``nn.CrossEntropyLoss()`` ...): PyTorch's classes over the functions of
losses.py, with PyTorch's arguments and defaults.

Class weights (``weight``, ``pos_weight``) are buffers, as in PyTorch, so they are in the
module's ``state_dict`` and move with ``to()``. The old ``size_average``/``reduce``
arguments are accepted and turned into ``reduction`` the way PyTorch turns them.
"""

from __future__ import annotations

from . import losses as L
from .module import Module


def _legacy_reduction(size_average, reduce, reduction: str) -> str:
    """PyTorch's ``_Reduction.legacy_get_string``: either old flag set decides."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


class _Loss(Module):
    """Base of the loss modules: holds ``reduction``."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        self.reduction = _legacy_reduction(size_average, reduce, reduction)

    def extra_repr(self) -> str:
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class _WeightedLoss(_Loss):
    """A loss with per-class weights, kept as the buffer ``weight`` (None: no weights)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """Softmax cross-entropy of logits against class indices or probabilities:
    ``nn.functional.cross_entropy`` with ``weight``, ``ignore_index``, ``reduction`` and
    ``label_smoothing`` fixed at construction."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100,
                 reduce=None, reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):  # noqa: A002 - PyTorch's names
        """The loss of logits ``input`` (N, C) (or (C,), (N, C, d1, ...))."""
        return L.cross_entropy(input, target, self.weight, self.ignore_index,
                               self.reduction, self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices under log-probabilities:
    ``nn.functional.nll_loss``."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100,
                 reduce=None, reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):  # noqa: A002
        """The loss of log-probabilities ``input`` (N, C) against class indices."""
        return L.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class MSELoss(_Loss):
    """Mean squared error: ``nn.functional.mse_loss``."""

    def forward(self, input, target):  # noqa: A002
        """The loss of ``input`` against ``target`` (same shapes)."""
        return L.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """Mean absolute error: ``nn.functional.l1_loss``."""

    def forward(self, input, target):  # noqa: A002
        """The loss of ``input`` against ``target`` (same shapes)."""
        return L.l1_loss(input, target, self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above: ``nn.functional.smooth_l1_loss``."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):  # noqa: A002
        """The loss of ``input`` against ``target`` (same shapes)."""
        return L.smooth_l1_loss(input, target, self.reduction, self.beta)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear above: ``nn.functional.huber_loss``."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(None, None, reduction)
        self.delta = delta

    def forward(self, input, target):  # noqa: A002
        """The loss of ``input`` against ``target`` (same shapes)."""
        return L.huber_loss(input, target, self.reduction, self.delta)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities: ``nn.functional.binary_cross_entropy``
    (``BCEWithLogitsLoss`` is the stable form on logits)."""

    def forward(self, input, target):  # noqa: A002
        """The loss of probabilities ``input`` against ``target`` in [0, 1]."""
        return L.binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid and binary cross-entropy in one stable formula:
    ``nn.functional.binary_cross_entropy_with_logits``; ``weight`` and ``pos_weight`` are
    buffers."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):  # noqa: A002
        """The loss of logits ``input`` against ``target`` in [0, 1]."""
        return L.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  self.reduction, self.pos_weight)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of log-probabilities ``input`` from ``target``:
    ``nn.functional.kl_div`` (``reduction="batchmean"`` is the true divergence)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):  # noqa: A002
        """The divergence of ``input`` (log-probabilities) from ``target``."""
        return L.kl_div(input, target, self.reduction, self.log_target)


__all__ = ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss",
           "L1Loss", "MSELoss", "NLLLoss", "SmoothL1Loss"]
