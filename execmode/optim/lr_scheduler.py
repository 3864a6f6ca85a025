"""Learning-rate schedules (PyTorch's ``optim.lr_scheduler``).

A scheduler writes ``group["lr"]`` of every parameter group at construction (epoch 0) and
at each ``step()``. As PyTorch's, a step is *chainable*: the new rate is the group's
current rate moved by this epoch's factor of the schedule (closed form at e over closed
form at e - 1, relative to the floor eta_min), so two schedulers on one optimizer compose
and a hand edit of ``group["lr"]`` carries on. Epoch 0, LambdaLR, and a factor from zero
use the closed form. A resumed schedule continues from the restored ``lr`` with the same
arithmetic, so it lands on the same numbers. Under ``em.jit`` the optimizer reads ``lr``
as a graph input (``Optimizer.hyper``): stepping a schedule between jitted steps costs no
retrace.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable

from ..errors import ArgumentError
from .optimizer import Optimizer


class LRScheduler:
    """Base class: subclasses define ``lr_at(base_lr, epoch, group_index)``."""

    # Python state a jitted function may write (graph/python_writes.py watches it).
    _em_user_state = True

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise ArgumentError(f"{type(self).__name__} schedules an em.optim optimizer, got "
                                f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        for k, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise ArgumentError(f"{type(self).__name__}(last_epoch={last_epoch}): "
                                    f"param_groups[{k}] has no 'initial_lr' (resume from a "
                                    f"state_dict, or start at last_epoch=-1)")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def lr_at(self, base_lr: float, epoch: int, group_index: int) -> float:
        raise NotImplementedError

    def get_lr(self) -> list[float]:
        """The learning rates of the current epoch."""
        return [self.lr_at(base, self.last_epoch, k) for k, base in enumerate(self.base_lrs)]

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` set, one per parameter group."""
        return list(self._last_lr)

    chainable = True  # LambdaLR is not, as in PyTorch: it sets base_lr * lambda(epoch)

    def floor(self) -> float:
        """The rate the schedule's factor is relative to (CosineAnnealingLR's eta_min)."""
        return 0.0

    def next_lrs(self) -> list[float]:
        """The rates for ``self.last_epoch``: the current rates times this epoch's factor."""
        epoch = self.last_epoch
        if epoch == 0 or not self.chainable:
            return self.get_lr()
        low, out = self.floor(), []
        for k, (group, base) in enumerate(zip(self.optimizer.param_groups, self.base_lrs)):
            before, now = self.lr_at(base, epoch - 1, k), self.lr_at(base, epoch, k)
            if before == now:
                out.append(group["lr"])      # no change this epoch (StepLR between steps)
            elif before == low:
                out.append(now)              # nothing to scale from: the closed form
            else:
                out.append(low + (group["lr"] - low) * ((now - low) / (before - low)))
        return out

    def step(self) -> None:
        self.last_epoch += 1
        self._apply(self.next_lrs())

    def _apply(self, lrs: list[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = list(lrs)

    def state_dict(self) -> dict:
        """The schedule's numbers (not the optimizer, not functions)."""
        return {k: v for k, v in vars(self).items()
                if k != "optimizer" and not callable(v) and k not in self._not_saved}

    _not_saved: tuple = ()

    def load_state_dict(self, state_dict: dict) -> None:
        for key, value in state_dict.items():
            if key not in vars(self):
                raise ArgumentError(f"{type(self).__name__}.load_state_dict: unknown key "
                                    f"{key!r}")
            setattr(self, key, value)


def _positive_int(owner: str, name: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ArgumentError(f"{owner}: {name} must be a positive integer, got {value!r}")
    return value


class StepLR(LRScheduler):
    """``base_lr * gamma ** (epoch // step_size)``."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size = _positive_int("StepLR", "step_size", step_size)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, group_index):
        return base_lr * self.gamma ** (epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """``base_lr * gamma ** (number of milestones <= epoch)``."""

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = sorted(int(m) for m in milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, group_index):
        return base_lr * self.gamma ** bisect.bisect_right(self.milestones, epoch)


class ExponentialLR(LRScheduler):
    """``base_lr * gamma ** epoch``."""

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, group_index):
        return base_lr * self.gamma ** epoch


class CosineAnnealingLR(LRScheduler):
    """``eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``."""

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803 - PyTorch's
                 last_epoch: int = -1):
        self.T_max = _positive_int("CosineAnnealingLR", "T_max", T_max)
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, group_index):
        return self.eta_min + (base_lr - self.eta_min) * \
            (1 + math.cos(math.pi * epoch / self.T_max)) / 2

    def floor(self) -> float:
        return self.eta_min


class LinearLR(LRScheduler):
    """A linear ramp of the factor from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs (a warm-up), then ``base_lr * end_factor``."""

    def __init__(self, optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ArgumentError(f"LinearLR: start_factor must be in (0, 1] and end_factor in "
                                f"[0, 1], got {start_factor}, {end_factor}")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = _positive_int("LinearLR", "total_iters", total_iters)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, group_index):
        done = min(self.total_iters, epoch) / self.total_iters
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * done)


class LambdaLR(LRScheduler):
    """``base_lr * lr_lambda(epoch)``: one function, or one per parameter group. The
    functions are not part of ``state_dict()`` (as in PyTorch: rebuild them, then load)."""

    _not_saved = ("lr_lambdas",)
    chainable = False

    def __init__(self, optimizer, lr_lambda: Callable | list, last_epoch: int = -1):
        n = len(optimizer.param_groups) if isinstance(optimizer, Optimizer) else 1
        lambdas = list(lr_lambda) if isinstance(lr_lambda, list | tuple) else [lr_lambda] * n
        if len(lambdas) != n or not all(callable(f) for f in lambdas):
            raise ArgumentError(f"LambdaLR: lr_lambda must be a function or a list of {n} "
                                f"functions (one per parameter group)")
        self.lr_lambdas = lambdas
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, group_index):
        return base_lr * self.lr_lambdas[group_index](epoch)


class SequentialLR(LRScheduler):
    """Schedules one after another: ``schedulers[i]`` runs from ``milestones[i-1]`` on,
    counting its epochs from 0 there (a LinearLR warm-up, then CosineAnnealingLR)."""

    def __init__(self, optimizer, schedulers: list, milestones: list, last_epoch: int = -1):
        if len(schedulers) < 1 or len(milestones) != len(schedulers) - 1:
            raise ArgumentError(f"SequentialLR: expects one milestone fewer than schedulers, "
                                f"got {len(schedulers)} schedulers and {len(milestones)} "
                                f"milestones")
        for s in schedulers:
            if not isinstance(s, LRScheduler) or s.optimizer is not optimizer:
                raise ArgumentError("SequentialLR: every scheduler must schedule the "
                                    "optimizer given to SequentialLR")
        if list(milestones) != sorted(milestones):
            raise ArgumentError(f"SequentialLR: milestones must increase, got {milestones}")
        self._schedulers = list(schedulers)
        self.milestones = [int(m) for m in milestones]
        super().__init__(optimizer, last_epoch)

    def step(self) -> None:
        self.last_epoch += 1
        i = bisect.bisect_right(self.milestones, self.last_epoch)
        scheduler = self._schedulers[i]
        scheduler.last_epoch = self.last_epoch - (self.milestones[i - 1] if i else 0)
        scheduler._apply(scheduler.next_lrs())  # closed form at a milestone (epoch 0)
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict:
        out = super().state_dict()
        out.pop("_schedulers", None)
        out["schedulers"] = [s.state_dict() for s in self._schedulers]
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        inner = state_dict.pop("schedulers", [])
        if len(inner) != len(self._schedulers):
            raise ArgumentError(f"SequentialLR.load_state_dict: the checkpoint has "
                                f"{len(inner)} schedulers, this one {len(self._schedulers)}")
        for s, sd in zip(self._schedulers, inner):
            s.load_state_dict(sd)
        super().load_state_dict(state_dict)


__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR",
           "MultiStepLR", "SequentialLR", "StepLR"]
