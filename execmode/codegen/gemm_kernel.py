"""When a whole-graph program computes a float32 matrix product with its own kernel.

em_gemm.h computes ``C = A @ B`` the way OpenBLAS's sgemm sums it (one fused multiply-add
chain per element and block of k, the blocks added in order), without OpenBLAS's packing
of both operands into panels at every call. For the shapes of an MLP's batch against its
weights it was faster here (one thread, float32, before the program used it):

    64x256 @ (256x256)^T     90 us against NumPy's 112    (x @ w.T, the forward)
    64x512 @ (256x512)^T    179 us against 224
    64x1024 @ (1024^2)^T   1.32 ms against 1.88
    64x2048 @ (2048^2)^T   5.55 ms against 8.03
    (256x64)^T @ 64x512     164 us against 175             (g.T @ x, a weight gradient)
    64x128 @ 128x256         44 us against 45              (g @ w, an input gradient)

and slower where OpenBLAS has its small-matrix path (100x100 @ 100x100: 29 us against
19); on an Intel Xeon it was slower below 1024-wide weights. So, like
gemm_orientation.py, :func:`choice` decides per (shape, layout),
once per process: it runs both on random operands of that layout and takes the kernel
only where its bits equal NumPy's (eager's) and it is faster by a margin. The bit check
also finds OpenBLAS's block size Q for k (448 for its SkylakeX sgemm here): a BLAS that
sums in another order is never matched, and keeps every product.

``EXECMODE_GEMM_KERNEL=blas`` keeps the BLAS everywhere; ``=own`` takes the kernel wherever
its bits match, faster or not (for tests).
"""

from __future__ import annotations

import ctypes
import functools
import os
import time

import numpy as np

from ..matmul_bits import operands

# Products below this many multiply-adds stay with the BLAS (a call costs ~1 us either way).
MIN_WORK = 1 << 18
# The kernel must take at most this fraction of the BLAS's time.
MARGIN = 0.95
# OpenBLAS's sgemm GEMM_Q of the cores seen so far, most likely first (each tried only
# for k larger than it: below, every Q sums the same single chain).
Q_CANDIDATES = (448, 384, 320, 256, 512, 640, 768, 224, 192, 128)
REPEATS = 3


def choice(dtype, m: int, n: int, p: int, a_trans: bool, b_trans: bool):
    """``(form, q)`` when a program should compute ``(m x n) @ (n x p)`` with em_gemm.h,
    else None. ``form``: "nn", "tn" (A arrives transposed) or "nt" (B does); ``q``: the
    k-block size that gives NumPy's bits."""
    mode = os.environ.get("EXECMODE_GEMM_KERNEL", "measure").strip().lower()
    if mode == "blas" or np.dtype(dtype) != np.float32 or m * n * p < MIN_WORK:
        return None
    form = {(False, False): "nn", (True, False): "tn", (False, True): "nt"}.get(
        (a_trans, b_trans))
    if form is None or probe() is None:
        return None
    return _decided(m, n, p, form, mode == "own")


@functools.lru_cache(maxsize=1)
def probe():
    """The kernel compiled alone (ctypes functions ``(gemm, gemm_nt)``), or None where it
    cannot run: no AVX-512F, no ``-march=native`` compiler, or a failed compile."""
    # NumPy's own CPU feature table (private: read defensively; absent, the BLAS stays)
    umath = getattr(getattr(np, "_core", None), "_multiarray_umath", None)
    features = getattr(umath, "__cpu_features__", None) or {}
    if not features.get("AVX512F"):
        return None
    from .c_runtime import CompileError, build_library
    from .render_c import CRenderer, read_header
    from .toolchain import NoCompiler, get_toolchain
    try:
        toolchain = get_toolchain()
    except NoCompiler:
        return None
    if not toolchain.native:
        return None

    class _Probe(CRenderer):
        def translation_unit(self, kernels, runtime: bool = False) -> str:
            return self.prelude() + read_header("em_gemm.h") + _PROBE_ENTRIES

    try:
        library = build_library([], toolchain, _Probe())
    except (CompileError, OSError):
        return None
    long, ptr = ctypes.c_long, ctypes.c_void_p
    gemm, gemm_nt = library.cdll.em_gemm_probe, library.cdll.em_gemm_probe_nt
    gemm.argtypes = [long, long, long, ptr, long, long, ptr, long, ptr, long, long, long]
    gemm_nt.argtypes = [long, long, long, ptr, long, ptr, long, ptr, long, ptr, long]
    gemm.restype = gemm_nt.restype = None
    return library, gemm, gemm_nt


_PROBE_ENTRIES = """
#if defined(__AVX512F__)
void em_gemm_probe(long M, long N, long K, const float *S, long si, long sk, const float *V,
                   long ldv, float *C, long ci, long cj, long q)
{ em_gemm(M, N, K, S, si, sk, V, ldv, C, ci, cj, q); }
void em_gemm_probe_nt(long M, long N, long K, const float *X, long ldx, const float *W,
                      long ldw, float *C, long ldc, float *P, long q)
{ em_gemm_nt(M, N, K, X, ldx, W, ldw, C, ldc, P, q); }
#endif
"""


def call_lines(form: str, q: int, m: int, n: int, p: int, lda: int, ldb: int, ldc: int,
               scratch: str | None) -> list[str]:
    """The C statement of a program computing ``C = A @ B`` (``A``: m x n, ``B``: n x p,
    CBLAS's leading dimensions) with em_gemm.h; ``scratch``: an n x m float buffer (the
    "nt" form packs A there)."""
    note = "/* em_gemm.h: OpenBLAS's summation, checked bit for bit; faster here */"
    if form == "nt":
        return [note, f"em_gemm_nt({m}, {p}, {n}, A, {lda}, B, {ldb}, C, {ldc}, "
                      f"(float *){scratch}, {q});"]
    si, sk = (lda, 1) if form == "nn" else (1, lda)
    return [note, f"em_gemm({m}, {p}, {n}, A, {si}, {sk}, B, {ldb}, C, {ldc}, 1, {q});"]


def runner(form: str, a: np.ndarray, b: np.ndarray, out: np.ndarray, q: int):
    """A zero-argument call of the kernel computing ``a @ b`` into ``out`` (float32
    views of the layout ``form`` names), as a program calls it."""
    _, gemm, gemm_nt = probe()
    m, n = a.shape
    p = b.shape[1]
    items = a.itemsize
    if form == "nt":
        w = b.T  # p x n, rows contiguous
        scratch = np.empty((n, m), np.float32)
        return lambda: gemm_nt(m, p, n, a.ctypes.data, a.strides[0] // items, w.ctypes.data,
                               w.strides[0] // items, out.ctypes.data, p,
                               scratch.ctypes.data, q)
    return lambda: gemm(m, p, n, a.ctypes.data, a.strides[0] // items, a.strides[1] // items,
                        b.ctypes.data, b.strides[0] // items, out.ctypes.data, p, 1, q)


@functools.lru_cache(maxsize=256)
def _decided(m: int, n: int, p: int, form: str, any_speed: bool):
    a, b = operands("<f4", m, n, p, form == "tn", form == "nt")
    want = a @ b
    out = np.empty((m, p), np.float32)
    for q in (n,) + tuple(c for c in Q_CANDIDATES if c < n):
        runner(form, a, b, out, q)()
        if np.array_equal(out, want):
            break
    else:
        return None  # another summation order: the BLAS keeps eager's bits
    if any_speed:
        return form, q
    mine = runner(form, a, b, out, q)
    blas_out = np.empty((m, p), np.float32)

    def theirs():
        np.matmul(a, b, out=blas_out)

    t_mine, t_blas = float("inf"), float("inf")
    for _ in range(REPEATS):  # interleaved: a load change hits both alike
        t_mine = min(t_mine, _timed(mine))
        t_blas = min(t_blas, _timed(theirs))
    return (form, q) if t_mine < MARGIN * t_blas else None


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
