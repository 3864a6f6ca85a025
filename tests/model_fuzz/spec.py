"""A fuzz model: what to build and how to train it, rendered as a script one can run.

A :class:`ModelSpec` names a model family (vectors, token ids, 1-d or 2-d images), its
layers (shape-consistent, held in a Sequential, a ModuleList, a ModuleDict or plain
attributes), a loss, an optimizer with its parameter groups, a scheduler, gradient
clipping, how gradients are zeroed, the Python counters the step writes, what is jitted
(the whole training step; only clip + ``opt.step()`` after eager backward calls; or only
the model, ``FORWARD = JIT(model)``, with the loss, backward and step eager), and
a list of steps: each a batch size, 1-4 backward calls (gradient accumulation) and the
events before it (train/eval, freezing, a schedule step, a state_dict save or load, a
learning rate or counter edited from outside, inputs near the float32 limits).

``render`` prints the script (``# --- setup ---``, then ``# --- step K ---`` blocks): run
eagerly, ``JIT`` is the identity; under jit it is ``em.jit`` (runner.py binds it). The
minimizer (minimize.py) edits the spec and renders again.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

SETUP_MARK = "# --- setup ---"
STEP_MARK = "# --- step {} ---"


@dataclass(frozen=True)
class Layer:
    """One layer: its constructor (``em.nn.X(...)``) and how forward applies it."""

    make: str            # "em.nn.Linear(6, 8)"
    call: str = "plain"  # "plain": x = layer(x); "attention": x = x + layer(x, x, x)[0];
    #                      "recurrent": x = layer(x)[0]


@dataclass(frozen=True)
class Step:
    batch: int
    backwards: int = 1                  # micro-batches, each with its own backward call
    events: tuple = ()                  # statements before the step (events.py names)


@dataclass
class ModelSpec:
    seed: str
    family: str                         # "vector" | "tokens" | "conv1d" | "conv2d"
    sample: tuple                       # one input's shape (ids: (T,), vocabulary below)
    vocab: int = 0
    classes: int = 0                    # > 0: cross-entropy over classes; 0: MSE
    out_features: int = 1
    layers: list = field(default_factory=list)
    head: list = field(default_factory=list)     # after the reduction to vectors
    container: str = "sequential"       # "sequential" | "modulelist" | "moduledict" | "attrs"
    optimizer: str = "SGD"
    hyper: dict = field(default_factory=dict)
    group_split: int = 0                # > 0: a second parameter group from this index
    group_hyper: dict = field(default_factory=dict)
    scheduler: str | None = None        # "em.optim.lr_scheduler.StepLR(opt, ...)" tail
    clip: str | None = None             # "norm" | "value" | "scale"
    clip_arg: float = 1.0
    zero: str = "none_start"            # how gradients are zeroed (see _zero_lines)
    counters: tuple = ()                # "instance" | "class" | "class_direct" | "dict" | "list"
    jitted: str = "step"                # "step" | "clip_step" | "forward"
    helper: bool = False                # the step's forward + backward in a helper function
    steps: list = field(default_factory=list)

    def replace(self, **changes) -> ModelSpec:
        return replace(self, **changes)

    @property
    def tags(self) -> set:
        """The features this model uses (the campaign counts them)."""
        out = {f"family:{self.family}", f"container:{self.container}",
               f"optimizer:{self.optimizer}", f"zero:{self.zero}", f"jitted:{self.jitted}"}
        out |= {f"counter:{c}" for c in self.counters}
        if self.helper and self.jitted == "step":
            out.add("step:helper")
        out |= {f"layer:{layer.make.split('(')[0].split('.')[-1]}"
                for layer in [*self.layers, *self.head]}
        for key, value in self.hyper.items():
            if value and value is not True and key != "lr" or value is True:
                out.add(f"hyper:{key}")
        if self.group_split:
            out.add("param_groups")
        if self.scheduler:
            out.add(f"scheduler:{self.scheduler.split('(')[0]}")
        if self.clip:
            out.add(f"clip:{self.clip}")
        for step in self.steps:
            if step.backwards > 1:
                out.add("accumulation")
            out |= {f"event:{e.split(':')[0]}" for e in step.events}
        if len({s.batch for s in self.steps}) > 1:
            out.add("batch_sizes")
        return out

    # --- the script ------------------------------------------------------------------
    def render(self) -> str:
        lines = ["import execmode as em", "", SETUP_MARK, *self.setup_lines()]
        for k, step in enumerate(self.steps, start=1):
            lines += ["", STEP_MARK.format(k), *self.step_lines(k, step)]
        return "\n".join(lines) + "\n"

    def setup_text(self) -> str:
        return "\n".join(["import execmode as em", *self.setup_lines()]) + "\n"

    def setup_lines(self) -> list[str]:
        lines = [f"em.random.seed({_int_seed(self.seed)})", ""]
        lines += ["class Counters:", "    steps = 0      # class attributes: the step counts",
                  "    total = 0      # through the instance, and on the class", "",
                  "", "counters = Counters()", 'stats = {"calls": 0, "seen": []}', "", ""]
        lines += self._model_lines()
        lines += ["", "", "model = Net()", "params = list(model.parameters())"]
        lines.append(f"opt = {self._optimizer_expr()}")
        if self.scheduler:
            lines.append(f"sched = em.optim.lr_scheduler.{self.scheduler}")
        lines += ["", ""] + self._step_function()
        if self.jitted == "forward":  # the model jitted, backward through its results
            return lines + ["", "", "FORWARD = JIT(model)", f"STEP = {self._fn_name}"]
        return lines + ["", "", f"STEP = JIT({self._fn_name})"]

    @property
    def _fn_name(self) -> str:
        return "train_step" if self.jitted == "step" else "clip_step"

    def _model_lines(self) -> list[str]:
        body = ["        self.calls = 0"] if "instance" in self.counters else []
        forward = ["        self.calls += 1"] if "instance" in self.counters else []
        layers = self.layers
        if self.container == "sequential" and all(ly.call == "plain" for ly in layers):
            body.append("        self.body = em.nn.Sequential(")
            body += [f"            {ly.make}," for ly in layers]
            body.append("        )")
            forward.append("        x = self.body(x)")
        elif self.container in ("sequential", "modulelist"):
            body.append("        self.body = em.nn.ModuleList([")
            body += [f"            {ly.make}," for ly in layers]
            body.append("        ])")
            forward += self._apply_each("self.body", layers)
        elif self.container == "moduledict":
            body.append("        self.body = em.nn.ModuleDict({")
            body += [f'            "l{i}": {ly.make},' for i, ly in enumerate(layers)]
            body.append("        })")
            forward += self._apply_each("self.body.values()", layers)
        else:
            for i, ly in enumerate(layers):
                body.append(f"        self.l{i} = {ly.make}")
                forward.append(_apply(f"self.l{i}", ly.call))
        forward += _reduce_lines(self.family)
        if self.head:
            body.append("        self.head = em.nn.Sequential(" + ", ".join(
                ly.make for ly in self.head) + ")")
            forward.append("        x = self.head(x)")
        return (["class Net(em.nn.Module):", "    def __init__(self):",
                 "        super().__init__()", *body, "", "    def forward(self, x):",
                 *forward, "        return x"])

    @staticmethod
    def _apply_each(iterable: str, layers) -> list[str]:
        if all(ly.call == "plain" for ly in layers):
            return [f"        for layer in {iterable}:", "            x = layer(x)"]
        calls = sorted({ly.call for ly in layers})
        out = [f"        for layer in {iterable}:"]
        branch = "if"
        if "attention" in calls:
            out += [f"            {branch} isinstance(layer, em.nn.MultiheadAttention):",
                    "                x = x + layer(x, x, x, need_weights=False)[0]"]
            branch = "elif"
        if "recurrent" in calls:
            out += [f"            {branch} isinstance(layer, em.nn.RNNBase):",
                    "                x = layer(x)[0]"]
        return out + ["            else:", "                x = layer(x)"]

    def _optimizer_expr(self) -> str:
        kwargs = ", ".join(f"{k}={v!r}" for k, v in self.hyper.items())
        if self.group_split:
            extra = ", ".join(f'"{k}": {v!r}' for k, v in self.group_hyper.items())
            params = (f'[{{"params": params[:{self.group_split}]}}, '
                      f'{{"params": params[{self.group_split}:]{", " if extra else ""}{extra}}}]'
                      f' if len(params) > {self.group_split} else params')
        else:
            params = "params"
        return f"em.optim.{self.optimizer}({params}, {kwargs})"

    def _counter_lines(self) -> list[str]:
        out = []
        if "class" in self.counters:
            out.append("    counters.steps += 1")
        if "class_direct" in self.counters:
            out.append("    Counters.total += 1")
        if "dict" in self.counters:
            out.append('    stats["calls"] += 1')
        if "list" in self.counters:
            out.append('    stats["seen"].append(len(stats["seen"]))')
        return out

    def _clip_lines(self) -> list[str]:
        # With a helper the step reads the model nowhere else: its parameters by the list.
        ps = "params" if self.helper and self.jitted == "step" else "model.parameters()"
        if self.clip == "norm":
            return [f"    norm = em.nn.utils.clip_grad_norm_({ps}, {self.clip_arg!r})"]
        if self.clip == "value":
            return [f"    em.nn.utils.clip_grad_value_({ps}, {self.clip_arg!r})"]
        if self.clip == "scale":
            return [f"    for p in {ps}:", "        if p.grad is not None:",
                    f"            p.grad *= {self.clip_arg!r}"]
        return []

    def _zero_lines(self, indent: str = "    ") -> list[str]:
        """"none_start": opt.zero_grad() first; "inplace_start": zero_grad(set_to_none=
        False) first; "model_end": model.zero_grad() after the update; "never":
        gradients accumulate across steps."""
        return {"none_start": [f"{indent}opt.zero_grad()"],
                "inplace_start": [f"{indent}opt.zero_grad(set_to_none=False)"],
                "model_end": [f"{indent}model.zero_grad()"],
                "never": []}[self.zero]

    def _step_function(self) -> list[str]:
        tail = ["    return norm"] if self.clip == "norm" else ["    return None"]
        if self.jitted == "step":
            # helper: the model is read inside a function the step calls (its state must
            # be guarded as the step's own: model.eval() between calls retraces)
            helper = ["def forward_backward(x, y, n):",
                      f"    loss = {self._loss('model(x)', 'y')} / n",
                      "    loss.backward()", "    return loss.detach()", "", ""]
            lines = [*(helper if self.helper else []), "def train_step(batches):",
                     *self._counter_lines()]
            if self.zero.endswith("start"):
                lines += self._zero_lines()
            if self.helper:
                lines += ["    total = 0.0", "    for x, y in batches:",
                          "        total = total + forward_backward(x, y, len(batches))"]
            else:
                lines += ["    total = 0.0", "    for x, y in batches:",
                          f"        loss = {self._loss('model(x)', 'y')} / len(batches)",
                          "        loss.backward()", "        total = total + loss.detach()"]
            lines += self._clip_lines() + ["    opt.step()"]
            if self.zero == "model_end":
                lines += self._zero_lines()
            return lines + ["    return total"]
        lines = ["def clip_step():", *self._counter_lines(), *self._clip_lines(),
                 "    opt.step()"]
        if self.zero == "model_end":
            lines += self._zero_lines()
        return lines + tail

    def _loss(self, pred: str, target: str) -> str:
        if self.classes:
            return f"em.nn.functional.cross_entropy({pred}, {target})"
        return f"em.mse_loss({pred}, {target})"

    def step_lines(self, k: int, step: Step) -> list[str]:
        return self.event_lines(step) + self.action_lines(k, step)

    def event_lines(self, step: Step) -> list[str]:
        """What happens between the previous step and this one (events.py)."""
        from .events import render_event

        lines = []
        for event in step.events:
            lines += render_event(event, self)
        return lines

    def action_lines(self, k: int, step: Step) -> list[str]:
        """The step itself: its batches, backward calls and the (jitted) step."""
        lines = []
        lines.append(f"batches = [{self._batch_expr(step.batch)} for _ in "
                     f"range({step.backwards})]")
        if any(e.startswith("extreme") for e in step.events):
            lines.append("batches = [(x * BIG, y) for x, y in batches]")
        if self.jitted == "step":
            lines.append(f"out{k} = STEP(batches)")
            return lines
        if self.zero.endswith("start"):
            lines += self._zero_lines(indent="")
        model = "FORWARD(x)" if self.jitted == "forward" else "model(x)"
        lines += ["for x, y in batches:",
                  f"    ({self._loss(model, 'y')} / len(batches)).backward()",
                  f"out{k} = STEP()"]
        return lines

    def _batch_expr(self, batch: int) -> str:
        shape = (batch, *self.sample)
        if self.family == "tokens":
            x = f"em.random.randint(0, {self.vocab}, {shape})"
        else:
            x = f"em.random.normal({shape})"
        if self.classes:
            y = f"em.random.randint(0, {self.classes}, ({batch},))"
        else:
            y = f"em.random.normal(({batch}, {self.out_features}))"
        return f"({x}, {y})"


def _apply(name: str, call: str) -> str:
    if call == "attention":
        return f"        x = x + {name}(x, x, x, need_weights=False)[0]"
    if call == "recurrent":  # (output, hidden state)
        return f"        x = {name}(x)[0]"
    return f"        x = {name}(x)"


def _reduce_lines(family: str) -> list[str]:
    """From the body's output to vectors for the head."""
    if family == "tokens":
        return ["        x = em.mean(x, axis=1)"]
    if family in ("conv1d", "conv2d"):
        return ["        x = em.reshape(x, (x.shape[0], -1))"]
    return []


def _int_seed(seed) -> int:
    """A stable integer from a seed string ("7-12")."""
    total = 0
    for ch in str(seed):
        total = (total * 131 + ord(ch)) % (2 ** 31 - 1)
    return total


__all__ = ["Layer", "ModelSpec", "STEP_MARK", "SETUP_MARK", "Step"]
