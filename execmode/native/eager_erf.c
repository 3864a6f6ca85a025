/* erf of float32/float64 arrays for execmode/ops/erf.py.
 *
 * float64: fdlibm's intervals with the same double operations, in the same order, as its
 * NumPy version (Horner's rule as _poly writes it, no FMA: -ffp-contract=off), so the same
 * bits. The tails' two exp() calls are left to NumPy (its exp is not libm's: another exp
 * could round differently), between em_erf_split_f64 and em_erf_finish_f64.
 *
 * float32: the generated kernels' own em_erf_f32 (codegen/em_dialect_c.h), so that eager and
 * compiled erf give the same bits, with every Horner step one fused multiply-add on every
 * machine (EM_EXACT_FMA), as ops/erf_float32.py emulates it in NumPy; GELU's forward in one
 * pass over it. */

/* The prelude asks for whole 512-bit vectors where the machine has them (GCC prefers 256
 * by default): the double arithmetic of the float64 intervals and the float32 polynomials
 * are most of this file's time. */
#define EM_EXACT_FMA 1
#include "em_dialect_c.h"

/* ops/erf.py's coefficients, lowest degree first. */
static const double EM_PP[5] = {
    0.12837916709551256, -0.3250421072470015, -0.02848174957559851,
    -0.005770270296489442, -2.3763016656650163e-05
};
static const double EM_QQ[6] = {
    1.0, 0.39791722395915535, 0.0650222499887673, 0.005081306281875766,
    0.00013249473800432164, -3.960228278775368e-06
};
static const double EM_PA[7] = {
    -0.0023621185607526594, 0.41485611868374833, -0.3722078760357013,
    0.31834661990116175, -0.11089469428239668, 0.035478304325618236,
    -0.002166375594868791
};
static const double EM_QA[7] = {
    1.0, 0.10642088040084423, 0.540397917702171, 0.07182865441419627,
    0.12617121980876164, 0.01363708391202905, 0.011984499846799107
};
static const double EM_RA[8] = {
    -0.009864944034847148, -0.6938585727071818, -10.558626225323291,
    -62.375332450326006, -162.39666946257347, -184.60509290671104, -81.2874355063066,
    -9.814329344169145
};
static const double EM_SA[9] = {
    1.0, 19.651271667439257, 137.65775414351904, 434.56587747522923, 645.3872717332679,
    429.00814002756783, 108.63500554177944, 6.570249770319282, -0.0604244152148581
};
static const double EM_RB[7] = {
    -0.0098649429247001, -0.799283237680523, -17.757954917754752, -160.63638485582192,
    -637.5664433683896, -1025.0951316110772, -483.5191916086514
};
static const double EM_SB[8] = {
    1.0, 30.33806074348246, 325.7925129965739, 1536.729586084437, 3199.8582195085955,
    2553.0504064331644, 474.52854120695537, -22.44095244658582
};

/* c[0] + c[1] z + ... as _poly evaluates it: z * c[n-1], + c[n-2], then * z, + c[k] down to
 * c[0] (n and c constant where it is inlined: unrolled). */
static inline __attribute__((always_inline)) double em_poly(double z, const double *c, int n) {
    double out = z * c[n - 1];
    out = out + c[n - 2];
    for (int k = n - 3; k >= 0; k--) {
        out = out * z;
        out = out + c[k];
    }
    return out;
}

static inline __attribute__((always_inline)) double em_erf_inner(double v) {
    double a = __builtin_fabs(v);
    double z = v * v;
    double s = a - 1.0;
    double p = em_poly(z, EM_PP, 5);
    double q = em_poly(z, EM_QQ, 6);
    double pa = em_poly(s, EM_PA, 7);
    double qa = em_poly(s, EM_QA, 7);
    /* One division of the interval's own pair (the other interval's quotient is never
     * used): the division is the vector loop's slowest operation. */
    int inner = a < 0.84375;
    double ratio = (inner ? p : pa) / (inner ? q : qa);
    double small = ratio * v;
    small = small + v;
    double mid = 0.8450629115104675 + ratio;
    mid = __builtin_copysign(mid, v);
    return inner ? small : mid;
}

/* The tails (1.25 <= |x| < 6): erf = 1 - exp(-z*z - 0.5625) * exp((z - a) * (z + a) + R/S)
 * / a, with s = 1 / a^2, z = a with its low 32 bits cleared (fdlibm's split) and R/S the
 * near (below 2.857142857142857 = 1 / 0.35) or the far interval's. Here the two exponents;
 * NumPy's exp makes the factors (ops/erf.py's _erf_tail), em_erf_finish_* the rest. Both
 * intervals' R/S are computed and one taken: the same bits, and a loop that vectorises. */
static inline __attribute__((always_inline)) void em_erf_exponents(double v, double *e1,
                                                                   double *e2) {
    double a = __builtin_fabs(v);
    double s = 1.0 / (a * a);
    union { double d; uint64_t u; } split = {a};
    split.u &= 0xFFFFFFFF00000000ull;
    double z = split.d;
    double ratio_near = em_poly(s, EM_RA, 8) / em_poly(s, EM_SA, 9);
    double ratio_far = em_poly(s, EM_RB, 7) / em_poly(s, EM_SB, 8);
    double ratio = a < 2.857142857142857 ? ratio_near : ratio_far;
    *e1 = -z * z - 0.5625;
    *e2 = (z - a) * (z + a) + ratio;
}

/* The elements from i0 on that need no exp beyond the inner intervals (6 <= |x|, inf and
 * NaN: +-1 or the NaN) get their value, and each tail element (1.25 <= |x| < 6) its index
 * in tail[] from k on; returns the new count. One element at a time, without branches
 * (each index stored, the count moved on for a tail): the part of the array the vector
 * scan below leaves, and all of it on a machine without one. */
static int64_t em_erf_scan(const double *restrict x, double *restrict out, int64_t i0,
                           int64_t n, int64_t *restrict tail, int64_t k) {
    for (int64_t i = i0; i < n; i++) {
        double v = x[i];
        double a = __builtin_fabs(v);
        int outer = !(a < 6.0); /* NaN too */
        out[i] = outer ? (v != v ? v : __builtin_copysign(1.0, v)) : out[i];
        tail[k] = i;
        k += (a >= 1.25) & !outer;
    }
    return k;
}

/* The same scan a vector at a time, where the compiler targets AVX-512 or AVX2: a GELU's
 * input has ~5-10% tail elements and the outer ones are rare, so the comparisons run over
 * whole vectors and only the positions their masks name are visited. It returns how far
 * it got (a multiple of its vector length); the scalar scan does the rest. tail[] has
 * room for n indices and k never passes i, so a full vector of indices stored at tail + k
 * stays inside it. */
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#define EM_ERF_HAVE_VECTOR_SCAN 1

/* The outer values of a vector's positions named by ``outer`` (from i on), as the scalar
 * scan writes them. */
static inline void em_erf_outer(const double *restrict x, double *restrict out, int64_t i,
                                unsigned outer) {
    for (; outer; outer &= outer - 1) {
        int64_t j = i + __builtin_ctz(outer);
        double v = x[j];
        out[j] = v != v ? v : __builtin_copysign(1.0, v);
    }
}

/* The indices first..first+7 that the low eight bits of ``lanes`` name, stored from tail + k
 * (with AVX-512 a full vector of them: see above); returns the new count. */
#if defined(__AVX512F__)
static inline int64_t em_erf_store_tails(int64_t *restrict tail, int64_t k, int64_t first,
                                         unsigned lanes) {
    const __m512i iota = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    __m512i index = _mm512_add_epi64(_mm512_set1_epi64(first), iota);
    _mm512_storeu_si512(tail + k, _mm512_maskz_compress_epi64((__mmask8)lanes, index));
    return k + __builtin_popcount(lanes & 0xFFu);
}
#define EM_VEC_F64 __m512d
#define EM_LANES_F64 8
#define EM_LOAD_F64 _mm512_loadu_pd
#define EM_SET1_F64 _mm512_set1_pd
#define EM_ABS_F64(v) _mm512_abs_pd(v)
#define EM_MASK_F64(a, b, p) (unsigned)_mm512_cmp_pd_mask(a, b, p)
#else /* AVX2: no compress; the mask's few positions are visited one by one */
static inline int64_t em_erf_store_tails(int64_t *restrict tail, int64_t k, int64_t first,
                                         unsigned lanes) {
    for (lanes &= 0xFFu; lanes; lanes &= lanes - 1)
        tail[k++] = first + __builtin_ctz(lanes);
    return k;
}
#define EM_VEC_F64 __m256d
#define EM_LANES_F64 4
#define EM_LOAD_F64 _mm256_loadu_pd
#define EM_SET1_F64 _mm256_set1_pd
#define EM_ABS_F64(v) _mm256_andnot_pd(_mm256_set1_pd(-0.0), v)
#define EM_MASK_F64(a, b, p) (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(a, b, p))
#endif

/* A vector at a time: the masks of the outer values and the tails; the tails' indices go
 * out eight at a time. */
static int64_t em_erf_vscan(const double *restrict x, double *restrict out, int64_t n,
                            int64_t *restrict tail, int64_t *count) {
    const EM_VEC_F64 six = EM_SET1_F64(6.0), low = EM_SET1_F64(1.25);
    int64_t k = *count, i = 0;
    for (; i + EM_LANES_F64 <= n; i += EM_LANES_F64) {
        EM_VEC_F64 a = EM_ABS_F64(EM_LOAD_F64(x + i));
        unsigned inside = EM_MASK_F64(a, six, _CMP_LT_OQ); /* false for NaN */
        unsigned tails = inside & EM_MASK_F64(a, low, _CMP_GE_OQ);
        em_erf_outer(x, out, i, ~inside & ((1u << EM_LANES_F64) - 1));
        if (tails)
            for (int h = 0; h < EM_LANES_F64; h += 8)
                k = em_erf_store_tails(tail, k, i + h, tails >> h);
    }
    *count = k;
    return i;
}
#endif

/* Each element whose value needs no exp (``out`` already holds the inner intervals'
 * values) gets its value, and each tail element its index in tail[]; returns the number
 * of tail elements: the vector scan, then the scalar one for what it leaves. */
static int64_t em_erf_scan_all(const double *restrict x, double *restrict out, int64_t n,
                               int64_t *restrict tail) {
    int64_t k = 0, done = 0;
#ifdef EM_ERF_HAVE_VECTOR_SCAN
    done = em_erf_vscan(x, out, n, tail, &k);
#endif
    return em_erf_scan(x, out, done, n, tail, k);
}

/* erf on every element whose value needs no exp, and each tail element's index in tail[];
 * returns the number of tail elements. The inner intervals over every element
 * (vectorised), then the scan. */
int64_t em_erf_split_f64(const double *restrict x, double *restrict out, int64_t n,
                         int64_t *restrict tail) {
    for (int64_t i = 0; i < n; i++)
        out[i] = em_erf_inner(x[i]);
    return em_erf_scan_all(x, out, n, tail);
}

/* GELU, 0.5 * x * (1 + erf(x / sqrt 2)), as nn/plain.py's gelu makes it: each product and
 * sum in the array's own type (NumPy's float32 ufuncs take the Python constants as float32).
 * What backward reads (nn/one_node_layers.py) is kept: scaled = x * (1/sqrt 2),
 * half = 0.5 * x, shifted = 1 + erf(scaled).
 * float64: em_gelu_split_f64 makes scaled, half and the erf of scaled but for its tails
 * (which em_erf_exponents_f64 and em_erf_finish_f64 on scaled complete, NumPy's exp between
 * them); em_gelu_finish_f64 makes shifted and out = half * shifted.
 * float32: em_gelu_f32, all of it in one pass (erf as the kernels compute it). */
#define EM_SQRT_HALF 0x1.6a09e667f3bccp-1          /* 1 / math.sqrt(2) */
#define EM_TWO_OVER_ROOT_PI 0x1.20dd750429b6dp+0   /* 2 / sqrt(pi), erf's derivative at 0 */

int64_t em_gelu_split_f64(const double *restrict x, double *restrict scaled,
                          double *restrict half, double *restrict erf_out, int64_t n,
                          int64_t *restrict tail) {
    for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        double s = v * EM_SQRT_HALF;
        scaled[i] = s;
        half[i] = 0.5 * v;
        erf_out[i] = em_erf_inner(s);
    }
    return em_erf_scan_all(scaled, erf_out, n, tail);
}

void em_gelu_finish_f64(const double *restrict half, double *restrict shifted,
                        double *restrict out, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        double e = 1.0 + shifted[i];
        shifted[i] = e;
        out[i] = half[i] * e;
    }
}

void em_gelu_f32(const float *restrict x, float *restrict scaled, float *restrict half,
                 float *restrict shifted, float *restrict out, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        float s = v * (float)EM_SQRT_HALF;
        float h = 0.5f * v;
        float e = 1.0f + em_erf_f32(s);
        scaled[i] = s;
        half[i] = h;
        shifted[i] = e;
        out[i] = h * e;
    }
}

void em_erf_array_f32(const float *restrict x, float *restrict out, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        out[i] = em_erf_f32(x[i]);
}

/* GELU's backward, both types: u = -(scaled * scaled), exponentiated by NumPy in place,
 * then the two gradients of x: ((g * half) * 2/sqrt(pi)) * exp(u) * (1/sqrt 2) through erf,
 * and (g * shifted) * 0.5 through 0.5 * x. */
#define EM_GELU_BACKWARD(T, SFX)                                                           \
    void em_gelu_square_##SFX(const T *restrict scaled, T *restrict u, int64_t n) {         \
        for (int64_t i = 0; i < n; i++)                                                    \
            u[i] = -(scaled[i] * scaled[i]);                                               \
    }                                                                                      \
    void em_gelu_grads_##SFX(const T *restrict g, const T *restrict half,                  \
                             const T *restrict shifted, const T *restrict exp_u,           \
                             T *restrict through_erf, T *restrict through_half, int64_t n) { \
        for (int64_t i = 0; i < n; i++) {                                                  \
            T a = g[i] * half[i];                                                          \
            a = a * (T)EM_TWO_OVER_ROOT_PI;                                                \
            a = a * exp_u[i];                                                              \
            through_erf[i] = a * (T)EM_SQRT_HALF;                                          \
            through_half[i] = (g[i] * shifted[i]) * (T)0.5;                                \
        }                                                                                  \
    }

/* The tail elements' two exponents (vectorised: both tail intervals computed, one taken). */
void em_erf_exponents_f64(const double *restrict x, const int64_t *restrict tail, int64_t k,
                          double *restrict e1, double *restrict e2) {
    for (int64_t j = 0; j < k; j++)
        em_erf_exponents(x[tail[j]], e1 + j, e2 + j);
}

/* The tail elements' erf from their factors f = exp(e1) * exp(e2): copysign(1 - f / a, x). */
void em_erf_finish_f64(const double *restrict x, double *restrict out, const int64_t *tail,
                       const double *restrict f, int64_t k) {
    for (int64_t j = 0; j < k; j++) {
        double v = x[tail[j]];
        out[tail[j]] = __builtin_copysign(1.0 - f[j] / __builtin_fabs(v), v);
    }
}

EM_GELU_BACKWARD(float, f32)
EM_GELU_BACKWARD(double, f64)
