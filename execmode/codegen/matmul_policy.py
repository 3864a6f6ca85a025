"""When a matmul generates its own loops instead of calling BLAS (NumPy) or cuBLAS.

A NumPy matmul costs ~1 us of call overhead before any arithmetic; for tiny static shapes
generated loops finish sooner, when B's rows are contiguous (the row form: a whole output
row accumulated in vectors). Per call of a jitted ``(x @ b) * 2.0`` on the 2-core
Sapphire Rapids VM (float32, medians of 7 interleaved rounds, benchmarks/
bench_small_matmul.py; the loops with their overflow bound, matmul_overflow.py, against
the BLAS call the plan or program makes instead):

    8x8 @ 8x8            0.24 us vs 2.5 us      32x16 @ 16x32        1.1 vs 2.9
    1x64 @ 64x64         0.46 us vs 2.3 us      1x256 @ 256x128      3.6 vs 3.6

but where B arrives transposed (``x @ w.T``, a Linear layer's layout) the loops are dot
products, one per output with a horizontal sum, and OpenBLAS's kernels were faster at
nearly every size tried: 16x16 @ (16x16)^T 0.85 us against 0.46, 1x256 @ (32x256)^T 1.3
against 0.59, 1x256 @ (128x256)^T 4.9 against 1.9 (1x128 @ (2x128)^T: 0.23 against
0.25). So: generated loops up to 16K multiply-adds, and for matrix-vector shapes up to
40K, where B's rows are contiguous or B is one column; BLAS otherwise. Inside such a
kernel, a matrix-matrix product of matmul_overflow.BLAS_FROM_MACS or more calls NumPy's
BLAS itself, the epilogue after it (faster than its loops there, and eager's bits).
"""

from __future__ import annotations

import numpy as np

INLINE_MAX_MACS = 16 * 1024
INLINE_MAX_MACS_MATVEC = 40 * 1024


def inline_on_cpu(m: int, n: int, k: int, dtype, b_strides=None) -> bool:
    """``b_strides``: B's element strides as the kernel reads it (None: C-contiguous)."""
    if np.dtype(dtype).kind != "f":
        return False
    if b_strides is not None and b_strides[-1] != 1 and n != 1:
        return False  # B's rows are not contiguous: BLAS
    macs = m * n * k
    return macs <= INLINE_MAX_MACS or (min(m, n) <= 2 and macs <= INLINE_MAX_MACS_MATVEC)


def inline_on_gpu(m: int, n: int, k: int, dtype, b_strides=None) -> bool:
    # cuBLAS everywhere: a launch costs microseconds either way on a GPU.
    return False
