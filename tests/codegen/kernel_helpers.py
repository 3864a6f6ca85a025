"""Helpers for kernel tests: fused nodes built by hand from traced graphs (as the fusion
pass would build them), kernels compiled in batches (one compiler call for many cases, to
keep the suite fast), and the random elementwise programs the property tests draw.

``fuse_all(graph)`` puts every op node of a traced graph into one fused node whose kind
follows from its members: a leading matmul makes a matmul_epilogue, a trailing reduction a
reduction, anything else elementwise.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from helpers import arrays, broadcastable_shapes, dtypes
from hypothesis import strategies as st

import execmode as em
from execmode.codegen.c_runtime import build_library, make_kernel, needs_compiling
from execmode.codegen.interpreter import InterpretedKernel
from execmode.codegen.lower import lower_fused
from execmode.codegen.toolchain import NoCompiler, get_toolchain
from execmode.graph.ir import FUSED, INPUT, Graph, Literal, Node, make_attrs

REDUCTIONS = ("sum", "prod", "max", "min")


# --- fused nodes by hand ------------------------------------------------------------------------

def trace(fn, *example_arrays):
    """The traced graph of ``fn`` on tensors made from ``example_arrays``."""
    tensors = [em.tensor(a, dtype=a.dtype) for a in example_arrays]
    return em.jit(fn).trace(*tensors).graph


def fuse_all(graph: Graph, label: str = "k0") -> tuple:
    members = [n for n in graph.nodes if n.op != INPUT]
    assert members, "nothing to fuse"
    ids = {m.id for m in members}
    external: list = []
    for m in members:
        for i in m.inputs:
            if isinstance(i, int) and i not in ids and i not in external:
                external.append(i)
    if members[0].op == "matmul":
        kind = "matmul_epilogue"
    elif members[-1].op in REDUCTIONS:
        kind = "reduction"
    else:
        kind = "elementwise"
    last = members[-1]
    fused = Node(graph.max_id() + 1, FUSED, tuple(external), make_attrs({"kind": kind}),
                 last.shape, last.dtype, last.device, body=tuple(members), label=label)
    inputs = [n for n in graph.nodes if n.op == INPUT]
    fused_graph = Graph(graph.name, inputs + [fused], list(graph.inputs), [fused.id])
    return fused_graph, fused


def fused_case(fn, *example_arrays, label="k0"):
    """(graph, fused node) for ``fn`` traced on ``example_arrays`` and fused whole."""
    graph = trace(fn, *example_arrays)
    if not any(n.op != INPUT for n in graph.nodes):  # fn returned an input as it was
        graph = trace(lambda *xs: em.copy(fn(*xs)), *example_arrays)
    return fuse_all(graph, label)


def call_args(fused: Node, graph: Graph, values) -> list:
    """The arguments a plan passes to the kernel: input arrays by id, literal values."""
    by_id = dict(zip(graph.inputs, values))
    return [i.value if isinstance(i, Literal) else by_id[i] for i in fused.inputs]


def compile_cases(cases, backend="c") -> list:
    """Kernel objects for ``cases`` [(graph, fused)], all C kernels in one library."""
    kernels = [lower_fused(f, g.node_map(), graph_id="test") for g, f in cases]
    if backend == "interpreter":
        return [InterpretedKernel(k) for k in kernels]
    to_compile = [k for k in kernels if needs_compiling(k)]
    library = build_library(to_compile, get_toolchain()) if to_compile else None
    return [make_kernel(k, library) for k in kernels]


def run_cases(fns_and_arrays, backend="c") -> list:
    """Compile ``[(fn, arrays)]`` together and return each kernel's output."""
    cases = [fused_case(fn, *arrs, label=f"k{i}") for i, (fn, arrs) in enumerate(fns_and_arrays)]
    kernels = compile_cases(cases, backend)
    outs = []
    for kernel, (g, f), (_, arrs) in zip(kernels, cases, fns_and_arrays):
        outs.append(np.array(kernel(*call_args(f, g, list(arrs)))))
    return outs


def eager(fn, *arrs):
    """The eager result of ``fn`` on tensors made from ``arrs`` (the reference)."""
    with np.errstate(all="ignore"):
        return fn(*[em.tensor(a, dtype=a.dtype) for a in arrs]).numpy()


def nvcc_path():
    found = shutil.which("nvcc")
    if found:
        return found
    return "/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None


def openmp_toolchain_or_skip():
    """The C toolchain, or a skip saying why threaded kernels cannot be tested here."""
    try:
        tc = get_toolchain()
    except NoCompiler as exc:
        pytest.skip(f"no C compiler: {exc}")
    if not tc.openmp:
        pytest.skip("the compiler has no OpenMP: kernels are single-threaded")
    return tc


def blas_thread_control_or_skip():
    """NumPy's BLAS thread control, or a skip saying why there is none."""
    from execmode.codegen import blas

    control = blas.thread_control()
    if control is None:
        pytest.skip(f"NumPy's BLAS has no thread control here: {blas.thread_control_reason()}")
    return control


# --- random elementwise programs ---------------------------------------------------------------

UNARY = ["negative", "abs", "sign", "square", "floor", "ceil", "round", "isnan", "isinf",
         "isfinite", "logical_not", "copy", "exp", "log", "tanh", "erf", "expm1", "log1p",
         "sqrt", "sin", "cos", "reciprocal"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
          "floor_divide", "remainder", "equal", "not_equal", "less", "greater_equal",
          "logical_and", "logical_or"]
LITERALS = [0, 1, 2, -3, 0.5, -1.5, 2.0, True, float("inf"), float("nan")]


def _apply(step, values):
    kind, op, args = step
    fn = getattr(em, op) if kind != "cast" else None
    if kind == "cast":
        return em.astype(values[args[0]], args[1])
    operands = [values[a] if isinstance(a, int) else a[0] for a in args]
    return fn(*operands)


class Program:
    """Runs ``steps`` on its input tensors and returns the last value; prints its steps
    (so that a failing example reads as the ops it ran)."""

    def __init__(self, steps, n_inputs):
        self.steps, self.n_inputs = steps, n_inputs

    def __call__(self, *inputs):
        values = list(inputs)
        for step in self.steps:
            values.append(_apply(step, values))
        return values[-1]

    def __repr__(self) -> str:
        names = [f"x{i}" for i in range(self.n_inputs)]
        lines = []
        for k, (_, op, args) in enumerate(self.steps):
            shown = [names[a] if isinstance(a, int) else (repr(a[0]) if isinstance(a, tuple)
                                                         else str(a)) for a in args]
            names.append(f"v{k}")
            lines.append(f"v{k} = {op}({', '.join(shown)})")
        return "<" + "; ".join(lines) + ">"


@st.composite
def elementwise_programs(draw, max_len=6):
    """(program, arrays): a chain of random elementwise ops; each step reads the previous
    value, so every op feeds the output and the output has the largest shape."""
    n_inputs = draw(st.integers(1, 3))
    shapes = draw(broadcastable_shapes(num_shapes=n_inputs, max_dims=3, max_side=4))
    kinds = [draw(dtypes()) for _ in range(n_inputs)]
    inputs = [draw(arrays(dt, shape, specials=True)) for dt, shape in zip(kinds, shapes)]
    values = [em.tensor(a, dtype=a.dtype) for a in inputs]
    steps: list = []
    for _ in range(draw(st.integers(2, max_len))):
        prev = len(values) - 1
        choice = draw(st.sampled_from(["unary", "binary", "binary", "literal", "where",
                                       "cast"]))
        if choice == "unary":
            step = ("op", draw(st.sampled_from(UNARY)), (prev,))
        elif choice == "binary":
            # Half the time an input (brings in broadcasting), else any earlier value.
            other = draw(st.integers(0, n_inputs - 1) if draw(st.booleans())
                         else st.integers(0, prev))
            pair = (prev, other) if draw(st.booleans()) else (other, prev)
            step = ("op", draw(st.sampled_from(BINARY)), pair)
        elif choice == "literal":
            lit = (draw(st.sampled_from(LITERALS)),)
            pair = (prev, lit) if draw(st.booleans()) else (lit, prev)
            step = ("op", draw(st.sampled_from(BINARY)), pair)
        elif choice == "where":
            bools = [i for i, v in enumerate(values) if v.dtype == em.bool]
            if not bools:
                continue
            cond = draw(st.sampled_from(bools))
            step = ("op", "where", (cond, prev, draw(st.integers(0, prev))))
        else:
            step = ("cast", "cast", (prev, draw(dtypes())))
        try:
            with np.errstate(all="ignore"):
                values.append(_apply(step, values))
        except Exception:  # an op these dtypes do not support: draw another
            continue
        steps.append(step)
    if not steps:
        steps.append(("op", "copy", (len(values) - 1,)))
    return Program(steps, n_inputs), inputs
