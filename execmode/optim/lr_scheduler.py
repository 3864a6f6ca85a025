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
        """The closed form: the rate of group ``group_index`` at ``epoch`` (subclasses)."""
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

    def next_lrs(self, closed_form: bool = False) -> list[float]:
        """The rates for ``self.last_epoch``: the current rates times this epoch's factor.
        At epoch 0 the factor is relative to the base rate (PyTorch's initial step: a
        second scheduler built on the same optimizer composes with the first);
        ``closed_form`` (SequentialLR at a milestone) gives the closed form instead."""
        epoch = self.last_epoch
        if not self.chainable or (epoch == 0 and closed_form):
            return self.get_lr()
        if epoch == 0:
            out = []
            for k, (group, base) in enumerate(zip(self.optimizer.param_groups,
                                                  self.base_lrs)):
                start = self.lr_at(base, 0, k)
                if group["lr"] == base or base == 0:
                    out.append(start)        # a fresh optimizer: the closed form's bits
                else:
                    out.append(group["lr"] * (start / base))
            return out
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
        """One epoch on: every group's ``lr`` set for the new epoch (``step(epoch)`` is not
        accepted: count with the steps)."""
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
        """Restore the numbers of :meth:`state_dict` (build the scheduler first, as in
        PyTorch; the functions of LambdaLR are not saved)."""
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
        """The rate at ``epoch`` from the group\'s initial rate (the docstring\'s formula)."""
        return base_lr * self.gamma ** (epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """``base_lr * gamma ** (number of milestones <= epoch)``."""

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = sorted(int(m) for m in milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, group_index):
        """The rate at ``epoch`` from the group\'s initial rate (the docstring\'s formula)."""
        return base_lr * self.gamma ** bisect.bisect_right(self.milestones, epoch)


class ExponentialLR(LRScheduler):
    """``base_lr * gamma ** epoch``."""

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, group_index):
        """The rate at ``epoch`` from the group\'s initial rate (the docstring\'s formula)."""
        return base_lr * self.gamma ** epoch


class CosineAnnealingLR(LRScheduler):
    """``eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``."""

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803 - PyTorch's
                 last_epoch: int = -1):
        self.T_max = _positive_int("CosineAnnealingLR", "T_max", T_max)
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, group_index):
        """The rate at ``epoch`` from the group\'s initial rate (the docstring\'s formula)."""
        return self.eta_min + (base_lr - self.eta_min) * \
            (1 + math.cos(math.pi * epoch / self.T_max)) / 2

    def floor(self) -> float:
        """``eta_min``: the rate the cosine's factor is relative to."""
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
        """The rate at ``epoch`` from the group\'s initial rate (the docstring\'s formula)."""
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
        """The rate at ``epoch`` from the group\'s initial rate (the docstring\'s formula)."""
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
        """One epoch on, in the schedule whose milestone has been reached (its own epochs
        counted from 0 there)."""
        self.last_epoch += 1
        i = bisect.bisect_right(self.milestones, self.last_epoch)
        scheduler = self._schedulers[i]
        scheduler.last_epoch = self.last_epoch - (self.milestones[i - 1] if i else 0)
        scheduler._apply(scheduler.next_lrs(closed_form=True))  # at a milestone (epoch 0)
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict:
        """Its own numbers and each inner scheduler's state."""
        out = super().state_dict()
        out.pop("_schedulers", None)
        out["schedulers"] = [s.state_dict() for s in self._schedulers]
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore its own numbers and each inner scheduler's."""
        state_dict = dict(state_dict)
        inner = state_dict.pop("schedulers", [])
        if len(inner) != len(self._schedulers):
            raise ArgumentError(f"SequentialLR.load_state_dict: the checkpoint has "
                                f"{len(inner)} schedulers, this one {len(self._schedulers)}")
        for s, sd in zip(self._schedulers, inner):
            s.load_state_dict(sd)
        super().load_state_dict(state_dict)


class ConstantLR(LRScheduler):
    """``base_lr * factor`` for the first ``total_iters`` epochs, then ``base_lr``."""

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        if not 0 <= factor <= 1:
            raise ArgumentError(f"ConstantLR: factor must be in [0, 1], got {factor}")
        self.factor = factor
        self.total_iters = _positive_int("ConstantLR", "total_iters", total_iters)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, group_index):
        """The rate at ``epoch`` from the group\'s initial rate (the docstring\'s formula)."""
        return base_lr * (self.factor if epoch < self.total_iters else 1.0)


class PolynomialLR(LRScheduler):
    """``base_lr * (1 - min(epoch, total_iters) / total_iters) ** power``: down to 0 at
    ``total_iters``."""

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        self.total_iters = _positive_int("PolynomialLR", "total_iters", total_iters)
        self.power = power
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, group_index):
        """The rate at ``epoch`` from the group\'s initial rate (the docstring\'s formula)."""
        return base_lr * (1.0 - min(self.total_iters, epoch) / self.total_iters) ** self.power


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from ``base_lr`` to ``eta_min`` over ``T_0`` epochs, then again
    over ``T_0 * T_mult``, ... (SGDR). Sets the closed form at every step, as PyTorch's."""

    chainable = False

    def __init__(self, optimizer, T_0: int, T_mult: int = 1,  # noqa: N803 - PyTorch's
                 eta_min: float = 0.0, last_epoch: int = -1):
        self.T_0 = _positive_int("CosineAnnealingWarmRestarts", "T_0", T_0)
        self.T_mult = _positive_int("CosineAnnealingWarmRestarts", "T_mult", T_mult)
        self.T_i, self.eta_min = T_0, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, group_index):
        """The rate at ``epoch`` from the group\'s initial rate (the docstring\'s formula)."""
        return self.eta_min + (base_lr - self.eta_min) * \
            (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2

    def step(self) -> None:
        """One epoch on; a restart when the cycle ends (``step(epoch)`` is not accepted:
        count with the steps)."""
        self.last_epoch += 1
        self.T_cur += 1
        if self.T_cur >= self.T_i:
            self.T_cur -= self.T_i
            self.T_i *= self.T_mult
        self._apply(self.get_lr())


class ChainedScheduler(LRScheduler):
    """Steps several schedulers of one optimizer together (their factors compose)."""

    def __init__(self, schedulers: list, optimizer=None):
        schedulers = list(schedulers)
        if not schedulers:
            raise ArgumentError("ChainedScheduler: expects at least one scheduler")
        optimizer = schedulers[0].optimizer if optimizer is None else optimizer
        for s in schedulers:
            if not isinstance(s, LRScheduler) or s.optimizer is not optimizer:
                raise ArgumentError("ChainedScheduler: every scheduler must schedule the "
                                    "same optimizer")
        self.optimizer = optimizer
        self._schedulers = schedulers
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def step(self) -> None:
        """Step every scheduler, in order."""
        for s in self._schedulers:
            s.step()
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """Each scheduler's state, in order."""
        return {"_last_lr": list(self._last_lr),
                "schedulers": [s.state_dict() for s in self._schedulers]}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore each scheduler's state."""
        for s, sd in zip(self._schedulers, state_dict["schedulers"]):
            s.load_state_dict(sd)
        self._last_lr = list(state_dict.get("_last_lr", self._last_lr))


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin), stepped once per batch: the rate rises from
    ``max_lr / div_factor`` to ``max_lr`` over ``pct_start`` of ``total_steps``, then
    anneals to ``initial_lr / final_div_factor`` (``three_phase``: back to the initial
    rate first). With ``cycle_momentum`` the momentum (SGD's ``momentum``, Adam's first
    beta) moves the opposite way between ``max_momentum`` and ``base_momentum``. The
    closed form at every step, as PyTorch's; stepping past ``total_steps`` is an error."""

    chainable = False

    def __init__(self, optimizer, max_lr, total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise ArgumentError(f"OneCycleLR schedules an em.optim optimizer, got "
                                f"{type(optimizer).__name__}")
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ArgumentError("OneCycleLR: give total_steps, or epochs and "
                                    "steps_per_epoch")
            total_steps = _positive_int("OneCycleLR", "epochs", epochs) * \
                _positive_int("OneCycleLR", "steps_per_epoch", steps_per_epoch)
        self.total_steps = _positive_int("OneCycleLR", "total_steps", total_steps)
        if not 0 <= pct_start <= 1:
            raise ArgumentError(f"OneCycleLR: pct_start must be in [0, 1], got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ArgumentError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', "
                                f"got {anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy
        end = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                dict(end_step=end, start_lr="initial_lr", end_lr="max_lr",
                     start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=float(2 * pct_start * self.total_steps) - 2,
                     start_lr="max_lr", end_lr="initial_lr",
                     start_momentum="base_momentum", end_momentum="max_momentum"),
                dict(end_step=self.total_steps - 1, start_lr="initial_lr", end_lr="min_lr",
                     start_momentum="max_momentum", end_momentum="max_momentum")]
        else:
            self._schedule_phases = [
                dict(end_step=end, start_lr="initial_lr", end_lr="max_lr",
                     start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=self.total_steps - 1, start_lr="max_lr", end_lr="min_lr",
                     start_momentum="base_momentum", end_momentum="max_momentum")]
        groups = optimizer.param_groups
        max_lrs = _per_group("OneCycleLR", "max_lr", max_lr, len(groups))
        if last_epoch == -1:
            for group, top in zip(groups, max_lrs):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ArgumentError("OneCycleLR(cycle_momentum=True): the optimizer has no "
                                    "momentum or betas (pass cycle_momentum=False)")
            self.use_beta1 = "betas" in optimizer.defaults
            lows = _per_group("OneCycleLR", "base_momentum", base_momentum, len(groups))
            highs = _per_group("OneCycleLR", "max_momentum", max_momentum, len(groups))
            if last_epoch == -1:
                for group, low, high in zip(groups, lows, highs):
                    self._set_momentum(group, high)
                    group["max_momentum"], group["base_momentum"] = high, low
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        """The rates of this step (and, with ``cycle_momentum``, the momenta it sets)."""
        step = self.last_epoch
        if step > self.total_steps:
            raise ArgumentError(f"OneCycleLR: stepped {step} times, more than total_steps "
                                f"= {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]],
                            pct))
                    break
                start = end
            lrs.append(lr)
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Divide the rate by ``1 / factor`` when a metric has not improved for ``patience``
    epochs: ``scheduler.step(val_loss)``. ``mode="max"`` for metrics that should grow;
    ``threshold_mode`` ``"rel"`` or ``"abs"``; ``cooldown`` epochs of rest after each
    reduction; never below ``min_lr``; changes smaller than ``eps`` are skipped. The
    metric is read with ``float()``: a tensor metric under ``em.jit`` would be a graph
    break, so step it outside the jitted function, as the epoch loop does."""

    def __init__(self, optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr=0.0, eps: float = 1e-8):
        if not isinstance(optimizer, Optimizer):
            raise ArgumentError(f"ReduceLROnPlateau schedules an em.optim optimizer, got "
                                f"{type(optimizer).__name__}")
        if factor >= 1.0:
            raise ArgumentError(f"ReduceLROnPlateau: factor must be < 1, got {factor}")
        if mode not in ("min", "max"):
            raise ArgumentError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got "
                                f"{mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ArgumentError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', "
                                f"got {threshold_mode!r}")
        self.optimizer = optimizer
        self.factor, self.patience, self.cooldown, self.eps = factor, patience, cooldown, eps
        self.min_lrs = _per_group("ReduceLROnPlateau", "min_lr", min_lr,
                                  len(optimizer.param_groups))
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def step(self, metrics) -> None:
        """One epoch's metric (a number or a 0-d tensor)."""
        current = float(metrics)
        self.last_epoch += 1
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, low in zip(self.optimizer.param_groups, self.min_lrs):
                old = float(group["lr"])
                new = max(old * self.factor, low)
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    @property
    def in_cooldown(self) -> bool:
        """Whether the scheduler is resting after a reduction."""
        return self.cooldown_counter > 0

    def is_better(self, a: float, best: float) -> bool:
        """Whether metric ``a`` improves on ``best`` by the threshold."""
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold


def _per_group(owner: str, name: str, value, groups: int) -> list:
    """A number for every group, or a list with one per group."""
    if isinstance(value, list | tuple):
        if len(value) != groups:
            raise ArgumentError(f"{owner}: expected {groups} values of {name} (one per "
                                f"parameter group), got {len(value)}")
        return list(value)
    return [value] * groups


__all__ = ["ChainedScheduler", "ConstantLR", "CosineAnnealingLR",
           "CosineAnnealingWarmRestarts", "ExponentialLR", "LRScheduler", "LambdaLR",
           "LinearLR", "MultiStepLR", "OneCycleLR", "PolynomialLR", "ReduceLROnPlateau",
           "SequentialLR", "StepLR"]


def __getattr__(name: str):
    # A name this module lacks: what to use instead, or that PyTorch's is not supported,
    # never a "did you mean" to an unrelated name (aliases.py).
    import sys

    from execmode.aliases import missing_attribute

    raise missing_attribute(__name__, name, sys.modules[__name__])
