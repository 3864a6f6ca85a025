/* em_gemm.h: float32 matrix products for whole-graph programs, with OpenBLAS's bits.
 *
 * OpenBLAS's sgemm computes every element of C as one fused multiply-add chain over k,
 * from 0, per block of k (at most Q at a time while 2Q or more remain, then the rest in
 * two halves), and adds the blocks into C in order: C = 0 + acc0, C = C + acc1, ...
 * These functions compute exactly that, so they give NumPy's bits; gemm_kernel.py still
 * checks it on every shape before a program calls them, and times them against the BLAS.
 * They are faster where OpenBLAS's packing costs most: a short batch (64 rows) against a
 * weight, x @ w.T, where OpenBLAS copies the whole weight into its panel layout per call.
 *
 * The kernel: C = S . V, where S is read one element at a time (broadcast; any layout)
 * and V by rows contiguous in j (vectors): a tile of MR rows of S by NR = 64 columns of V
 * is 24 zmm accumulators, each k one load of V's row (4 vectors), MR broadcasts and 24
 * FMAs. No packing: for x @ w.T the small operand x is transposed into scratch instead
 * (em_gemm_nt), the weight is read in place as S, and the tile is stored transposed.
 *
 * Needs AVX-512F (gemm_kernel.py only chooses it on such CPUs, for -march=native code).
 */
#if defined(__AVX512F__)
#include <immintrin.h>

#define EM_GEMM_MR 6
#define EM_GEMM_NV 4
#define EM_GEMM_NR (16 * EM_GEMM_NV)

/* The tile's rows x cols results (t) into C(i, j) = C[i * ci + j * cj]: the first k-block
 * writes 0 + acc (as BLAS, which zeroes C for beta = 0 and adds), later ones C + acc. */
static inline void
em_gemm_store(float *C, long ci, long cj, int rows, int cols,
              const float t[EM_GEMM_MR][EM_GEMM_NR], int first)
{
    if (cj == 1 && cols == EM_GEMM_NR) {
        for (int r = 0; r < rows; ++r)
            for (int v = 0; v < EM_GEMM_NV; ++v) {
                float *p = C + r * ci + 16 * v;
                __m512 base = first ? _mm512_setzero_ps() : _mm512_loadu_ps(p);
                _mm512_storeu_ps(p, _mm512_add_ps(base, _mm512_load_ps(&t[r][16 * v])));
            }
        return;
    }
    for (int j = 0; j < cols; ++j)
        for (int r = 0; r < rows; ++r) {
            float *p = C + r * ci + j * cj;
            *p = (first ? 0.0f : *p) + t[r][j];
        }
}

/* One k-block of kl: C (+)= S . V over M x N. */
static void
em_gemm_block(long M, long N, long kl, const float *S, long si, long sk, const float *V,
              long ldv, float *C, long ci, long cj, int first)
{
    for (long j0 = 0; j0 < N; j0 += EM_GEMM_NR) {
        int cols = N - j0 < EM_GEMM_NR ? (int)(N - j0) : EM_GEMM_NR;
        __mmask16 mask[EM_GEMM_NV];
        for (int v = 0; v < EM_GEMM_NV; ++v) {
            int left = cols - 16 * v;
            mask[v] = left >= 16 ? (__mmask16)0xFFFF
                    : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
        }
        for (long i0 = 0; i0 < M; i0 += EM_GEMM_MR) {
            int rows = M - i0 < EM_GEMM_MR ? (int)(M - i0) : EM_GEMM_MR;
            const float *s[EM_GEMM_MR];
            for (int r = 0; r < EM_GEMM_MR; ++r)   /* rows past M repeat the last (unused) */
                s[r] = S + (i0 + (r < rows ? r : rows - 1)) * si;
            __m512 acc[EM_GEMM_MR][EM_GEMM_NV];
            for (int r = 0; r < EM_GEMM_MR; ++r)
                for (int v = 0; v < EM_GEMM_NV; ++v)
                    acc[r][v] = _mm512_setzero_ps();
            const float *vk = V + j0;
            /* Two copies of one loop on purpose: the masked one alone, all-ones masks for
             * full tiles, ran 5-10% slower (bench_gemm.py, both side by side). */
            if (cols == EM_GEMM_NR) {
                for (long k = 0; k < kl; ++k, vk += ldv) {
                    __m512 b0 = _mm512_loadu_ps(vk), b1 = _mm512_loadu_ps(vk + 16),
                           b2 = _mm512_loadu_ps(vk + 32), b3 = _mm512_loadu_ps(vk + 48);
#pragma GCC unroll 6
                    for (int r = 0; r < EM_GEMM_MR; ++r) {
                        __m512 a = _mm512_set1_ps(s[r][k * sk]);
                        acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
                        acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
                        acc[r][2] = _mm512_fmadd_ps(a, b2, acc[r][2]);
                        acc[r][3] = _mm512_fmadd_ps(a, b3, acc[r][3]);
                    }
                }
            }
            else {
                const __mmask16 m0 = mask[0], m1 = mask[1], m2 = mask[2], m3 = mask[3];
                for (long k = 0; k < kl; ++k, vk += ldv) {
                    __m512 b0 = _mm512_maskz_loadu_ps(m0, vk),
                           b1 = _mm512_maskz_loadu_ps(m1, vk + 16),
                           b2 = _mm512_maskz_loadu_ps(m2, vk + 32),
                           b3 = _mm512_maskz_loadu_ps(m3, vk + 48);
#pragma GCC unroll 6
                    for (int r = 0; r < EM_GEMM_MR; ++r) {
                        __m512 a = _mm512_set1_ps(s[r][k * sk]);
                        acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
                        acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
                        acc[r][2] = _mm512_fmadd_ps(a, b2, acc[r][2]);
                        acc[r][3] = _mm512_fmadd_ps(a, b3, acc[r][3]);
                    }
                }
            }
            /* Out of registers only here: an accumulator array whose address escapes
             * was stored to the stack at every k by GCC 12 (the masked loop). */
            float t[EM_GEMM_MR][EM_GEMM_NR] __attribute__((aligned(64)));
            for (int r = 0; r < EM_GEMM_MR; ++r)
                for (int v = 0; v < EM_GEMM_NV; ++v)
                    _mm512_store_ps(&t[r][16 * v], acc[r][v]);
            em_gemm_store(C + i0 * ci + j0 * cj, ci, cj, rows, cols, t, first);
        }
    }
}

/* C = S . V (M x K times K x N), S(i, k) = S[i * si + k * sk], V(k, j) = V[k * ldv + j],
 * C(i, j) = C[i * ci + j * cj]; k in OpenBLAS's blocks of at most q. */
static void
em_gemm(long M, long N, long K, const float *S, long si, long sk, const float *V, long ldv,
        float *C, long ci, long cj, long q)
{
    int first = 1;
    for (long k0 = 0; k0 < K; first = 0) {
        long rest = K - k0;
        long kl = rest >= 2 * q ? q : rest > q ? rest / 2 : rest;
        em_gemm_block(M, N, kl, S + k0 * sk, si, sk, V + k0 * ldv, ldv, C, ci, cj, first);
        k0 += kl;
    }
}

/* C = X . W^T (X: M x K with rows ldx apart, W: N x K with rows ldw apart), as
 * C^T = W . X^T: X transposed into P (K x M), W read in place, the tile stored
 * transposed into C (rows ldc apart). */
static void
em_gemm_nt(long M, long N, long K, const float *X, long ldx, const float *W, long ldw,
           float *C, long ldc, float *P, long q)
{
    /* In strips of 16 k: each reads one cache line of a row of X, and the 16 rows of P
     * it writes stay in L1 (row by row, every write of P was a cache line of its own). */
    for (long k0 = 0; k0 < K; k0 += 16) {
        long kn = K - k0 < 16 ? K - k0 : 16;
        for (long i = 0; i < M; ++i) {
            const float *x = X + i * ldx + k0;
            for (long k = 0; k < kn; ++k)
                P[(k0 + k) * M + i] = x[k];
        }
    }
    em_gemm(N, M, K, W, ldw, 1, P, M, C, 1, ldc, q);
}
#endif
