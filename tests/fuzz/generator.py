"""The seeded generator of random straight-line programs with state.

``generate(seed, features)`` returns a :class:`~program.Program`. The generator keeps a
symbolic model of the function's values: each variable's shape (``"B"`` is the batch size,
which changes between calls), dtype, whether it is a view and of what, whether it requires
grad; and a version per root tensor, bumped by every in-place update, so it knows when a
view has gone stale. The model only decides what is *worth* generating (valid shapes, the
features each statement needs); it never predicts results: the comparator runs both modes.

Each statement carries the features it exercises as tags (program.Stmt.tags), so a
mismatch can be attributed, and a feature that is off is never emitted.
"""

from __future__ import annotations

import random
import re

from . import size_counts
from .features import FEATURES
from .op_statements import OpStatements
from .program import Program, Stmt
from .program_frame import ProgramFrame
from .program_model import NUMERIC, PASSES, Var
from .state_statements import StateStatements
from .values import ValueMaker


class Generator(ProgramFrame, OpStatements, StateStatements):
    def __init__(self, seed, features: dict | None = None):
        self.seed = seed
        self.rng = random.Random(seed)
        self.f = dict(FEATURES if features is None else features)
        self.values = ValueMaker(self.rng, self.f)
        self.vars: list[Var] = []
        self.body: list[Stmt] = []
        self.versions: dict[str, int] = {}
        self.count = 0
        self.live_grads: set[str] = set()   # owners whose .grad the body has set
        self.has_params = False
        self.has_opt = False
        self.b_can_be_zero = self.f["batch_sizes"]
        # Draws of the outer backward (a stream of its own: the programs of a seed keep
        # everything else they had before it existed).
        self.outer = random.Random(f"{seed}/outer")
        self.size_rng = random.Random(f"{seed}/sizes")   # symbolic sizes' calls (same reason)
        self.sizes = self.symbolic_sizes()   # None, or each call's batch size
        # Half the programs with symbolic sizes have no parameters and no argument that
        # requires grad: a result that needs a backward graph keeps a function tracing per
        # size, and these reach the one graph for every size (symbolic_dims._unservable).
        self.forward_only = self.sizes is not None and self.size_rng.random() < 0.5
        self.differentiable: list[int] = []   # returned positions that may require grad
        self.single = False

    # --- helpers -------------------------------------------------------------------------
    def on(self, name: str) -> bool:
        return bool(self.f.get(name))

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def new_name(self) -> str:
        name = f"v{self.count}"
        self.count += 1
        return name

    def readable(self, v: Var) -> bool:
        if v.kind == "grad" and v.root.rsplit(".", 1)[0] not in self.live_grads:
            return False
        if v.view and self.versions.get(v.root, 0) > v.born and not self.on("stale_views"):
            return False
        return True

    def pick(self, pred=lambda v: True, prefer_inter: float = 0.5):
        """A readable variable satisfying ``pred``: an intermediate with probability
        ``prefer_inter``, else an argument half the time, else any."""
        cands = [v for v in self.vars if self.readable(v) and pred(v)]
        if not cands:
            return None
        r = self.rng.random()
        inter = [v for v in cands if v.kind == "inter"]
        args = [v for v in cands if v.kind == "arg"]
        if inter and r < prefer_inter:
            return self.rng.choice(inter)
        if args and r < prefer_inter + (1 - prefer_inter) / 2:
            return self.rng.choice(args)
        return self.rng.choice(cands)

    def read_tags(self, *vs: Var) -> set:
        tags = set()
        for v in vs:
            if v.view:
                tags.add("views")
                if self.versions.get(v.root, 0) > v.born:
                    tags.add("stale_views")
            if v.kind == "grad":
                tags.add("backward")
        return tags

    def emit(self, text: str, tags) -> None:
        self.body.append(Stmt(text, frozenset(tags)))

    def add_var(self, text_rhs: str, shape, dtype, tags, *inputs: Var, view_of: Var | None = None,
                rg=None) -> Var:
        name = self.new_name()
        if rg is None:
            rg = any(v.rg for v in inputs)
        if view_of is not None:
            var = Var(name, tuple(shape), dtype, "inter", view_of.root, view=True,
                      born=self.versions.get(view_of.root, 0), rg=rg and view_of.rg)
        else:
            # conservative: eager keeps requires_grad through casts to int64, for one
            var = Var(name, tuple(shape), dtype, "inter", name, rg=rg)
        var.expr = self.expr_of(text_rhs)
        self.vars.append(var)
        self.emit(f"{name} = {text_rhs}", tags | self.read_tags(*inputs))
        return var

    _NAME = re.compile(r"obj\.buf|[wb]\.grad|\b[a-z]\w*\b")

    def expr_of(self, rhs: str) -> str:
        """``rhs`` with every variable replaced by its expr: equal values, equal exprs
        (a detach() or an astype to the same dtype is the value itself)."""
        by_name = {v.name: v.expr for v in self.vars}
        text = self._NAME.sub(lambda m: by_name.get(m.group(), m.group()), rhs)
        if text.endswith(".detach()"):
            return text[: -len(".detach()")]
        return "(" + text + ")"

    # --- set-up ----------------------------------------------------------------------------
    def numeric(self, v: Var) -> bool:
        return v.dtype in NUMERIC

    # --- the function, its return, the calls -----------------------------------------------
    STATEMENTS = (
        ("st_unary", 4), ("st_binary", 5), ("st_scalar", 3), ("st_object_scalar", 2),
        ("st_reduce", 3), ("st_matmul", 2), ("st_where", 2), ("st_cast", 1.5),
        ("st_identity", 1.5), ("st_clone", 0.5), ("st_stack", 0.5), ("st_index_tensor", 1),
        ("st_view", 3), ("st_inplace", 5), ("st_backward", 2), ("st_grad_edit", 1),
        ("st_optimizer", 1), ("st_param_update", 1), ("st_array_api", 1),
        ("st_more_dtypes", 1.5), ("st_more_functions", 1), ("st_split", 1),
    )

    def make_body(self) -> None:
        names, weights = zip(*self.STATEMENTS)
        target = self.rng.randint(1, 9)
        tries = 0
        while len(self.body) < target and tries < 60:
            tries += 1
            getattr(self, self.rng.choices(names, weights)[0])()

    def make(self) -> Program:
        setup = self.make_setup()
        params = self.make_params()
        self.make_body()
        returns, single = self.make_returns()
        counted = size_counts.statement(self)
        if counted is not None:  # after the returns were drawn: they stay the seed's
            returns.append(Stmt(counted.name, frozenset({"size_counts"})))
            single = False
        by_name = {v.name: v for v in self.vars}
        self.differentiable = [j for j, r in enumerate(returns)
                               if by_name[r.text].rg and by_name[r.text].dtype != "int64"
                               and by_name[r.text].dtype.startswith("float")]
        self.single = single and len(returns) == 1
        calls = self.make_calls()
        prog = Program(setup=setup, params=params, body=self.body, returns=returns,
                       calls=calls, single_return=single, seed=self.seed)
        if self.on("passes_subsets") and self.chance(0.4):
            prog.passes = [p for p in PASSES if self.chance(0.5)]
        if self.on("backends") and self.chance(0.5):
            prog.backend = self.rng.choice(("interpreter", "numpy"))
            if prog.backend == "interpreter" and self.sizes is not None and \
                    self.size_rng.random() < 0.75:
                prog.backend = None  # the interpreter traces per size: keep a few
        if self.on("listener") and self.chance(0.3):
            prog.listener = self.rng.choice(("events", "all"))
        if self.on("threads") and self.chance(0.1):
            prog.threads = True
        return prog


def generate(seed, features: dict | None = None) -> Program:
    """The program for ``seed`` (the same seed and features give the same text)."""
    return Generator(seed, features).make()

