"""Random programs for differential testing: the same program eager and under em.jit.

A program is a list of instructions over a list of values (starting with the inputs); each
instruction appends one value. ``run(program, inputs)`` interprets it with execmode ops, so
the same Python runs eagerly or traced. Drawn with hypothesis, programs cover elementwise
chains with broadcasting, scalars, reductions, matmuls, reshapes/transposes, indexing and
(optionally) backward.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import execmode as em

UNARY = ["tanh", "sin", "cos", "abs", "negative", "square", "exp_safe", "log_safe",
         "sqrt_safe", "sigmoid", "relu", "floor"]
BINARY = ["add", "subtract", "multiply", "divide_safe", "maximum", "minimum", "where_pos"]
REDUCE = ["sum", "mean", "max", "min"]


def _apply(instr, values):
    kind = instr[0]
    if kind == "unary":
        _, name, a = instr
        x = values[a]
        if name == "exp_safe":
            return em.exp(em.clip(x, -20.0, 20.0))
        if name == "log_safe":
            return em.log(em.abs(x) + 1.0)
        if name == "sqrt_safe":
            return em.sqrt(em.abs(x))
        if name in ("sin", "cos"):
            # The argument clipped to +-100. The sine of a huge value is noise that one ulp
            # decides: exp(20) = 4.85e8, where a float32 ulp is 32 (test_differential.
            # test_rounding_amplified_by_the_program_is_not_a_mismatch).
            return getattr(em, name)(em.clip(x, -100.0, 100.0))
        return getattr(em, name)(x)
    if kind == "binary":
        _, name, a, b = instr
        x, y = values[a], values[b]
        if name == "divide_safe":
            return x / (em.abs(y) + 1.0)
        if name == "where_pos":
            return em.where(x > 0, x, y)
        return getattr(em, name)(x, y)
    if kind == "scalar":
        _, name, a, c = instr
        x = values[a]
        return {"add": x + c, "mul": x * c, "rsub": c - x, "div": x / c}[name]
    if kind == "reduce":
        _, name, a, axis, keepdims = instr
        return getattr(em, name)(values[a], axis=axis, keepdims=keepdims)
    if kind == "matmul":
        _, a = instr
        x = values[a]
        return x @ x.mT if x.ndim >= 2 else x @ x
    if kind == "transpose":
        return values[instr[1]].mT
    if kind == "flatten":
        return values[instr[1]].reshape(-1)
    if kind == "slice":
        x = values[instr[1]]
        return x[1:] if x.shape[0] > 1 else x[:1]
    raise ValueError(instr)


def run(program, inputs, backward=False):
    """Interpret a program; returns its last value (and the inputs' grads)."""
    values = list(inputs)
    for instr in program:
        values.append(_apply(instr, values))
    out = values[-1]
    if backward:
        (out * out).sum().backward()
        return out, tuple(x.grad for x in inputs)
    return out


@st.composite
def programs(draw, max_len=8, allow_matmul=True, dtypes=("float32", "float64")):
    """(program, input arrays) with shapes that broadcast."""
    dtype = draw(st.sampled_from(dtypes))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    n_inputs = draw(st.integers(1, 3))
    shapes = []
    for _ in range(n_inputs):
        # Each input drops some leading dims and sets some dims to 1: it broadcasts to shape.
        drop = draw(st.integers(0, rank - 1))
        s = tuple(1 if draw(st.booleans()) and draw(st.booleans()) else d for d in shape[drop:])
        shapes.append(s)
    shapes[0] = shape
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    value_shapes = list(shapes)
    program = []
    for _ in range(draw(st.integers(1, max_len))):
        choices = ["unary", "binary", "scalar", "reduce", "transpose", "flatten", "slice"]
        if allow_matmul:
            choices.append("matmul")
        kind = draw(st.sampled_from(choices))
        a = draw(st.integers(0, len(value_shapes) - 1))
        sa = value_shapes[a]
        if kind == "unary":
            instr, out = ("unary", draw(st.sampled_from(UNARY)), a), sa
        elif kind == "binary":
            # Pick a partner that broadcasts with a.
            partners = [i for i, s in enumerate(value_shapes) if _broadcastable(sa, s)]
            b = draw(st.sampled_from(partners))
            instr = ("binary", draw(st.sampled_from(BINARY)), a, b)
            out = np.broadcast_shapes(sa, value_shapes[b])
        elif kind == "scalar":
            c = draw(st.sampled_from([0.5, 2.0, -1.5, 3]))
            instr, out = ("scalar", draw(st.sampled_from(["add", "mul", "rsub", "div"])), a, c), sa
        elif kind == "reduce":
            if not sa:
                continue
            axis = draw(st.one_of(st.none(), st.integers(-len(sa), len(sa) - 1)))
            keepdims = draw(st.booleans())
            name = draw(st.sampled_from(REDUCE))
            instr = ("reduce", name, a, axis, keepdims)
            out = np.sum(np.zeros(sa), axis=axis, keepdims=keepdims).shape
        elif kind == "matmul":
            if not sa:
                continue
            instr = ("matmul", a)
            out = (sa[:-1] + sa[-2:-1]) if len(sa) >= 2 else ()
        elif kind == "transpose":
            if len(sa) < 2:
                continue
            instr, out = ("transpose", a), sa[:-2] + (sa[-1], sa[-2])
        elif kind == "flatten":
            instr, out = ("flatten", a), (int(np.prod(sa)),)
        else:
            if not sa:
                continue
            instr = ("slice", a)
            out = ((sa[0] - 1) if sa[0] > 1 else 1,) + sa[1:]
        program.append(instr)
        value_shapes.append(tuple(out))
    if not program:
        program.append(("unary", "tanh", 0))
    return program, arrays


def _broadcastable(a, b) -> bool:
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def tolerance(dtype) -> dict:
    return {"rtol": 2e-4, "atol": 2e-5} if np.dtype(dtype) == np.float32 else \
        {"rtol": 1e-9, "atol": 1e-11}
