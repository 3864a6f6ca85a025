"""The generator's model of a program's values (generator.py): a variable's shape, dtype,
view and grad facts (:class:`Var`), broadcasting and promotion as the engine does them,
and the op families the statements draw from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
