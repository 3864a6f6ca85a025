"""A whole graph as one C function (codegen.program) and identical kernels compiled once."""

from __future__ import annotations

import numpy as np
from helpers import assert_close

import execmode as em
from execmode.codegen.lower import lower_fused
from execmode.codegen.program import compile_program
from execmode.codegen.render_c import CRenderer


def _power(x, y):
    result = em.eye(6, dtype=em.float32)
    for _ in range(y):
        result = em.matmul(x, result)
    return result


def test_matmul_chain_runs_as_one_program():
    x = np.random.default_rng(0).uniform(0, 0.3, (6, 6)).astype(np.float32)
    graph = em.jit(_power).lower(em.tensor(x), 12).graph
    program = compile_program(graph, "power")
    assert program is not None
    (first,) = program.run([x])
    (second,) = program.run([x * 2])
    assert_close(first, _power(em.tensor(x), 12).numpy(), rtol=1e-5)
    assert_close(second, _power(em.tensor(x * 2), 12).numpy(), rtol=1e-5)
    assert program.source.count("mm") > 12


def test_program_with_fused_kernels_and_transposed_views():
    rng = np.random.default_rng(1)
    w = em.tensor(rng.standard_normal((8, 8)).astype(np.float32))

    def f(x):
        return em.tanh(x @ w.mT + 1.0) * 0.5

    x = rng.standard_normal((3, 8)).astype(np.float32)
    graph = em.jit(f).lower(em.tensor(x)).graph
    program = compile_program(graph, "mixed")
    assert program is not None
    # Graph inputs: the captured weight, then the argument.
    by_label = {"w": w.numpy(), "x": x}
    inputs = [by_label[graph.node(i).label] for i in graph.inputs]
    (got,) = program.run(inputs)
    assert_close(got, f(em.tensor(x)).numpy(), rtol=1e-5)
    assert "(a permuted view, read in place)" in program.source


def test_graphs_needing_python_are_refused_with_a_reason():
    from execmode.codegen.program import program_or_reason

    x = em.tensor(np.ones((4, 6), np.float32))
    graph = em.jit(lambda x: em.cumsum(x * 2, 0)).lower(x).graph
    program, reason = program_or_reason(graph)
    assert program is None
    assert "cumsum" in reason
    # An outer product: NumPy computes it with its own loops, not BLAS.
    col, row = em.tensor(np.ones((200, 1), np.float32)), em.tensor(np.ones((1, 300), np.float32))
    graph = em.jit(lambda a, b: a @ b).lower(col, row).graph
    program, reason = program_or_reason(graph)
    assert program is None
    assert "outer product" in reason


def test_large_matmuls_and_assigns_are_in_the_program():
    big = em.tensor(np.ones((128, 128), np.float32))
    assert compile_program(em.jit(lambda x: x @ big).lower(big).graph) is not None  # BLAS

    p = em.tensor(np.ones(4, np.float32))

    def update(g):
        em.assign(p, p - 0.1 * g)
        return g * 2

    assert compile_program(em.jit(update).lower(em.tensor(np.ones(4, np.float32))).graph) \
        is not None


def test_identical_kernels_are_compiled_once():
    from kernel_helpers import fused_case

    x = np.ones((4, 5), np.float32)
    kernels = [lower_fused(f, g.node_map()) for g, f in
               (fused_case(lambda x: em.exp(x) * 2, x, label=f"k{i}") for i in range(3))]
    source = CRenderer().translation_unit(kernels)
    assert source.count("em_exp_f32(x[") == 1
    assert "/* k1: the code of k0" in source and "/* k2: the code of k0" in source
