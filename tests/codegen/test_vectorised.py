"""The rendered C of long elementwise chains is vectorised by the compiler.

A 1000-op chain with float32 exp/tanh every tenth op: before the math helpers were
``always_inline``, GCC's inliner gave up on a loop body that large, the helpers became
calls, and the loop ran scalar (5x slower in a measurement of this chain). The test asks
the compiler itself (``-fopt-info-vec-optimized`` for GCC, ``-Rpass=loop-vectorize`` for
clang) with the exact flags the runtime uses.
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from kernel_helpers import fused_case

import execmode as em
from execmode.codegen.lower import lower_fused
from execmode.codegen.render_c import CRenderer
from execmode.codegen.toolchain import (
    LARGE_UNIT_BYTES,
    LARGE_UNIT_FLAGS,
    NoCompiler,
    get_toolchain,
)


def _chain(n_ops: int, tail: str = "none"):
    def chain(x, b):
        for k in range(n_ops):
            if k % 10 == 9:
                x = em.tanh(x) if (k // 10) % 2 else em.exp(x)
            else:
                x = x * 0.999 if k % 2 else x + b
        return em.sum(x, axis=-1) if tail == "row sum" else x
    return chain


def _vectorisation_report(source: str, tmp_path, long_kernels: bool = False) -> str:
    """What the compiler says it vectorised (GCC and clang both write it to stderr)."""
    try:
        toolchain = get_toolchain()
    except NoCompiler as exc:
        pytest.skip(f"no C compiler: {exc}")
    clang = "clang" in toolchain.version.lower()
    report_flag = "-Rpass=loop-vectorize" if clang else "-fopt-info-vec-optimized"
    path = os.path.join(tmp_path, "chain.c")
    with open(path, "w") as f:
        f.write(source)
    args = [*toolchain.command, *toolchain.flags_for(source, long_kernels), report_flag, "-o",
            os.path.join(tmp_path, "chain.so"), path, "-lm"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout + proc.stderr


# Slow tier: compiles long chains.
@pytest.mark.slow
@pytest.mark.parametrize("case", ["flat, 1000 ops", "2-D broadcast, 300 ops",
                                  "row sum, 300 ops", "flat, 3000 ops",
                                  "flat, 1000 ops, helpers called"])
def test_long_chains_are_vectorised(case, tmp_path):
    """A flat elementwise kernel, one whose input broadcasts along the inner axis, and a
    reduction with the chain as its producer: every shape of loop the renderer prints.
    3000 ops make a translation unit large enough for the large-unit flags
    (toolchain.LARGE_UNIT_BYTES: no points-to analysis), which must vectorise too, and so
    must a unit that calls its helpers from the runtime library (runtime_library.py: the
    vector variants) with the long-kernel flags."""
    if case.startswith("flat"):
        x, b = np.ones(4096, np.float32), np.ones(4096, np.float32)
        fn = _chain(int(case.split()[1]))
    else:
        x, b = np.ones((64, 256), np.float32), np.ones(256, np.float32)
        fn = _chain(300, "row sum" if case.startswith("row") else "none")
    graph, fused = fused_case(fn, x, b)
    kernel = lower_fused(fused, graph.node_map())
    called = case.endswith("helpers called")
    source = CRenderer().translation_unit([kernel], runtime=called)
    assert "__attribute__((always_inline))" in source
    assert ("extern float em_rt_tanh_f32(" in source) == called
    assert (len(source) >= LARGE_UNIT_BYTES) == case.endswith("3000 ops")
    report = _vectorisation_report(source, tmp_path, long_kernels=called)
    vectorised = "loop vectorized" in report or "vectorized loop" in report  # gcc / clang
    assert vectorised, report or "(the compiler reported no vectorised loop)"
    if called:  # the loop calls a vector variant (_ZGV<isa>N<lanes>v_em_rt_tanh_f32)
        with open(os.path.join(tmp_path, "chain.so"), "rb") as f:
            assert b"v_em_rt_tanh_f32" in f.read()


def test_only_large_units_get_the_large_unit_flags():
    try:
        toolchain = get_toolchain()
    except NoCompiler as exc:
        pytest.skip(f"no C compiler: {exc}")
    small, big = "int x;\n", "/*" + " " * LARGE_UNIT_BYTES + "*/\n"
    assert toolchain.flags_for(small) == toolchain.flags
    assert toolchain.identity_for(small) == toolchain.identity
    extra = toolchain.flags_for(big)[len(toolchain.flags):]
    if "clang" not in toolchain.version.lower():  # GCC takes -fno-tree-pta
        assert extra == LARGE_UNIT_FLAGS
    assert (toolchain.identity_for(big) != toolchain.identity) == bool(extra)


def test_a_large_unit_computes_what_eager_does():
    def chain(x):
        for k in range(3000):
            x = x * 1.0001 if k % 2 == 0 else x + 0.5
        return x

    x = em.tensor(np.linspace(-2, 2, 300, dtype=np.float32))
    np.testing.assert_array_equal(em.jit(chain)(x).numpy(), chain(x).numpy())


@pytest.mark.parametrize("case", ["where on a mask", "a mask written", "a mask summed"])
def test_kernels_over_bool_arrays_are_vectorised(case, tmp_path):
    """A bool array is declared uint8_t and each load read as bool (render_c.py's
    array_type_names): declared _Bool, GCC 12 vectorised none of these loops, and
    attention's where(mask, -inf, x * 0.25) ran one element at a time."""
    x = np.linspace(-1, 1, 64 * 1024, dtype=np.float32).reshape(64, 1024)
    mask = np.tril(np.ones((32, 32), bool)).reshape(1, 1024)
    fns = {"where on a mask": lambda x, m: em.where(m, -float("inf"), x * 0.25),
           "a mask written": lambda x, m: em.logical_and(x > 0.0, m),
           "a mask summed": lambda x, m: em.sum(em.astype(m, em.float32) * x, axis=1)}
    graph, fused = fused_case(fns[case], x, mask)
    source = CRenderer().translation_unit([lower_fused(fused, graph.node_map())])
    assert "const uint8_t *restrict" in source and "((bool)" in source
    assert "bool *" not in source.split("void k0(")[1]
    report = _vectorisation_report(source, tmp_path)
    assert "loop vectorized" in report or "vectorized loop" in report, report


def test_bool_arrays_through_kernels_and_programs_keep_eagers_bits():
    """Masks read and written by kernels, in a program and through the plan's kernels,
    against eager: a where on a broadcast mask, a mask computed and returned, a mask
    counted, cast to float, and negated."""
    rng = np.random.default_rng(3)
    x = em.tensor(rng.standard_normal((4, 8, 32)).astype(np.float32))
    keep = em.tensor(rng.random((8, 32)) > 0.3)

    def f(x, keep):
        scores = em.where(keep, x * 0.25, -float("inf"))
        fresh = em.logical_and(x > 0.0, em.logical_not(keep))
        counted = em.sum(em.astype(fresh, em.int32), axis=2)  # (an exact sum)
        return scores, fresh, counted, em.astype(fresh, em.float32) * x, em.logical_not(fresh)

    for mode in ("program", "kernels"):
        jitted = em.jit(f) if mode == "program" else em.jit(f, passes=["fuse"])
        for got, want in zip(jitted(x, keep), f(x, keep)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.numpy(), want.numpy())
