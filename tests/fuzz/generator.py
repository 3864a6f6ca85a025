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
from dataclasses import dataclass

import numpy as np

from . import more_dtypes
from .features import FEATURES
from .program import Call, Program, Stmt
from .values import DTYPE_NAMES, ValueMaker

B = "B"  # the batch dimension: 0, 1 or 5 per call with batch_sizes, else always 3
NUMERIC = ("float32", "float64", "int64")
EXACT_UNARY = ("abs", "negative", "square", "sign", "trunc")
FLOAT_EXACT_UNARY = ("relu", "floor")
INEXACT_UNARY = ("exp", "tanh", "sigmoid", "sqrt", "log", "sin", "atan", "asinh")
PASSES = ("fold_constants", "simplify", "eliminate_common_subexpressions",
          "eliminate_dead_code", "fuse", "plan_memory")


@dataclass
class Var:
    name: str              # how the function refers to it: "x", "g0", "obj.buf", "v3", "w.grad"
    shape: tuple           # ints and "B"
    dtype: str             # float32 | float64 | int64 | bool
    kind: str              # arg | global | attr | param | inter | grad
    root: str              # the tensor whose storage it is (itself unless a view)
    view: bool = False
    born: int = 0          # the root's version when the view was taken
    rg: bool = False       # requires grad
    leaf_rg: bool = False  # a leaf that requires grad (in-place raises outside no_grad)
    op: str = ""           # the op that made it ("negative": -(-x) is an identity)
    expr: str = ""         # its value as an expression of the roots' versions: two
                           # variables with one expr are merged by CSE (see make_returns)

    def __post_init__(self):
        if not self.expr:
            self.expr = f"{self.name}#0"


def broadcast(a: tuple, b: tuple):
    out = []
    for i in range(max(len(a), len(b))):
        da = a[-1 - i] if i < len(a) else 1
        db = b[-1 - i] if i < len(b) else 1
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            return None
    return tuple(reversed(out))


def scalar_tags(c: str) -> set:
    """The features a Python scalar operand exercises."""
    if c in ("0", "1", "0.0", "1.0"):
        return {"identity_ops"}
    if c in ("nan", "inf", "-inf", "-0.0"):
        return {"special_floats"}
    return set()


def promote(*dtypes: str) -> str:
    return str(np.result_type(*[np.dtype(d) for d in dtypes]))


def scalar_promote(dtype: str, scalar_is_float: bool) -> str:
    if dtype == "int64" and scalar_is_float:
        return "float64"  # NumPy: an int tensor times a Python float is float64
    return dtype


class Generator:
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
    def make_setup(self) -> list:
        def lit(target, shape, dtype, requires_grad=False):
            text, tags = self.values.literal(shape, dtype, requires_grad)
            return Stmt(f"{target} = {text}", frozenset(tags))

        setup = [
            Stmt("class Obj: pass"),
            Stmt("obj = Obj()"),
            Stmt("obj.lr = 0.5"),
            Stmt("obj.step = 1"),
            Stmt("obj.flag = True"),
            lit("obj.buf", (4,), "float32"),
            lit("g0", (4,), "float32"),
            lit("g1", (4, 3), "float32"),
            lit("gi", (4,), "int64"),
        ]
        self.vars += [Var("obj.buf", (4,), "float32", "attr", "obj.buf"),
                      Var("g0", (4,), "float32", "global", "g0"),
                      Var("g1", (4, 3), "float32", "global", "g1"),
                      Var("gi", (4,), "int64", "global", "gi")]
        if self.on("backward"):
            self.has_params = True
            setup += [lit("w", (4, 3), "float32", requires_grad=True),
                      lit("b", (3,), "float32", requires_grad=True)]
            self.vars += [Var("w", (4, 3), "float32", "param", "w", rg=True, leaf_rg=True),
                          Var("b", (3,), "float32", "param", "b", rg=True, leaf_rg=True),
                          Var("w.grad", (4, 3), "float32", "grad", "w.grad"),
                          Var("b.grad", (3,), "float32", "grad", "b.grad")]
            if self.on("optimizers"):
                self.has_opt = True
                if self.chance(0.5):
                    setup.append(Stmt("opt = em.optim.SGD([w, b], lr=0.5, momentum=0.5)",
                                      frozenset({"optimizers"})))
                else:
                    # eps well above float32 noise: with the default 1e-8, a gradient of
                    # 1e-8 makes g / (|g| + eps) amplify 1-ulp kernel differences 1e6-fold
                    setup.append(Stmt("opt = em.optim.Adam([w, b], lr=0.25, eps=0.0625)",
                                      frozenset({"optimizers"})))
        return setup

    def make_params(self) -> list:
        specs = [("x", (B, 4), "float32")]
        if self.chance(0.5):
            specs.append(("y", (4,), "float32"))
        if self.chance(0.3):
            specs.append(("z", (B, 4), "float32"))
        if self.chance(0.3):
            specs.append(("k", (B, 4), "int64"))
        if self.chance(0.15):
            specs.append(("d", (4,), "float64"))
        self.param_specs = []
        for name, shape, dtype in specs:
            rg = (dtype.startswith("float") and self.on("arg_requires_grad")
                  and self.on("backward") and self.chance(0.2))
            self.param_specs.append((name, shape, dtype, rg))
            self.vars.append(Var(name, shape, dtype, "arg", name, rg=rg, leaf_rg=rg))
        return [s[0] for s in self.param_specs]

    # --- value-producing statements --------------------------------------------------------
    def numeric(self, v: Var) -> bool:
        return v.dtype in NUMERIC

    def st_unary(self) -> bool:
        if not self.on("elementwise"):
            return False
        a = self.pick(self.numeric)
        if a is None:
            return False
        if a.dtype == "int64":
            op = self.rng.choice(EXACT_UNARY + INEXACT_UNARY)
        else:
            op = self.rng.choice(EXACT_UNARY + FLOAT_EXACT_UNARY + INEXACT_UNARY)
        dtype = a.dtype
        if op in INEXACT_UNARY and dtype == "int64":
            dtype = "float64"
        tags = {"elementwise"}
        if op == "negative" and a.op == "negative":
            if not self.on("identity_ops"):  # -(-x) simplifies to x (class 2)
                return False
            tags.add("identity_ops")
        text = f"-{a.name}" if op == "negative" else f"em.{op}({a.name})"
        self.add_var(text, a.shape, dtype, tags, a).op = op
        return True

    def broadcast_pair(self):
        """(a, b, their broadcast shape) for two numeric variables, or None."""
        a = self.pick(self.numeric)
        if a is None:
            return None
        b = self.pick(lambda v: self.numeric(v) and broadcast(a.shape, v.shape) is not None)
        if b is None:
            return None
        return a, b, broadcast(a.shape, b.shape)

    def st_binary(self) -> bool:
        if not self.on("elementwise"):
            return False
        pair = self.broadcast_pair()
        if pair is None:
            return False
        a, b, shape = pair
        ops = ("+", "-", "*", "/", "maximum", "minimum")
        if a.dtype == b.dtype == "int64":
            ops += ("&", "|", "^")  # bitwise on ints (issue 36); fused as C's & | ^
        op = self.rng.choice(ops)
        dtype = promote(a.dtype, b.dtype)
        if op == "/":
            dtype = promote(dtype, "float64") if dtype == "int64" else dtype
        text = f"em.{op}({a.name}, {b.name})" if op.isalpha() else f"{a.name} {op} {b.name}"
        self.add_var(text, shape, dtype, {"elementwise"}, a, b)
        return True

    def st_scalar(self) -> bool:
        if not self.on("scalars"):
            return False
        a = self.pick(self.numeric)
        if a is None:
            return False
        c = self.values.scalar(a.dtype if self.chance(0.5) else "float32")
        is_float = "." in c or c in ("nan", "inf")
        form = self.rng.choice(("{a} * {c}", "{a} + {c}", "{c} - {a}", "{a} / {c}",
                                "{a} ** 2"))
        dtype = scalar_promote(a.dtype, is_float)
        if form in ("{a} / {c}",) and a.dtype == "int64":
            dtype = "float64"
        text = form.format(a=a.name, c=c)
        tags = {"scalars"} | scalar_tags(c)
        self.add_var(text, a.shape, dtype, tags, a)
        return True

    def st_object_scalar(self) -> bool:
        if not self.on("object_scalars"):
            return False
        a = self.pick(lambda v: v.dtype.startswith("float"))
        if a is None:
            return False
        form = self.rng.choice(("{a} * obj.lr", "{a} + obj.step",
                                "({a} * 2.0 if obj.flag else {a} - 1.0)"))
        self.add_var(form.format(a=a.name), a.shape, a.dtype, {"object_scalars"}, a)
        return True

    def st_reduce(self) -> bool:
        if not self.on("reductions"):
            return False
        a = self.pick(lambda v: self.numeric(v) and len(v.shape) >= 1)
        if a is None:
            return False
        op = self.rng.choice(("sum", "mean", "max", "min", "argmax", "sum"))
        axis = self.rng.choice([None] + list(range(len(a.shape))) + [-1])
        keep = self.chance(0.3)
        reduced = range(len(a.shape)) if axis is None else [axis % len(a.shape)]
        tags = {"reductions"}
        if op in ("max", "min", "argmax") and self.b_can_be_zero and B in a.shape:
            # an empty axis has no max (both modes must raise); an empty tensor reduced
            # over a non-empty axis is fine eagerly (issue 13, class 9: jit refuses it)
            if not self.on("zero_size_reductions"):
                return False
            tags.add("zero_size_reductions")
        if keep:
            shape = tuple(1 if i in reduced else d for i, d in enumerate(a.shape))
        else:
            shape = tuple(d for i, d in enumerate(a.shape) if i not in reduced)
        if op == "argmax":
            dtype = "int64"
        elif op == "mean" and a.dtype == "int64":
            dtype = "float64"
        else:
            dtype = a.dtype
        args = []
        if axis is not None:
            args.append(f"axis={axis}")
        if keep:
            args.append("keepdims=True")
        self.add_var(f"{a.name}.{op}({', '.join(args)})", shape, dtype, tags, a)
        return True

    def st_matmul(self) -> bool:
        # Not with values near the float limits: a matmul of generated loops adds its
        # products in another order than the BLAS, so where partial dot products overflow
        # it may give inf against NaN (documented in docs/graph-mode.md; sums and products
        # of reductions keep eager's overflow).
        if not self.on("matmul") or self.values.near_limits:
            return False
        kind = self.rng.choice(("g1", "g1", "w", "gram", "outer"))
        if kind in ("g1", "w"):
            if kind == "w" and not self.has_params:
                kind = "g1"
            a = self.pick(lambda v: v.dtype.startswith("float") and len(v.shape) in (1, 2)
                          and v.shape[-1] == 4)
            if a is None:
                return False
            other = next(v for v in self.vars if v.name == kind)
            self.add_var(f"{a.name} @ {kind}", a.shape[:-1] + (3,), promote(a.dtype, "float32"),
                         {"matmul"}, a, other)
            return True
        a = self.pick(lambda v: v.dtype.startswith("float") and len(v.shape) == 2)
        if a is None:
            return False
        if kind == "gram":
            self.add_var(f"{a.name}.T @ {a.name}", (a.shape[1], a.shape[1]), a.dtype,
                         {"matmul", "views"}, a)
        else:
            self.add_var(f"{a.name} @ {a.name}.T", (a.shape[0], a.shape[0]), a.dtype,
                         {"matmul", "views"}, a)
        return True

    def st_array_api(self) -> bool:
        """An Array API function along one axis (issue 36): cumulative_sum (a NumPy plan
        step under jit), flip, roll (slices and concat) or diff (on an axis of size >= 2)."""
        if not self.on("array_api"):
            return False
        a = self.pick(lambda v: self.numeric(v) and len(v.shape) >= 1)
        if a is None:
            return False
        axis = self.rng.randrange(len(a.shape))
        op = self.rng.choice(("cumulative_sum", "flip", "roll", "diff"))
        shape = a.shape
        if op == "diff":
            if not isinstance(shape[axis], int) or shape[axis] < 2:
                return False
            shape = shape[:axis] + (shape[axis] - 1,) + shape[axis + 1:]
        extra = ", 1" if op == "roll" else ""
        self.add_var(f"em.{op}({a.name}{extra}, axis={axis})", shape, a.dtype,
                     {"array_api"}, a)
        return True

    def st_where(self) -> bool:
        if not self.on("where"):
            return False
        pair = self.broadcast_pair()
        if pair is None:
            return False
        a, b, shape = pair
        if self.chance(0.3):
            self.add_var(f"{a.name} > {b.name}", shape, "bool", {"where"}, a, b, rg=False)
            return True
        cond = self.pick(lambda v: v.dtype == "bool" and broadcast(shape, v.shape) == shape)
        cond_text = cond.name if cond is not None else f"{a.name} > 0.0"
        ins = (a, b) + ((cond,) if cond is not None else ())
        self.add_var(f"em.where({cond_text}, {a.name}, {b.name})", shape,
                     promote(a.dtype, b.dtype), {"where"}, *ins)
        return True

    def st_cast(self) -> bool:
        if not self.on("casts"):
            return False
        a = self.pick(lambda v: v.dtype in NUMERIC + ("bool",))
        if a is None:
            return False
        dtype = self.rng.choice(NUMERIC)
        if dtype == a.dtype:  # astype to its own dtype returns the tensor itself
            self.add_var(f"{a.name}.astype({DTYPE_NAMES[dtype]})", a.shape, dtype,
                         {"casts", "views"}, a, view_of=a).expr = a.expr
            return True
        self.add_var(f"{a.name}.astype({DTYPE_NAMES[dtype]})", a.shape, dtype, {"casts"}, a)
        return True

    def st_identity(self) -> bool:
        if not self.on("identity_ops"):
            return False
        a = self.pick(self.numeric)
        if a is None:
            return False
        form = self.rng.choice(("{a} + 0", "{a} * 1", "-(-{a})", "{a} - 0"))
        self.add_var(form.format(a=a.name), a.shape, a.dtype, {"identity_ops"}, a)
        return True

    def st_clone(self) -> bool:
        # simplify drops a copy of the same type (class 2): the clone is the input
        a = self.pick()
        if a is None or not self.on("identity_ops"):
            return False
        self.add_var(f"{a.name}.clone()", a.shape, a.dtype, {"identity_ops"}, a)
        return True

    def st_stack(self) -> bool:
        if not self.on("elementwise"):
            return False
        a = self.pick(self.numeric)
        if a is None:
            return False
        b = self.pick(lambda v: v.shape == a.shape and self.numeric(v))
        if b is None:
            return False
        self.add_var(f"em.stack([{a.name}, {b.name}])", (2,) + a.shape,
                     promote(a.dtype, b.dtype), {"elementwise"}, a, b)
        return True

    def st_index_tensor(self) -> bool:
        if not self.on("index_tensors"):
            return False
        a = self.pick(lambda v: len(v.shape) >= 1 and v.dtype != "bool")
        if a is None:
            return False
        d = a.shape[0]
        tags = {"index_tensors"}
        if d == B or self.chance(0.1):
            if not self.on("bad_indices"):
                return False
            tags.add("bad_indices")
            idx = self.rng.choice(("[0]", "[4, 0]", "[-1]", "[7]"))
        else:
            idx = "[" + ", ".join(str(self.rng.randrange(d)) for _ in range(2)) + "]"
        n = idx.count(",") + 1
        self.add_var(f"{a.name}[em.tensor({idx})]", (n,) + a.shape[1:], a.dtype, tags, a)
        return True

    def st_view(self) -> bool:
        if not self.on("views"):
            return False
        a = self.pick(lambda v: v.kind != "param" and v.kind != "grad")
        if a is None:
            return False
        nd = len(a.shape)
        options = ["detach"]
        if nd == 2:
            options += ["T", "transpose", "cols", "reshape3"]
        if nd >= 1 and isinstance(a.shape[0], int) and a.shape[0] >= 2:
            options += ["slice0", "row0"]
        if nd >= 1 and a.shape[0] == B and (self.on("bad_indices") or not self.b_can_be_zero):
            options += ["row0"]
        if nd == 1 and a.shape[0] == 4:
            options += ["reshape22", "unsqueeze"]
        if nd == 2 and all(isinstance(d, int) for d in a.shape):
            options += ["flatten"]
        kind = self.rng.choice(options)
        tags = {"views"}
        if kind == "detach":
            text, shape = f"{a.name}.detach()", a.shape
        elif kind == "T":
            text, shape = f"{a.name}.T", a.shape[::-1]
        elif kind == "transpose":
            text, shape = f"{a.name}.transpose()", a.shape[::-1]
        elif kind == "cols":
            if not isinstance(a.shape[1], int) or a.shape[1] < 2:
                return False
            text, shape = f"{a.name}[:, 1:]", (a.shape[0], a.shape[1] - 1)
        elif kind == "row0":
            text, shape = f"{a.name}[0]", a.shape[1:]
            if a.shape[0] == B and self.b_can_be_zero:
                tags.add("bad_indices")
        elif kind == "slice0":
            text, shape = f"{a.name}[1:]", (a.shape[0] - 1,) + a.shape[1:]
        elif kind == "reshape3":
            if a.shape[1] != 4:
                return False
            text, shape = f"{a.name}.reshape({a.shape[0] if a.shape[0] != B else -1}, 2, 2)", \
                (a.shape[0], 2, 2)
        elif kind == "reshape22":
            text, shape = f"{a.name}.reshape(2, 2)", (2, 2)
        elif kind == "unsqueeze":
            text, shape = f"{a.name}.unsqueeze(0)", (1,) + a.shape
        else:  # flatten
            text, shape = f"{a.name}.reshape(-1)", (a.shape[0] * a.shape[1],)
        rg = a.rg and kind != "detach"
        self.add_var(text, shape, a.dtype, tags, a, view_of=a, rg=rg)
        return True

    # --- in-place statements ---------------------------------------------------------------
    def root_kind(self, v: Var) -> str:
        root = next((u for u in self.vars if u.name == v.root), None)
        return root.kind if root is not None else v.kind

    def write_tags(self, t: Var) -> set | None:
        """The features a write into ``t`` needs, or None when it may not be written."""
        if t.dtype == "bool" or t.leaf_rg:
            return None
        root = next((v for v in self.vars if v.name == t.root), None)
        root_kind = root.kind if root is not None else t.kind
        if root is not None and root.leaf_rg:
            return None  # a view of a parameter: only param_updates write those
        need = {"global": "inplace_globals", "attr": "inplace_globals", "arg": "inplace_args",
                "inter": "inplace_intermediates", "grad": "grad_edits"}.get(root_kind)
        if need is None or not self.on(need):
            return None
        out = {need}
        if t.view:
            if not self.on("view_writes"):
                return None
            out.add("view_writes")
        return out | self.read_tags(t)

    def bump(self, t: Var, value_rg: bool = False) -> None:
        self.versions[t.root] = self.versions.get(t.root, 0) + 1
        for v in self.vars:
            if v is t or v.name == t.root:
                v.expr = f"{v.name}#w{self.versions[t.root]}"
        if t.view:
            # the view sees its own write; other views of the root are now stale
            t.born = self.versions[t.root]
        else:
            for v in self.vars:
                if v.name == t.name:
                    v.born = self.versions[t.root]
        if value_rg:
            t.rg = True

    def st_inplace(self) -> bool:
        t = self.pick(lambda v: self.write_tags(v) is not None, prefer_inter=0.3)
        if t is None:
            return False
        tags = self.write_tags(t)
        form = self.rng.choice(("aug", "aug", "index", "col", "mask", "zero", "assign",
                                "ellipsis"))
        value_rg = False
        if form in ("aug", "assign", "ellipsis"):
            if self.chance(0.5) and form == "aug":
                v_text = self.values.scalar(t.dtype)
                v_float = "." in v_text or v_text in ("nan", "inf")
                tags |= scalar_tags(v_text)
            else:
                v = self.pick(lambda u: self.numeric(u) and u.name != t.name
                              and broadcast(t.shape, u.shape) == t.shape)
                if v is None:
                    return False
                v_text, v_float = v.name, v.dtype.startswith("float")
                tags |= self.read_tags(v)
                value_rg = v.rg
                if value_rg:
                    # the target takes the value's history and requires grad (class 6)
                    if not self.on("write_requires_grad"):
                        return False
                    tags.add("write_requires_grad")
            if t.dtype == "int64" and v_float:
                if not self.on("casts"):
                    return False
                tags.add("casts")
            elif t.dtype in more_dtypes.SMALL_INTS and v_float:
                return False  # a float out of a small integer's range converts undefined
            if form == "aug":
                op = self.rng.choice(("+=", "-=", "*="))
                text = f"{t.name} {op} {v_text}"
            elif form == "assign":
                text = f"em.assign({t.name}, {v_text})"
            else:
                text = f"{t.name}[...] = {v_text}"
        elif form in ("index", "col", "mask"):
            c = self.values.scalar(t.dtype)
            if t.dtype == "int64" and ("." in c or c in ("nan", "inf")):
                return False
            if form == "index":
                if not t.shape:
                    return False
                d = t.shape[0]
                if d == B:
                    if self.b_can_be_zero and not self.on("bad_indices"):
                        return False
                    if self.b_can_be_zero:
                        tags.add("bad_indices")
                    i = 0
                else:
                    if d == 0:
                        return False
                    i = self.rng.randrange(d)
                text = f"{t.name}[{i}] = {c}"
            elif form == "col":
                if len(t.shape) != 2 or not isinstance(t.shape[1], int) or t.shape[1] < 1:
                    return False
                text = f"{t.name}[:, {self.rng.randrange(t.shape[1])}] = {c}"
            else:
                if not self.on("masks"):
                    return False
                tags.add("masks")
                text = f"{t.name}[{t.name} > 0] = {c}"
            tags |= scalar_tags(c)
        elif form == "zero":
            text = f"{t.name}.zero_()"
        else:
            return False
        self.emit(text, tags)
        self.bump(t, value_rg)
        return True

    # --- autograd, optimizers ----------------------------------------------------------------
    def st_backward(self) -> bool:
        if not self.has_params:
            return False
        a = self.pick(lambda v: v.dtype == "float32" and len(v.shape) in (1, 2)
                      and v.shape[-1] == 4 and v.kind != "grad")
        if a is None:
            return False
        form = self.rng.choice(("({a} @ w + b).sum()", "em.tanh({a} @ w + b).sum()",
                                "(({a} @ w) * b).sum()", "({a} @ w).mean()"))
        if self.values.near_limits:  # no matmul near the float limits (see st_matmul)
            form = "({a} * w[:, 0]).sum() + (b * b).sum()"
        loss = self.add_var(form.format(a=a.name), (), "float32", {"backward"}, a,
                            rg=True)
        # retain_graph: a later backward may pass through the same history (the values
        # a backward without it frees are PyTorch's; tests/torch_front twins that path).
        self.emit(f"{loss.name}.backward(retain_graph=True)", {"backward"})
        self.live_grads |= {"w", "b"}
        return True

    def st_grad_edit(self) -> bool:
        if not (self.on("grad_edits") and self.live_grads):
            return False
        owner = self.rng.choice(sorted(self.live_grads))
        form = self.rng.choice(("none", "rebind"))
        if form == "none":
            self.emit(f"{owner}.grad = None", {"grad_edits", "backward"})
            self.live_grads.discard(owner)
        else:
            self.emit(f"{owner}.grad = {owner}.grad * 0.5", {"grad_edits", "backward"})
        return True

    def st_optimizer(self) -> bool:
        if not self.has_opt:
            return False
        if self.live_grads and self.chance(0.7):
            self.emit("opt.step()", {"optimizers", "backward"})
            self.versions["w"] = self.versions.get("w", 0) + 1
            self.versions["b"] = self.versions.get("b", 0) + 1
        else:
            self.emit("opt.zero_grad()", {"optimizers", "backward"})
            self.live_grads.clear()
        return True

    def st_param_update(self) -> bool:
        if not (self.on("param_updates") and self.live_grads):
            return False
        owner = self.rng.choice(sorted(self.live_grads))
        tags = {"param_updates", "backward"}
        if self.on("object_scalars") and self.chance(0.5):
            lr = "obj.lr"
            tags.add("object_scalars")
        else:
            lr = "0.5"
        self.emit(f"with em.no_grad(): {owner} -= {lr} * {owner}.grad", tags)
        self.versions[owner] = self.versions.get(owner, 0) + 1
        return True

    # --- the function, its return, the calls -----------------------------------------------
    STATEMENTS = (
        ("st_unary", 4), ("st_binary", 5), ("st_scalar", 3), ("st_object_scalar", 2),
        ("st_reduce", 3), ("st_matmul", 2), ("st_where", 2), ("st_cast", 1.5),
        ("st_identity", 1.5), ("st_clone", 0.5), ("st_stack", 0.5), ("st_index_tensor", 1),
        ("st_view", 3), ("st_inplace", 5), ("st_backward", 2), ("st_grad_edit", 1),
        ("st_optimizer", 1), ("st_param_update", 1), ("st_array_api", 1),
        ("st_more_dtypes", 1.5), ("st_more_functions", 1),
    )

    def st_more_dtypes(self) -> bool:
        return more_dtypes.st_more_dtypes(self)

    def st_more_functions(self) -> bool:
        return more_dtypes.st_more_functions(self)

    def make_body(self) -> None:
        names, weights = zip(*self.STATEMENTS)
        target = self.rng.randint(1, 9)
        tries = 0
        while len(self.body) < target and tries < 60:
            tries += 1
            getattr(self, self.rng.choices(names, weights)[0])()

    def make_returns(self) -> tuple[list, bool]:
        """1-3 returned variables (Stmt: the name, tagged with what returning it tests)."""
        out = []
        n = self.rng.randint(1, 3)
        for _ in range(n):
            def ok(v):
                if v.rg and not v.leaf_rg and not self.on("return_requires_grad"):
                    return False  # a computed value that requires grad (a leaf is itself)
                if v.view and self.root_kind(v) != "inter" and not self.on("return_views"):
                    return False
                if v.kind == "arg":
                    return self.on("return_args")
                if v.kind in ("global", "attr"):
                    return self.on("return_captures")
                if v.kind == "param":
                    return self.on("return_params")
                if v.kind == "grad":
                    return self.on("return_grads")
                return True
            v = self.pick(ok, prefer_inter=0.7)
            if v is None or v.name in out:
                continue
            if any(u.expr == v.expr for u in self.vars if u.name in out) and \
                    not self.on("return_duplicates"):
                continue  # CSE merges them into one node: two outputs of one node (class 1)
            out.append(v.name)
        if out and self.on("return_duplicates") and self.chance(0.2):
            out.append(self.rng.choice(out))
        stmts, seen = [], set()
        by_name = {v.name: v for v in self.vars}
        for n in out:
            tags = self.return_tags(n)
            if by_name[n].expr in seen:
                tags.add("return_duplicates")
            seen.add(by_name[n].expr)
            stmts.append(Stmt(n, frozenset(tags)))
        single = len(stmts) == 1 and self.chance(0.5)
        return stmts, single

    def return_tags(self, name: str) -> set:
        v = next(v for v in self.vars if v.name == name)
        tags = {"return_requires_grad"} if v.rg and not v.leaf_rg else set()
        if v.view and self.root_kind(v) != "inter":
            tags.add("return_views")
        return tags | self.read_tags(v) | {"arg": {"return_args"}, "global": {"return_captures"},
                                    "attr": {"return_captures"}, "param": {"return_params"},
                                    "grad": {"return_grads"}}.get(v.kind, set())

    def make_calls(self) -> list:
        n_calls = self.rng.randint(2, 4)
        calls = []
        globals_by_spec = {((4,), "float32"): ["g0", "obj.buf"], ((4,), "int64"): ["gi"]}
        for k in range(n_calls):
            before = []
            if k > 0:
                before += self.between_calls()
                before += self.outer_backward(k)
            batch = self.rng.choice((0, 1, 5)) if self.on("batch_sizes") else 3
            args = []
            made = {}
            for name, shape, dtype, rg in self.param_specs:
                key = (shape, dtype)
                if self.on("alias_args") and not rg and self.chance(0.25):
                    if key in made and self.chance(0.5):
                        args.append(made[key])
                        before.append(Stmt(f"# {name}: the same tensor again",
                                           frozenset({"alias_args"})))
                        continue
                    if key in globals_by_spec:
                        g = self.rng.choice(globals_by_spec[key])
                        args.append(g)
                        before.append(Stmt(f"# {name}: the captured {g} itself",
                                           frozenset({"alias_args"})))
                        continue
                concrete = tuple(batch if d == B else d for d in shape)
                text, tags = self.values.literal(concrete, dtype, requires_grad=rg)
                arg_name = f"{name}{k + 1}"
                if rg:
                    tags.add("arg_requires_grad")
                if B in shape and batch != 3:
                    tags.add("batch_sizes")
                before.append(Stmt(f"{arg_name} = {text}", frozenset(tags)))
                args.append(arg_name)
                made[key] = arg_name
            calls.append(Call(before, args))
        return calls

    def between_calls(self) -> list:
        out = []
        if self.on("mutate_between_calls") and self.chance(0.4):
            g = self.rng.choice(("g0", "obj.buf", "g1", "gi"))
            form = self.rng.choice(("aug", "index", "zero"))
            if form == "aug":
                c = self.values.scalar("int64" if g == "gi" else "float32")
                text = f"{g} += {c}"
            elif form == "index":
                text = f"{g}[1] = {self.values.scalar('int64' if g == 'gi' else 'float32')}"
            else:
                text = f"{g}.zero_()"
            out.append(Stmt(text, frozenset({"mutate_between_calls"})))
        if self.on("global_rebind") and self.chance(0.4):
            g, shape, dtype = self.rng.choice((("g0", (4,), "float32"),
                                               ("obj.buf", (4,), "float32"),
                                               ("g1", (4, 3), "float32"),
                                               ("gi", (4,), "int64")))
            text, tags = self.values.literal(shape, dtype)
            out.append(Stmt(f"{g} = {text}", frozenset(tags | {"global_rebind"})))
        if self.on("object_scalars") and self.chance(0.5):
            choices = [f"obj.lr = {self.rng.choice((0.25, 0.125, 2.0, 1.5))}",
                       "obj.step += 1", "obj.flag = not obj.flag"]
            if self.has_opt:
                choices.append(f"opt.lr = {self.rng.choice((0.125, 0.0625, 1.0))}")
            out.append(Stmt(self.rng.choice(choices), frozenset({"object_scalars"})))
        if self.has_params and self.chance(0.3):
            text = "opt.zero_grad()" if self.has_opt and self.chance(0.5) else "w.grad = None"
            out.append(Stmt(text, frozenset({"backward"})))
        return out

    def outer_backward(self, k: int) -> list:
        """backward() through the results of call ``k`` (outK), outside f: under jit it
        runs the call's compiled backward graph; maybe an optimizer step after it."""
        if not (self.on("outer_backward") and self.differentiable) or \
                self.outer.random() < 0.5:
            return []
        picked = self.outer.sample(self.differentiable,
                                   min(len(self.differentiable), self.outer.randint(1, 2)))
        items = [f"out{k}" if self.single else f"out{k}[{j}]" for j in picked]
        if len(items) == 2:
            text = f"({items[0]}.sum() + {items[1]}.sum()).backward()"
        else:
            text = f"({items[0]} * {items[0]}).sum().backward()"
        out = [Stmt(text, frozenset({"outer_backward", "backward"}))]
        if self.has_opt and self.outer.random() < 0.5:
            out.append(Stmt("opt.step()", frozenset({"outer_backward", "optimizers"})))
        return out

    def make(self) -> Program:
        setup = self.make_setup()
        params = self.make_params()
        self.make_body()
        returns, single = self.make_returns()
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
        if self.on("listener") and self.chance(0.3):
            prog.listener = self.rng.choice(("events", "all"))
        if self.on("threads") and self.chance(0.1):
            prog.threads = True
        return prog


def generate(seed, features: dict | None = None) -> Program:
    """The program for ``seed`` (the same seed and features give the same text)."""
    return Generator(seed, features).make()

