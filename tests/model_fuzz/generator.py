"""Random models (spec.py) from a seed string: ``generate("7-12")`` is always the same model.

Layers are drawn per family with their shapes tracked, so every model builds and runs:
vectors (Linear, MLP, activations, LayerNorm, BatchNorm1d, Dropout, Identity, Flatten),
token ids (Embedding, MultiheadAttention with residuals, LayerNorm, Linear, Dropout, then a
mean over the sequence), 1-d signals (Conv1d, BatchNorm1d, MaxPool1d, AvgPool1d) and 2-d
images (Conv2d, BatchNorm2d, MaxPool2d, AvgPool2d), each ending in a Linear head.
"""

from __future__ import annotations

import random

from .spec import Layer, ModelSpec, Step

ACTIVATIONS = ("em.nn.ReLU()", "em.nn.GELU()", 'em.nn.GELU(approximate="tanh")',
               "em.nn.Tanh()", "em.nn.Sigmoid()")
SCHEDULERS = ("StepLR(opt, step_size=2, gamma=0.5)", "ExponentialLR(opt, gamma=0.9)",
              "CosineAnnealingLR(opt, T_max=4)", "MultiStepLR(opt, milestones=[1, 3], "
              "gamma=0.5)", "LinearLR(opt, start_factor=0.5, total_iters=3)")


def generate(seed: str) -> ModelSpec:
    rng = random.Random(str(seed))
    family = rng.choice(("vector", "vector", "tokens", "conv1d", "conv2d"))
    spec = ModelSpec(seed=str(seed), family=family, sample=())
    width = {"vector": _vector, "tokens": _tokens, "conv1d": _conv1d,
             "conv2d": _conv2d}[family](rng, spec)
    if rng.random() < 0.6:
        spec.classes = rng.randint(2, 4)
    else:
        spec.out_features = rng.randint(1, 3)
    out = spec.classes or spec.out_features
    if rng.random() < 0.3:
        hidden = rng.randint(3, 8)
        spec.head = [Layer(f"em.nn.Linear({width}, {hidden})"), Layer(rng.choice(ACTIVATIONS)),
                     Layer(f"em.nn.Linear({hidden}, {out})")]
    else:
        spec.head = [Layer(f"em.nn.Linear({width}, {out}, bias={rng.random() < 0.8})")]
    spec.container = rng.choice(("sequential", "sequential", "modulelist", "moduledict",
                                 "attrs"))
    _optimizer(rng, spec)
    if rng.random() < 0.6:
        spec.scheduler = rng.choice(SCHEDULERS)
    spec.clip = rng.choice((None, None, "norm", "value", "scale"))
    spec.clip_arg = {"norm": rng.choice((0.1, 0.5, 2.0)), "value": rng.choice((0.05, 0.3)),
                     "scale": rng.choice((0.5, 0.25)), None: 1.0}[spec.clip]
    spec.zero = rng.choice(("none_start", "none_start", "inplace_start", "model_end", "never"))
    spec.counters = tuple(c for c in ("instance", "class", "class_direct", "dict", "list")
                          if rng.random() < 0.35)
    spec.jitted = "step" if rng.random() < 0.65 else "clip_step"
    spec.steps = _steps(rng, spec)
    return spec


# --- families (each returns the width the head reads) -------------------------------------

def _vector(rng, spec) -> int:
    width = rng.randint(3, 8)
    spec.sample = (width,)
    for _ in range(rng.randint(1, 5)):
        kind = rng.choice(("linear", "linear", "act", "act", "layernorm", "batchnorm",
                           "dropout", "identity", "mlp", "flatten"))
        if kind == "linear":
            new = rng.randint(3, 10)
            spec.layers.append(Layer(f"em.nn.Linear({width}, {new}, bias={rng.random() < 0.8})"))
            width = new
        elif kind == "mlp":
            hidden, new = rng.randint(3, 8), rng.randint(3, 8)
            spec.layers.append(Layer(f"em.nn.MLP([{width}, {hidden}, {new}])"))
            width = new
        else:
            spec.layers.append(_common(rng, kind, width, "1d"))
    return width


def _tokens(rng, spec) -> int:
    length, vocab = rng.randint(3, 6), rng.randint(5, 12)
    width = rng.choice((4, 6, 8))
    spec.sample, spec.vocab = (length,), vocab
    padding = ", padding_idx=0" if rng.random() < 0.3 else ""
    spec.layers.append(Layer(f"em.nn.Embedding({vocab}, {width}{padding})"))
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(("attention", "attention", "layernorm", "linear", "act", "dropout"))
        if kind == "attention":
            heads = rng.choice([h for h in (1, 2, 4) if width % h == 0])
            dropout = rng.choice((0.0, 0.0, 0.2))
            spec.layers.append(Layer(f"em.nn.MultiheadAttention({width}, {heads}, dropout="
                                     f"{dropout}, batch_first=True)", call="attention"))
        elif kind == "linear":
            spec.layers.append(Layer(f"em.nn.Linear({width}, {width})"))
        else:
            spec.layers.append(_common(rng, kind, width, None))
    return width


def _conv1d(rng, spec) -> int:
    channels, length = rng.randint(1, 4), rng.randint(6, 12)
    spec.sample = (channels, length)
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(("conv", "conv", "batchnorm", "act", "maxpool", "avgpool",
                           "dropout"))
        if kind == "conv":
            new, k = rng.randint(1, 5), rng.randint(1, 3)
            pad, stride = rng.choice((0, 1)), rng.choice((1, 1, 2))
            out = (length + 2 * pad - k) // stride + 1
            if out < 1:
                continue
            spec.layers.append(Layer(f"em.nn.Conv1d({channels}, {new}, {k}, stride={stride}, "
                                     f"padding={pad})"))
            channels, length = new, out
        elif kind in ("maxpool", "avgpool"):
            if length < 2:
                continue
            name = "MaxPool1d" if kind == "maxpool" else "AvgPool1d"
            spec.layers.append(Layer(f"em.nn.{name}(2)"))
            length //= 2
        else:
            spec.layers.append(_common(rng, kind, channels, "1d"))
    return channels * length


def _conv2d(rng, spec) -> int:
    channels, side = rng.randint(1, 3), rng.randint(4, 7)
    spec.sample = (channels, side, side)
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(("conv", "conv", "batchnorm", "act", "maxpool", "avgpool",
                           "dropout"))
        if kind == "conv":
            new, k = rng.randint(1, 4), rng.randint(1, 3)
            pad, stride = rng.choice((0, 1)), rng.choice((1, 1, 2))
            out = (side + 2 * pad - k) // stride + 1
            if out < 1:
                continue
            spec.layers.append(Layer(f"em.nn.Conv2d({channels}, {new}, {k}, stride={stride}, "
                                     f"padding={pad})"))
            channels, side = new, out
        elif kind in ("maxpool", "avgpool"):
            if side < 2:
                continue
            name = "MaxPool2d" if kind == "maxpool" else "AvgPool2d"
            spec.layers.append(Layer(f"em.nn.{name}(2)"))
            side //= 2
        else:
            spec.layers.append(_common(rng, kind, channels, "2d"))
    return channels * side * side


def _common(rng, kind: str, width: int, norm: str | None) -> Layer:
    if kind == "act":
        return Layer(rng.choice(ACTIVATIONS))
    if kind == "dropout":
        return Layer(f"em.nn.Dropout({rng.choice((0.1, 0.5))})")
    if kind == "identity":
        return Layer("em.nn.Identity()")
    if kind == "flatten":
        return Layer("em.nn.Flatten()")
    if kind == "batchnorm" and norm is not None:
        extra = rng.choice(("", ", momentum=None", ", affine=False", ", momentum=0.5"))
        return Layer(f"em.nn.BatchNorm{norm}({width}{extra})")
    return Layer(f"em.nn.LayerNorm({width})")


# --- training ------------------------------------------------------------------------------

def _optimizer(rng, spec) -> None:
    kind = rng.choice(("SGD", "SGD", "Adam", "AdamW", "RMSprop"))
    spec.optimizer = kind
    h: dict = {}
    if kind == "SGD":
        h["lr"] = rng.choice((0.01, 0.05, 0.1))
        if rng.random() < 0.6:
            h["momentum"] = rng.choice((0.5, 0.9))
            if rng.random() < 0.5:
                h["nesterov"] = True
    elif kind in ("Adam", "AdamW"):
        h["lr"] = rng.choice((1e-3, 1e-2, 3e-2))
        if rng.random() < 0.3:
            h["betas"] = (0.8, 0.99)
        if rng.random() < 0.4:
            h["amsgrad"] = True
    else:
        h["lr"] = rng.choice((1e-3, 1e-2))
        h["alpha"] = rng.choice((0.9, 0.99))
        if rng.random() < 0.4:
            h["momentum"] = 0.5
        if rng.random() < 0.4:
            h["centered"] = True
    if rng.random() < 0.4:
        h["weight_decay"] = rng.choice((0.01, 0.1))
    spec.hyper = h
    if rng.random() < 0.3:
        spec.group_split = 1
        spec.group_hyper = {"lr": h["lr"] * rng.choice((0.5, 2.0))}
        if rng.random() < 0.5:
            spec.group_hyper["weight_decay"] = rng.choice((0.0, 0.05))


def _steps(rng, spec) -> list:
    batch = rng.randint(2, 4)
    steps, saved, frozen = [], False, set()
    for k in range(rng.randint(2, 6)):
        if k and rng.random() < 0.2:
            batch = rng.randint(2, 5)        # a new batch size retraces
        events = []
        if k and rng.random() < 0.25:
            events.append(rng.choice(("eval", "train")))
        if k and rng.random() < 0.2:
            i = rng.choice((0, 1))
            events.append(f"unfreeze:{i}" if i in frozen else f"freeze:{i}")
            frozen ^= {i}
        if spec.scheduler and k and rng.random() < 0.7:
            events.append("sched")
        if not saved and rng.random() < 0.15:
            events.append("save")
            saved = True
        elif saved and rng.random() < 0.3:
            events.append("load")
        if k and rng.random() < 0.1:
            events.append("lr_edit")
        if k and rng.random() < 0.1:
            events.append("counter_edit")
        if spec.family != "tokens" and rng.random() < 0.05:
            events.append(f"extreme:{rng.choice((1e30, 1e37, 3e38))}")
        backwards = rng.choice((1, 1, 1, 2, 3, 4))
        steps.append(Step(batch, backwards, tuple(events)))
    return steps


__all__ = ["generate"]
