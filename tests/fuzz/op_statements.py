"""The generator's value-producing statements: elementwise ops, scalars, reductions,
matmuls, the Array API's functions, where, casts, identities, clones, stacks and gathers
(each ``st_*`` adds a variable, or returns False when the program has nothing it takes)."""

from __future__ import annotations

from . import more_dtypes
from .program_model import (
    EXACT_UNARY,
    FLOAT_EXACT_UNARY,
    INEXACT_UNARY,
    NUMERIC,
    B,
    broadcast,
    promote,
    scalar_promote,
    scalar_tags,
)
from .values import DTYPE_NAMES


class OpStatements:
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
        # Values near the float limits included: a generated matmul whose partial sums
        # could overflow computes eager's product (codegen/matmul_overflow.py).
        if not self.on("matmul"):
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

    def st_split(self) -> bool:
        """Pieces of one value from ``em.split`` combined (q * k - v): under backward, their
        gradients' index_adds into disjoint slices are summed (passes/slice_sums.py)."""
        if not self.on("views"):
            return False

        def axes(v):
            return [i for i, n in enumerate(v.shape)
                    if isinstance(n, int) and n >= 2 and (n % 2 == 0 or n % 3 == 0)]

        a = self.pick(lambda v: self.numeric(v) and axes(v))
        if a is None:
            return False
        axis = self.rng.choice(axes(a))
        n = a.shape[axis]
        k = 3 if n % 3 == 0 else 2
        size = n // k

        def piece(i):
            return f"em.split({a.name}, {size}, dim={axis})[{i}]"

        text = f"{piece(0)} * {piece(k - 1)}" + (f" - {piece(1)}" if k == 3 else "")
        self.add_var(text, a.shape[:axis] + (size,) + a.shape[axis + 1:], a.dtype, {"views"}, a)
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

    def st_more_dtypes(self) -> bool:
        return more_dtypes.st_more_dtypes(self)

    def st_more_functions(self) -> bool:
        return more_dtypes.st_more_functions(self)
