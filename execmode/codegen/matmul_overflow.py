"""A generated matmul gives eager's product where its values are near the float's limits,
and NumPy's BLAS call from the kernel where that is faster than the loops.

A small matmul's generated loops (matmul_policy.py) add their products in their own order,
rounding each product first; NumPy's BLAS adds them in another (OpenBLAS's sgemm: one fused
multiply-add chain per element). Below the limits that is rounding. Where a product or a
partial sum can pass the largest float, the order decides the non-finite result:
``-2.5 * inf + -1.5 * -3.06e38`` is -inf with the multiply and add fused (the exact
product 4.59e38 is added) and NaN with the product rounded to +inf first.

So before its loops a kernel bounds every partial sum: with ``a`` the largest magnitude
among A's values (NaN passed over: it gives NaN in every order), ``b`` B's and ``K`` the
inner size, no product and no partial sum in any order can exceed ``K a b``. Where that
stays below half the largest float, the order only rounds. Otherwise (an Inf operand
among them) the kernel computes the product with the same CBLAS call NumPy's matmul makes
(blas.matmul_call: gemm, syrk, gemv or dot, same arguments), into a scratch buffer, and
runs its epilogue over that: eager's bits. Where NumPy would not call BLAS (an operand it
copies first, an outer product), the kernel keeps its loops alone.

A matrix-matrix product of ``BLAS_FROM_MACS`` multiply-adds or more takes NumPy's call
always, without the bound: made from the kernel, with the epilogue fused after it, it
was faster than the loops there (and gives eager's bits at any value).

The BLAS functions' addresses reach the kernels of a translation unit through one global
array, set by ``em_blas_bind`` when the unit is loaded (:func:`bind`). Without a BLAS this
module knows (``blas.find()`` is None) kernels keep their loops alone, as before.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import blas as blas_mod

ROUTINES = ("gemm", "gemv", "syrk", "dot")
LETTERS = ("s", "d")
# Half the largest float: a sum of terms each below it by a factor K stays finite.
LIMITS = {np.dtype(np.float32): "1.7e38", np.dtype(np.float64): "8.9e307"}
# From here a matrix-matrix product (both output sides 2 or more) is NumPy's call always:
# made from the kernel it took 0.41-0.75x the loops' time for 8x32 @ 32x32, 32x16 @ 16x32,
# 4x64 @ 64x64 and 2x128 @ 128x64 (float32, one thread, interleaved rounds, three runs;
# benchmarks/bench_small_matmul.py), 1.0x at 16x16 @ 16x16 and 1.1-1.2x at 8x8 @ 8x8; a
# matrix-vector product's gemv took 1.05-1.1x.
BLAS_FROM_MACS = 8 * 1024
BIND = "em_blas_bind"


def _slot(letter: str, routine: str) -> int:
    return LETTERS.index(letter) * len(ROUTINES) + ROUTINES.index(routine)


def unit_globals() -> str:
    """The CBLAS types, the address array and its setter (once per translation unit of
    kernels with a generated matmul); "" without a BLAS."""
    blas = blas_mod.find()
    if blas is None:
        return ""
    n = len(LETTERS) * len(ROUTINES)
    return "\n".join([
        "#include <stdlib.h>",
        blas_mod.c_typedefs(blas),
        "/* NumPy's CBLAS functions, for the products near the float limits and the",
        " * bigger ones (matmul_overflow.py): set when the library is loaded. */",
        f"static void *em_blas_fn[{n}];",
        f"void {BIND}(void *const *fns) {{ for (int i = 0; i < {n}; i++) "
        "em_blas_fn[i] = fns[i]; }",
        HELPERS,
    ])


def bind(cdll, source: str) -> None:
    """Give a loaded unit the BLAS addresses, where its source asks for them."""
    if BIND not in source:
        return
    blas = blas_mod.find()
    addresses = (ctypes.c_void_p * (len(LETTERS) * len(ROUTINES)))()
    for letter in LETTERS:
        for routine in ROUTINES:
            addresses[_slot(letter, routine)] = blas.pointer(letter, routine)
    getattr(cdll, BIND)(addresses)


def blas_always(m: int, n: int, k: int) -> bool:
    """Whether an ``(m x k) @ (k x n)`` generated matmul takes NumPy's call at any values."""
    return min(m, n) >= 2 and m * n * k >= BLAS_FROM_MACS


def _blas_call(k) -> list | None:
    """C computing ``em_mm = A @ B`` as numpy.matmul does, or None where it would not
    call BLAS."""
    mm = k.matmul
    dtype = np.dtype(mm.dtype)
    letter = "s" if dtype == np.float32 else "d"
    fn = {r: f"em_blas_fn[{_slot(letter, r)}]" for r in ROUTINES}
    try:
        return blas_mod.matmul_call(blas_mod.find(), dtype, (mm.m, mm.k), mm.a_strides,
                                    (mm.k, mm.n), mm.b_strides, (mm.m, mm.n),
                                    mm.a, mm.b, "em_mm", fn)
    except blas_mod.NoBlas:  # NumPy's own loops: their order is not the BLAS's either
        return None


def guarded(renderer, k, loops: list) -> list:
    """``loops`` behind the bound from the operands' largest magnitudes (one pass over each
    operand, which the loops read again from cache); past it, eager's product and the
    epilogue instead. A matrix-matrix product of ``BLAS_FROM_MACS`` or more takes eager's
    product always: NumPy's call, made from the kernel, was faster than the loops there.
    ``loops`` alone where NumPy would not call BLAS, or no BLAS is known."""
    mm = k.matmul
    dtype = np.dtype(mm.dtype)
    call = _blas_call(k) if dtype in LIMITS and blas_mod.find() is not None else None
    if call is None:
        return loops
    sfx = "f32" if dtype == np.float32 else "f64"
    a_rows, a_cols = mm.a_strides
    b_rows, b_cols = mm.b_strides
    if blas_always(mm.m, mm.n, mm.k):
        head = ["/* NumPy's BLAS call from the kernel: eager's bits, and faster than loops at",
                " * this size (matmul_overflow.py); the loops only without scratch memory. */",
                "if (em_blas_fn[0] != 0) {"]
    else:
        head = [
            "/* Near the float limits the order of the products decides Inf against NaN:",
            " * past the bound, NumPy's BLAS call instead (matmul_overflow.py). */",
            f"if (em_blas_fn[0] != 0 && (double){mm.k} * "
            f"em_absmax_{sfx}({mm.a}, {mm.m}, {mm.k}, {a_rows}, {a_cols}) * "
            f"em_absmax_{sfx}({mm.b}, {mm.k}, {mm.n}, {b_rows}, {b_cols}) > "
            f"{LIMITS[dtype]}) {{"]
    return head + ["    " + line for line in eager_product(renderer, k, call)] + ["}"] + loops


def eager_product(renderer, k, call: list) -> list:
    """The product by NumPy's BLAS call (``call``: _blas_call's lines) into scratch, the
    epilogue over it, and the kernel's return (without scratch memory, the loops run after
    all)."""
    mm = k.matmul
    t = renderer.type_names[np.dtype(mm.dtype)]
    rows, cols = k.loops
    epilogue = [f"const {t} acc = em_mm[{rows.var} * {mm.n} + {cols.var}];"] + \
        renderer.statements(k) + [renderer.store_line(k)]
    nest = renderer.nest([[renderer.for_line(rows.var, mm.m)],
                          ["#pragma omp simd", renderer.for_line(cols.var, mm.n)]], epilogue)
    return [f"{t} *em_mm = ({t} *)malloc(sizeof({t}) * {mm.m * mm.n});",
            "if (em_mm != NULL) {",
            *("    " + line for line in call),
            *("    " + line for line in nest),
            "    free(em_mm);",
            "    return;",
            "}"]


HELPERS = r"""
/* The largest magnitude in a rows x cols operand (element strides rs, cs): NaN is passed
 * over (a NaN operand gives NaN in every order), Inf is the largest. A contiguous operand
 * is read in AVX vectors into four running maxima: max(v, m) returns m where v is NaN
 * (its second operand), as v > m ? v : m does. */
#if defined(__AVX__)
#include <immintrin.h>
/* T's lanes in a 256-bit vector V; SFX the intrinsics' suffix (ps, pd); MASK all bits
 * but the sign's. */
#define EM_ABSMAX_FLAT(NAME, T, V, LANES, SFX, MASK)                                \
static inline T NAME(const T *p, long n, long *done)                                \
{                                                                                   \
    const V mask = MASK;                                                            \
    V m0 = _mm256_setzero_##SFX(), m1 = m0, m2 = m0, m3 = m0;                       \
    long i = 0;                                                                     \
    for (; i + 4 * LANES <= n; i += 4 * LANES) {                                    \
        m0 = _mm256_max_##SFX(_mm256_and_##SFX(_mm256_loadu_##SFX(p + i), mask), m0); \
        m1 = _mm256_max_##SFX(_mm256_and_##SFX(_mm256_loadu_##SFX(p + i + LANES), mask), m1); \
        m2 = _mm256_max_##SFX(_mm256_and_##SFX(_mm256_loadu_##SFX(p + i + 2 * LANES), mask), \
                              m2);                                                  \
        m3 = _mm256_max_##SFX(_mm256_and_##SFX(_mm256_loadu_##SFX(p + i + 3 * LANES), mask), \
                              m3);                                                  \
    }                                                                               \
    for (; i + LANES <= n; i += LANES)                                              \
        m0 = _mm256_max_##SFX(_mm256_and_##SFX(_mm256_loadu_##SFX(p + i), mask), m0); \
    T lanes[LANES], r = 0;                                                          \
    _mm256_storeu_##SFX(lanes, _mm256_max_##SFX(_mm256_max_##SFX(m0, m1),           \
                                                 _mm256_max_##SFX(m2, m3)));        \
    for (int j = 0; j < LANES; j++)                                                 \
        r = lanes[j] > r ? lanes[j] : r;                                            \
    *done = i;                                                                      \
    return r;                                                                       \
}
EM_ABSMAX_FLAT(em_absmax_f32_flat, float, __m256, 8, ps,
               _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)))
EM_ABSMAX_FLAT(em_absmax_f64_flat, double, __m256d, 4, pd,
               _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL)))
#else
/* Four running maxima in scalars: no one latency-bound chain. */
#define EM_MAX(m, v) ((v) > (m) ? (v) : (m))
#define EM_ABSMAX_FLAT(NAME, T, FABS)                                               \
static inline T NAME(const T *p, long n, long *done)                                \
{                                                                                   \
    T m0 = 0, m1 = 0, m2 = 0, m3 = 0;                                               \
    long i = 0;                                                                     \
    for (; i + 4 <= n; i += 4) {                                                    \
        const T v0 = FABS(p[i]), v1 = FABS(p[i + 1]);                               \
        const T v2 = FABS(p[i + 2]), v3 = FABS(p[i + 3]);                           \
        m0 = EM_MAX(m0, v0); m1 = EM_MAX(m1, v1);                                   \
        m2 = EM_MAX(m2, v2); m3 = EM_MAX(m3, v3);                                   \
    }                                                                               \
    *done = i;                                                                      \
    m0 = EM_MAX(m0, m1); m2 = EM_MAX(m2, m3);                                       \
    return EM_MAX(m0, m2);                                                          \
}
EM_ABSMAX_FLAT(em_absmax_f32_flat, float, fabsf)
EM_ABSMAX_FLAT(em_absmax_f64_flat, double, fabs)
#endif
#define EM_ABSMAX(NAME, T, FABS)                                                    \
static inline T NAME(const T *p, long rows, long cols, long rs, long cs)            \
{                                                                                   \
    T r = 0;                                                                        \
    if ((cs == 1 && rs == cols) || (rs == 1 && cs == rows)) {                       \
        const long n = rows * cols;                                                 \
        long i;                                                                     \
        r = NAME##_flat(p, n, &i);                                                  \
        for (; i < n; i++) {                                                        \
            const T v = FABS(p[i]);                                                 \
            r = v > r ? v : r;                                                      \
        }                                                                           \
        return r;                                                                   \
    }                                                                               \
    for (long i = 0; i < rows; i++)                                                 \
        for (long j = 0; j < cols; j++) {                                           \
            const T v = FABS(p[i * rs + j * cs]);                                   \
            r = v > r ? v : r;                                                      \
        }                                                                           \
    return r;                                                                       \
}
EM_ABSMAX(em_absmax_f32, float, fabsf)
EM_ABSMAX(em_absmax_f64, double, fabs)
"""
