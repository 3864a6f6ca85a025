"""What a run leaves behind after each step, as plain values the comparator can diff.

Every observation is a dict ``path -> value``. Paths name what a person would look at:
``param body.0.weight``, ``grad body.0.weight``, ``grad-object body.0.weight`` (whether
``.grad`` is the same tensor object as after the previous step, a new one, or None),
``buffer bn.running_mean``, ``opt.state[3]['exp_avg']``, ``opt.param_groups[0]['lr']``,
``sched.last_epoch``, ``counters.steps``, ``Counters.total``, ``stats``, ``model.calls``,
``model.training``, ``out``. Tensors become :class:`TensorValue` (a copy of the array, its
dtype, shape and ``requires_grad``); Python values stay as they are (compared exactly).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import execmode as em


@dataclass(frozen=True)
class TensorValue:
    array: np.ndarray
    requires_grad: bool

    @property
    def dtype(self):
        return self.array.dtype

    @property
    def shape(self):
        return self.array.shape


@dataclass(frozen=True)
class ErrorValue:
    type: str
    message: str


def tensor_value(t) -> TensorValue:
    return TensorValue(np.array(t._data, copy=True), bool(t.requires_grad))


def value(x):
    """A returned value: tensors copied, containers walked, other objects as they are."""
    if isinstance(x, em.Tensor):
        return tensor_value(x)
    if isinstance(x, list | tuple):
        return type(x)(value(v) for v in x)
    return x


class Observer:
    """Observes one run step after step (it remembers each ``.grad`` object, to say
    whether the next step kept it)."""

    def __init__(self):
        self._grads: dict = {}

    def observe(self, ns: dict, k: int, error: BaseException | None = None,
                quiet: bool = False) -> dict:
        """The state after step k (``quiet``: a look between steps, which does not count
        as the last look for the ``grad-object`` comparison)."""
        obs: dict = {}
        if error is not None:
            obs["exception"] = ErrorValue(type(error).__name__, str(error).split("\n")[0])
            return obs
        obs["out"] = value(ns.get(f"out{k}"))
        model = ns["model"]
        for name, p in model.named_parameters():
            obs[f"param {name}"] = tensor_value(p)
            grad = p._grad
            obs[f"grad {name}"] = None if grad is None else tensor_value(grad)
            before = self._grads.get(name)
            obs[f"grad-object {name}"] = ("none" if grad is None else
                                          "same" if grad is before else "new")
            if not quiet:
                self._grads[name] = grad
        for name, b in model.named_buffers():
            obs[f"buffer {name}"] = tensor_value(b)
        obs["model.training"] = "".join("1" if m.training else "0" for m in model.modules())
        if "calls" in vars(model):
            obs["model.calls"] = model.calls
        opt = ns["opt"]
        for i, entries in sorted(opt.state.items()):
            for key, t in sorted(entries.items()):
                obs[f"opt.state[{i}][{key!r}]"] = tensor_value(t)
        for g, group in enumerate(opt.param_groups):
            for key, v in sorted(group.items()):
                if key != "params":
                    obs[f"opt.param_groups[{g}][{key!r}]"] = v
        sched = ns.get("sched")
        if sched is not None:
            obs["sched.last_epoch"] = sched.last_epoch
            obs["sched.last_lr"] = list(sched.get_last_lr())
        counters, cls = ns["counters"], ns["Counters"]
        for key, v in sorted(vars(counters).items()):
            obs[f"counters.{key}"] = v
        for key in ("steps", "total"):
            obs[f"Counters.{key}"] = cls.__dict__.get(key)
        obs["stats"] = repr(ns["stats"])
        return obs

    def tensors(self, ns: dict) -> dict:
        """The state tensors of a run by path (runner.py copies eager's into jit's)."""
        out = {}
        model, opt = ns["model"], ns["opt"]
        for name, p in model.named_parameters():
            out[f"param {name}"] = p
            if p._grad is not None:
                out[f"grad {name}"] = p._grad
        for name, b in model.named_buffers():
            out[f"buffer {name}"] = b
        for i, entries in opt.state.items():
            for key, t in entries.items():
                out[f"opt.state[{i}][{key!r}]"] = t
        return out


__all__ = ["ErrorValue", "Observer", "TensorValue", "tensor_value", "value"]
