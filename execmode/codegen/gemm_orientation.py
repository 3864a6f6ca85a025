"""Which way round a whole-graph program computes a matrix product through BLAS.

``C = A @ B`` can also be computed as ``C^T = B^T @ A^T`` into scratch memory and then
transposed. The two are the same dot products, each summed over k in the same order, so
OpenBLAS gives the same bits either way (checked on every shape before it is used); but
its speed depends on which operand it packs as the left one. With a short A (an MLP's
batch of 64 rows) and a large transposed B (``x @ w.T``) it ran at ~65 GFLOPS here one
thread, and the product turned round at ~83 (64x2048 @ (2048x2048)^T: 8.05 ms against 6.47
ms; 64x1024 @ (1024x1024)^T: 1.90 against 1.37 ms; 64x512 @ (256x512)^T: 223 against 182 us).
jax.jit's own GEMM is that fast, so this is the difference between an MLP forward behind
XLA's and level with it.

:func:`transposed` decides per (dtype, shapes, transpose flags), once per process: NumPy
calls the same BLAS function with the same arguments as the program would (``a @ b`` and
``b.T @ a.T``), so it times both on random data of that layout and keeps the turned
product only when its bits equal the plain one's and it is faster by a margin that the
transpose copy and timing noise cannot eat. Small products are never turned (the copy
would cost more than any gain). ``EXECMODE_GEMM_ORIENTATION=numpy`` keeps NumPy's own
orientation everywhere; ``=transposed`` turns every product that may be (for tests).
"""

from __future__ import annotations

import functools
import os
import time

import numpy as np

from ..matmul_bits import operands, turned_same_bits

# Products below this many multiply-adds stay as NumPy computes them.
MIN_WORK = 1 << 18
# The turned product must be at least this much faster (it also pays a transpose copy).
MARGIN = 0.9
# Each side's best of this many calls (fewer when a call is slow).
REPEATS = 3


def transposed(dtype, m: int, n: int, p: int, a_trans: bool, b_trans: bool) -> bool:
    """True when the program should compute ``(m x n) @ (n x p)`` as ``B^T @ A^T`` and
    transpose; ``a_trans``/``b_trans``: the operand arrives transposed (its BLAS flag)."""
    mode = os.environ.get("EXECMODE_GEMM_ORIENTATION", "measure").strip().lower()
    if mode == "numpy" or m * n * p < MIN_WORK:
        return False
    if mode == "transposed":
        return turned_same_bits(np.dtype(dtype).str, m, n, p, a_trans, b_trans)
    return _measured(np.dtype(dtype).str, m, n, p, a_trans, b_trans)


@functools.lru_cache(maxsize=256)
def _measured(dtype: str, m: int, n: int, p: int, a_trans: bool, b_trans: bool) -> bool:
    if not turned_same_bits(dtype, m, n, p, a_trans, b_trans):
        return False  # another BLAS, another summation order: keep eager's bits
    a, b = operands(dtype, m, n, p, a_trans, b_trans)
    out = np.empty((m, p), dtype)
    scratch = np.empty((p, m), dtype)

    def run_plain():
        np.matmul(a, b, out=out)

    def run_turned():
        np.matmul(b.T, a.T, out=scratch)
        out[...] = scratch.T

    return _best(run_turned) < MARGIN * _best(run_plain)


def _best(fn) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        if best > 0.05:
            break  # a slow product: one timing says enough
    return best
