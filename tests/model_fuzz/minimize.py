"""Shrink a failing model while one of its mismatch classes stays (delta debugging over
the spec, not the text: every candidate still builds and runs).

Tried in turn, until nothing more helps or the time budget ends: fewer steps (from the
end), no events, one backward call, the first batch size; no scheduler, clipping,
counters, parameter groups, optimizer extras; a plain Sequential; zero_grad at the start;
each layer that keeps its input's shape left out, and the head made one Linear.
"""

from __future__ import annotations

import time

from .check import check
from .spec import Layer, Step

# Layers that keep the shape of what they read: dropping one keeps the model valid.
_SHAPE_KEEPING = ("ReLU", "GELU", "Tanh", "Sigmoid", "Dropout", "Identity", "LayerNorm",
                  "BatchNorm", "MultiheadAttention", "Flatten")


def minimize(spec, keys, budget_s: float = 60.0, backends=("numpy", "c")):
    """The smallest variant of ``spec`` found that still has a mismatch in ``keys``."""
    deadline = time.monotonic() + budget_s
    keys = set(keys)

    def fails(candidate) -> bool:
        try:
            return any(m.key in keys for m in check(candidate, backends))
        except Exception:  # noqa: BLE001 - a candidate that crashes the checker is no help
            return False

    current = spec
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for candidate in _candidates(current):
            if time.monotonic() >= deadline:
                break
            if fails(candidate):
                current, improved = candidate, True
                break
    return current


def _candidates(spec):
    steps = spec.steps
    for n in range(1, len(steps)):
        yield spec.replace(steps=steps[:n])
    for k, step in enumerate(steps):
        if step.events:
            for e in step.events:
                events = tuple(x for x in step.events if x != e)
                yield spec.replace(steps=_with(steps, k, Step(step.batch, step.backwards,
                                                               events)))
        if step.backwards > 1:
            yield spec.replace(steps=_with(steps, k, Step(step.batch, 1, step.events)))
        if step.batch != steps[0].batch:
            yield spec.replace(steps=_with(steps, k, Step(steps[0].batch, step.backwards,
                                                           step.events)))
    if spec.scheduler:
        yield spec.replace(scheduler=None, steps=[
            Step(s.batch, s.backwards, tuple(e for e in s.events if e != "sched"))
            for s in steps])
    for field, plain in (("clip", None), ("counters", ()), ("group_split", 0),
                         ("container", "sequential"), ("zero", "none_start"),
                         ("jitted", "step")):
        if getattr(spec, field) != plain:
            yield spec.replace(**{field: plain})
    for key in list(spec.hyper):
        if key != "lr" and not (key == "momentum" and spec.hyper.get("nesterov")):
            yield spec.replace(hyper={k: v for k, v in spec.hyper.items() if k != key})
    if spec.optimizer != "SGD":
        yield spec.replace(optimizer="SGD", hyper={"lr": 0.1})
    for i, layer in enumerate(spec.layers):
        if i and any(name in layer.make for name in _SHAPE_KEEPING):
            yield spec.replace(layers=spec.layers[:i] + spec.layers[i + 1:])
    if len(spec.head) > 1:
        first, last = spec.head[0].make, spec.head[-1].make
        width = first.split("(")[1].split(",")[0]
        out = last.split("(")[1].split(",")[1].split(")")[0].strip()
        yield spec.replace(head=[Layer(f"em.nn.Linear({width}, {out})")])


def _with(steps, k, step):
    return steps[:k] + [step] + steps[k + 1:]


__all__ = ["minimize"]
