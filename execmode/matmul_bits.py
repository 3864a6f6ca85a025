"""Whether NumPy's matmul gives the same bits for ``A @ B`` and ``(B^T @ A^T)^T``.

The two are the same dot products: every element multiplies the same pairs. Whether they
are also summed in the same order is the BLAS's business. OpenBLAS's sgemm sums each
element over k in one order either way; for some float64 shapes it does not. So a product
is only ever computed turned round (a pass that rewrites ``(A @ B)^T`` as ``B^T @ A^T``,
a program that computes ``A @ B`` turned for speed) where this check, run once per process
and layout on random data, found the same bits as the plain product: eager's bits.

It sits low in the layers (it needs only NumPy) because both the passes
(passes/simplify.py) and the code generator (codegen/gemm_orientation.py) ask it.
"""

from __future__ import annotations

import functools

import numpy as np


def operands(dtype: str, m: int, n: int, p: int, a_trans: bool, b_trans: bool):
    """Random ``(m x n)`` and ``(n x p)`` operands of ``dtype``, each a transposed view of
    a contiguous array when its flag says it arrives transposed (as NumPy would see it)."""
    rng = np.random.default_rng(m * 1_000_003 + n * 1_009 + p)
    a = rng.standard_normal((n, m) if a_trans else (m, n)).astype(dtype)
    b = rng.standard_normal((p, n) if b_trans else (n, p)).astype(dtype)
    return (a.T if a_trans else a), (b.T if b_trans else b)


@functools.lru_cache(maxsize=256)
def turned_same_bits(dtype: str, m: int, n: int, p: int, a_trans: bool,
                     b_trans: bool) -> bool:
    """True when ``(m x n) @ (n x p)`` and the same product turned round have equal bits
    here (``dtype`` as ``np.dtype(...).str``; a flag: that operand is a transposed view)."""
    a, b = operands(dtype, m, n, p, a_trans, b_trans)
    return bool(np.array_equal(a @ b, (b.T @ a.T).T))
