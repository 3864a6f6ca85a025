"""When a matmul generates its own loops instead of calling BLAS (NumPy) or cuBLAS.

A NumPy matmul costs ~1 us of call overhead before any arithmetic; for tiny static shapes
generated loops finish sooner. Measured on the 2-core AVX-512 dev machine, ``run_into`` of
a generated kernel vs ``np.matmul(a, b, out=)`` (float32; docs/kernels.md has the table):

    10x10 @ 10x10        0.42 us vs 0.95 us     16x16 @ 16x16        0.45 vs 1.01
    32x32 @ 32x32        2.90 us vs 1.64 us     1x256 @ 256x128 (B^T) 1.96 vs 2.24
    1x128 @ 128x2 (B^T)  0.37 us vs 0.98 us     1x512 @ 512x256 (B^T) 8.15 vs 6.96

so: generated loops up to 16K multiply-adds, and for matrix-vector shapes up to 40K.
"""

from __future__ import annotations

import numpy as np

INLINE_MAX_MACS = 16 * 1024
INLINE_MAX_MACS_MATVEC = 40 * 1024


def inline_on_cpu(m: int, n: int, k: int, dtype) -> bool:
    if np.dtype(dtype).kind != "f":
        return False
    macs = m * n * k
    return macs <= INLINE_MAX_MACS or (min(m, n) <= 2 and macs <= INLINE_MAX_MACS_MATVEC)


def inline_on_gpu(m: int, n: int, k: int, dtype) -> bool:
    # cuBLAS everywhere: a launch costs microseconds either way on a GPU.
    return False
