"""Random models (spec.py) from a seed string: ``generate("7-12")`` is always the same model.

Layers are drawn per family with their shapes tracked, so every model builds and runs:
vectors (Linear, MLP, GLU, every activation, LayerNorm, RMSNorm, BatchNorm1d, Dropout,
Identity, Flatten), token ids (Embedding, MultiheadAttention with residuals, RNN/LSTM/GRU,
TransformerEncoderLayer, LayerNorm, RMSNorm, Linear, Dropout, then a mean over the
sequence), 1-d signals (Conv1d, ConvTranspose1d, BatchNorm1d, GroupNorm, MaxPool1d,
AvgPool1d, adaptive pools, Dropout1d) and 2-d images (the same in 2-d), each ending in a
Linear head. Not drawn: LazyLinear (its first call under jit makes its parameters
eagerly, as PyTorch's dynamo does; tests/torch_front has its twins), the loss modules (the
losses are the functional ones), LBFGS (it needs a closure).
"""

from __future__ import annotations

import dataclasses
import random

from .spec import Layer, ModelSpec, Step

ACTIVATIONS = ("em.nn.ReLU()", "em.nn.GELU()", 'em.nn.GELU(approximate="tanh")',
               "em.nn.Tanh()", "em.nn.Sigmoid()")
# Shape-keeping layers drawn less often than the classic activations: every other
# activation, the softmaxes over the last axis, PReLU (a parameter).
MORE_ACTIVATIONS = ("em.nn.SiLU()", "em.nn.LeakyReLU(0.1)", "em.nn.ELU()", "em.nn.SELU()",
                    "em.nn.CELU()", "em.nn.Mish()", "em.nn.Hardtanh()", "em.nn.ReLU6()",
                    "em.nn.Hardsigmoid()", "em.nn.Hardswish()", "em.nn.LogSigmoid()",
                    "em.nn.Softsign()", "em.nn.Tanhshrink()", "em.nn.Softplus()",
                    "em.nn.PReLU()", "em.nn.Threshold(0.1, -1.0)", "em.nn.Softmax(dim=-1)",
                    "em.nn.LogSoftmax(dim=-1)", "em.nn.Softmin(dim=-1)")
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
    draw = rng.random()  # (one draw: the models of a seed keep their other choices)
    spec.jitted = "step" if draw < 0.65 else "clip_step" if draw < 0.85 else "forward"
    spec.steps = _steps(rng, spec)
    # Drawn from a generator of their own, so that a seed's models keep every earlier
    # choice: the step's forward and backward in a helper function; and more models that
    # write no Python counter (a function that writes one re-runs its Python at every call,
    # so only the others replay the graph under the guards).
    extra = random.Random(f"{seed}/extra")
    spec.helper = extra.random() < 0.4
    if extra.random() < 0.4:
        spec.counters = ()
    if extra.random() < 0.3 and spec.steps:
        # One signature at every step: the calls after a state change (eval(), a frozen
        # parameter) replay a cached graph unless a guard sees the change, where varying
        # batch sizes and accumulation counts retrace anyway and hide a missing guard.
        first = spec.steps[0]
        spec.steps = [dataclasses.replace(st, batch=first.batch, backwards=first.backwards)
                      for st in spec.steps]
    return spec


# --- families (each returns the width the head reads) -------------------------------------

def _vector(rng, spec) -> int:
    width = rng.randint(3, 8)
    spec.sample = (width,)
    for _ in range(rng.randint(1, 5)):
        kind = rng.choice(("linear", "linear", "act", "act", "layernorm", "batchnorm",
                           "dropout", "identity", "mlp", "flatten", "rmsnorm", "glu"))
        if kind == "glu":
            if width % 2:
                continue
            spec.layers.append(Layer("em.nn.GLU()"))
            width //= 2
        elif kind == "linear":
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
        kind = rng.choice(("attention", "attention", "layernorm", "linear", "act", "dropout",
                           "recurrent", "transformer", "rmsnorm"))
        if kind == "recurrent":
            name = rng.choice(("RNN", "LSTM", "GRU"))
            spec.layers.append(Layer(f"em.nn.{name}({width}, {width}, batch_first=True)",
                                     call="recurrent"))
        elif kind == "transformer":
            heads = rng.choice([h for h in (1, 2) if width % h == 0])
            spec.layers.append(Layer(f"em.nn.TransformerEncoderLayer({width}, {heads}, "
                                     f"dim_feedforward={2 * width}, dropout="
                                     f"{rng.choice((0.0, 0.1))}, batch_first=True)"))
        elif kind == "attention":
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
                           "dropout", "convT", "adaptive", "groupnorm", "dropout1d"))
        if kind == "convT":
            new, k, stride = rng.randint(1, 4), rng.randint(1, 3), rng.choice((1, 2))
            spec.layers.append(Layer(f"em.nn.ConvTranspose1d({channels}, {new}, {k}, "
                                     f"stride={stride})"))
            channels, length = new, (length - 1) * stride + k
            continue
        if kind == "adaptive":
            out = rng.randint(1, length)
            name = rng.choice(("AdaptiveAvgPool1d", "AdaptiveMaxPool1d"))
            spec.layers.append(Layer(f"em.nn.{name}({out})"))
            length = out
            continue
        if kind == "dropout1d":
            spec.layers.append(Layer("em.nn.Dropout1d(0.2)"))
            continue
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
                           "dropout", "convT", "adaptive", "groupnorm", "dropout2d"))
        if kind == "convT":
            new, k, stride = rng.randint(1, 3), rng.randint(1, 3), rng.choice((1, 2))
            spec.layers.append(Layer(f"em.nn.ConvTranspose2d({channels}, {new}, {k}, "
                                     f"stride={stride})"))
            channels, side = new, (side - 1) * stride + k
            continue
        if kind == "adaptive":
            out = rng.randint(1, side)
            name = rng.choice(("AdaptiveAvgPool2d", "AdaptiveMaxPool2d"))
            spec.layers.append(Layer(f"em.nn.{name}({out})"))
            side = out
            continue
        if kind == "dropout2d":
            spec.layers.append(Layer("em.nn.Dropout2d(0.2)"))
            continue
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
        return Layer(rng.choice(ACTIVATIONS if rng.random() < 0.6 else MORE_ACTIVATIONS))
    if kind == "rmsnorm":
        return Layer(f"em.nn.RMSNorm({width})")
    if kind == "groupnorm" and norm is not None:
        groups = rng.choice([g for g in (1, 2, 3) if width % g == 0])
        return Layer(f"em.nn.GroupNorm({groups}, {width})")
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
    kind = rng.choice(("SGD", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"))
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
    elif kind == "Adagrad":
        h["lr"] = rng.choice((1e-2, 5e-2))
        if rng.random() < 0.3:
            h["lr_decay"] = 0.01
    elif kind == "Adadelta":
        h["lr"] = rng.choice((1.0, 0.5))
        h["rho"] = rng.choice((0.9, 0.95))
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
