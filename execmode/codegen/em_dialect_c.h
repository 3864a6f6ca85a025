/* execmode kernel prelude, C dialect (CPU): types, primitives and float math.
 *
 * Compiled without -ffast-math: NaN and Inf behave as in NumPy. What makes the loops
 * vectorise instead:
 *  - -fno-math-errno lets sqrt, floor, ceil, rint, fabs, copysign become vector
 *    instructions; -fno-trapping-math lets GCC if-convert selects (see toolchain.py);
 *  - exp, log, tanh, erf, expm1 and log1p in float32 are our own branch-free polynomial
 *    approximations below (the compiler inlines and vectorises them); their error bounds
 *    are measured against NumPy in tests/codegen/test_approximations.py and listed in
 *    docs/kernels.md. Every one handles NaN, +-Inf, -0.0 and subnormals like NumPy.
 *  - float64 transcendentals, sin/cos, fmod and pow call libm (correct to ~1 ulp, scalar).
 */
/* Whole 512-bit vectors where the machine has them: GCC's default for AVX-512 CPUs is 256
 * (older server parts lowered their clock for 512-bit work), which halves the width of
 * the compute-bound loops (the float32 erf/exp/tanh helpers below: a GELU's erf kernel
 * ~150 -> ~100 us on (16, 32, 256), docs/kernels.md). Before any function, so that every
 * kernel and the helpers inlined into it are compiled alike. */
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("prefer-vector-width=512")
#endif
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* always_inline: with plain inline, GCC stops inlining in a long fused chain (its
 * function-growth limits), the helpers become calls and the loop stays scalar. */
#define EM_FN static inline __attribute__((always_inline))
typedef int32_t em_int32;
typedef int64_t em_int64;
typedef uint32_t em_uint32;
#define EM_INF_F32 __builtin_inff()
#define EM_INF_F64 __builtin_inf()
#define EM_NAN_F32 __builtin_nanf("")
#define EM_NAN_F64 __builtin_nan("")

/* ---- primitives (builtins: inlined, vectorisable with -fno-math-errno) ---------------- */
EM_FN float em_fabs_f32(float x) { return __builtin_fabsf(x); }
EM_FN double em_fabs_f64(double x) { return __builtin_fabs(x); }
EM_FN float em_copysign_f32(float x, float s) { return __builtin_copysignf(x, s); }
EM_FN double em_copysign_f64(double x, double s) { return __builtin_copysign(x, s); }
EM_FN float em_floor_f32(float x) { return __builtin_floorf(x); }
EM_FN double em_floor_f64(double x) { return __builtin_floor(x); }
EM_FN float em_ceil_f32(float x) { return __builtin_ceilf(x); }
EM_FN double em_ceil_f64(double x) { return __builtin_ceil(x); }
EM_FN float em_rint_f32(float x) { return __builtin_rintf(x); }
EM_FN double em_rint_f64(double x) { return __builtin_rint(x); }
EM_FN float em_sqrt_f32(float x) { return __builtin_sqrtf(x); }
EM_FN double em_sqrt_f64(double x) { return __builtin_sqrt(x); }
EM_FN float em_fmod_f32(float a, float b) { return fmodf(a, b); }
EM_FN double em_fmod_f64(double a, double b) { return fmod(a, b); }
EM_FN float em_powf_f32(float a, float b) { return powf(a, b); }
EM_FN double em_powf_f64(double a, double b) { return pow(a, b); }

/* ---- float -> int conversions -------------------------------------------------------------- */
/* Out-of-range and NaN conversions are undefined in C (and GCC's constant folder saturates).
 * NumPy does what the hardware does: x86 gives the "integer indefinite" value INT_MIN,
 * AArch64 saturates (NaN -> 0). These helpers spell that out, so a kernel's result is
 * NumPy's on the same machine and never up to the optimiser. */
#if defined(__aarch64__) || defined(__arm__)
#define EM_FLOAT_TO_INT(name, F, I, LO, HI, IMIN, IMAX)                                   \
    EM_FN I name(F x) {                                                                   \
        bool low = x < LO, high = x >= HI, nan = x != x;                                  \
        F safe = (low | high | nan) ? (F)0 : x;                                           \
        I v = (I)safe;                                                                    \
        v = low ? IMIN : v;                                                               \
        return high ? IMAX : v;                                                           \
    }
#else
/* The conversion runs on an in-range value always (no UB, no branch to vectorise). */
#define EM_FLOAT_TO_INT(name, F, I, LO, HI, IMIN, IMAX)                                   \
    EM_FN I name(F x) {                                                                   \
        bool in_range = (x >= LO) & (x < HI);                                             \
        F safe = in_range ? x : (F)0;                                                     \
        I v = (I)safe;                                                                    \
        return in_range ? v : IMIN;                                                       \
    }
#endif
EM_FLOAT_TO_INT(em_f32_to_i32, float, em_int32, -2147483648.0f, 2147483648.0f, INT32_MIN,
                INT32_MAX)
EM_FLOAT_TO_INT(em_f64_to_i32, double, em_int32, -2147483648.0, 2147483648.0, INT32_MIN,
                INT32_MAX)
EM_FLOAT_TO_INT(em_f32_to_i64, float, em_int64, -9223372036854775808.0f,
                9223372036854775808.0f, INT64_MIN, INT64_MAX)
EM_FLOAT_TO_INT(em_f64_to_i64, double, em_int64, -9223372036854775808.0,
                9223372036854775808.0, INT64_MIN, INT64_MAX)

/* ---- float64: libm ----------------------------------------------------------------------- */
EM_FN double em_exp_f64(double x) { return exp(x); }
EM_FN double em_log_f64(double x) { return log(x); }
EM_FN double em_expm1_f64(double x) { return expm1(x); }
EM_FN double em_log1p_f64(double x) { return log1p(x); }
EM_FN double em_tanh_f64(double x) { return tanh(x); }
EM_FN double em_erf_f64(double x) { return erf(x); }
EM_FN double em_sin_f64(double x) { return sin(x); }
EM_FN double em_cos_f64(double x) { return cos(x); }
EM_FN float em_sin_f32(float x) { return sinf(x); }
EM_FN float em_cos_f32(float x) { return cosf(x); }

/* ---- float32 approximations ------------------------------------------------------------- */
/* One Horner step, p * x + c, as one fused multiply-add where the CPU has one (-march=native
 * on an FMA machine defines __FMA__). Kernels compile with -ffp-contract=off (toolchain.py)
 * so that GCC never fuses a multiply and an add of the user's program: inf - exp(inf) must
 * stay nan, as in NumPy. Inside these polynomials the arguments are bounded (or the result
 * is not selected), so a fused step only rounds once: the speed that contraction gave
 * (docs/performance.md) comes back without touching the user's arithmetic. Eager's float32
 * erf (native/eager_erf.c) defines EM_EXACT_FMA: fused steps on every machine (libm's fmaf
 * where the CPU has no FMA), the steps ops/erf_float32.py emulates exactly in NumPy. */
#if defined(__FMA__) || defined(EM_EXACT_FMA)
#define em_horner_f32(p, x, c) __builtin_fmaf((p), (x), (c))
#else
#define em_horner_f32(p, x, c) ((p) * (x) + (c))
#endif
/* Branch-free: every operation runs unconditionally and ?: only selects between computed
 * values, so that GCC if-converts and vectorises the loops they are inlined into. */
/* Bit casts through a union (defined behaviour in C; compiles to nothing). */
typedef union { float f; em_int32 i; em_uint32 u; } em_bits32;
EM_FN float em_f32_from_bits(em_uint32 u) { em_bits32 b; b.u = u; return b.f; }
EM_FN em_uint32 em_f32_bits(float f) { em_bits32 b; b.f = f; return b.u; }

/* exp(x - n ln2) for the integer n nearest x / ln2: r = x - n ln2 (Cody-Waite split of
 * ln2), |r| <= ln2/2, exp(r) = 1 + r + r^2 P(r) (degree 5, fitted near-minimax: 5e-11
 * relative before float32 rounding). */
EM_FN float em_exp_reduced_f32(float x, float n) {
    float r = x - n * 0.693145751953125f;
    r = r - n * 1.428606765330187045e-06f;
    float p = 1.9790357328020036e-04f;
    p = em_horner_f32(p, r, 1.3944649836048484e-03f);
    p = em_horner_f32(p, r, 8.3334967494010925e-03f);
    p = em_horner_f32(p, r, 4.1666295379400253e-02f);
    p = em_horner_f32(p, r, 1.6666665673255920e-01f);
    p = em_horner_f32(p, r, 0.5f);
    return 1.0f + (r + r * (r * p));
}

/* exp: exp(x - n ln2) times 2^n, built from bits in two halves so that subnormal results
 * round once. n is rounded to nearest by the 1.5 * 2^23 trick (exact without -ffast-math)
 * and also sits in the low bits of t, read as an integer without a float -> int
 * conversion. The clamp keeps NaN: comparisons with NaN are false. */
EM_FN float em_exp_f32(float x) {
    bool overflows = x > 88.8f;
    bool underflows = x < -104.0f;
    /* An underflowing x (below -104 exp rounds to +0, -inf included: a masked attention
     * score) computes from 0 and is replaced by 0 at the end: scaling from -104 made
     * products in the subnormal range, which cost the CPU a microcode assist per element
     * (a softmax over a causal mask ran ~6x slower). The same bits for every float. */
    float xc = overflows ? 88.8f : x;
    xc = underflows ? 0.0f : xc;
    float t = xc * 1.44269504088896341f + 12582912.0f;
    float y = em_exp_reduced_f32(xc, t - 12582912.0f);
    em_int32 ni = (em_int32)(em_f32_bits(t) - 0x4b400000u);
    em_int32 n1 = ni / 2;
    em_int32 n2 = ni - n1;
    float s1 = em_f32_from_bits((em_uint32)(n1 + 127) << 23);
    float s2 = em_f32_from_bits((em_uint32)(n2 + 127) << 23);
    float e = y * s1 * s2;
    return underflows ? 0.0f : e;
}

/* em_exp_f32 for an x its caller bounds to [-87, 87] (or NaN): tanh's 2|x| <= 20, erf's
 * Q(|x|) in [-17, -1.8]. 2^n is then a normal float and y * 2^n rounds as y * 2^n1 * 2^n2
 * does (each product is exact), so the bits are em_exp_f32's, without the clamps and the
 * split that only arguments outside that range need. */
EM_FN float em_exp_bounded_f32(float x) {
    float t = x * 1.44269504088896341f + 12582912.0f;
    float y = em_exp_reduced_f32(x, t - 12582912.0f);
    em_int32 ni = (em_int32)(em_f32_bits(t) - 0x4b400000u);
    return y * em_f32_from_bits((em_uint32)(ni + 127) << 23);
}

/* log: x = 2^e m with m in [sqrt(1/2), sqrt(2)), log(m) = f - f^2/2 + f^3 Q(f), f = m - 1
 * (Q of degree 8, 7.5e-10 relative before rounding), plus e ln2 in two parts. Subnormal
 * inputs are scaled by 2^23 first; zero, negatives, NaN and +Inf are selected at the end. */
EM_FN float em_log_f32(float x) {
    bool tiny = x < 1.17549435e-38f;
    float scaled = x * 8388608.0f;
    float xs = tiny ? scaled : x;
    em_uint32 ix = em_f32_bits(xs);
    float e = (float)((em_int32)((ix >> 23) & 0xff) - 127);
    float e_tiny = e - 23.0f;
    e = tiny ? e_tiny : e;
    float m = em_f32_from_bits((ix & 0x007fffffu) | 0x3f800000u);
    bool high = m > 1.41421356f;
    float m_half = m * 0.5f;
    float e_next = e + 1.0f;
    m = high ? m_half : m;
    e = high ? e_next : e;
    float f = m - 1.0f;
    float q = 6.7466013133525848e-02f;
    q = em_horner_f32(q, f, -1.1675640940666199e-01f);
    q = em_horner_f32(q, f, 1.1888174712657928e-01f);
    q = em_horner_f32(q, f, -1.2405591458082199e-01f);
    q = em_horner_f32(q, f, 1.4219550788402557e-01f);
    q = em_horner_f32(q, f, -1.6667996346950531e-01f);
    q = em_horner_f32(q, f, 2.0002119243144989e-01f);
    q = em_horner_f32(q, f, -2.5000008940696716e-01f);
    q = em_horner_f32(q, f, 3.3333313465118408e-01f);
    float f2 = f * f;
    float y = f * (f2 * q) - 0.5f * f2;
    y = y + e * -2.12194440e-4f;
    y = f + y;
    y = y + e * 0.693359375f;
    bool positive = x > 0.0f;
    bool zero = x == 0.0f;
    bool infinite = x == EM_INF_F32;
    float special = zero ? -EM_INF_F32 : EM_NAN_F32;
    y = positive ? y : special;
    return infinite ? x : y;
}

/* tanh: |x| < 0.55: x + x^3 P(x^2) (degree 4, 1e-9 relative before rounding);
 * else 1 - 2 / (exp(2|x|) + 1), clamped at |x| = 10 where tanh rounds to 1. tanh is odd:
 * the sign of x is copied at the end, which also keeps -0.0. */
EM_FN float em_tanh_f32(float x) {
    float a = em_fabs_f32(x);
    float x2 = x * x;
    float p = -6.2742433510720730e-03f;
    p = em_horner_f32(p, x2, 2.1071681752800941e-02f);
    p = em_horner_f32(p, x2, -5.3852312266826630e-02f);
    p = em_horner_f32(p, x2, 1.3332585990428925e-01f);
    p = em_horner_f32(p, x2, -3.3333316445350647e-01f);
    float small = a + a * (x2 * p);
    bool saturated = a > 10.0f;
    bool near_zero = a < 0.55f;
    float ac = saturated ? 10.0f : a;
    float e = em_exp_bounded_f32(2.0f * ac);
    float big = 1.0f - 2.0f / (e + 1.0f);
    return em_copysign_f32(near_zero ? small : big, x);
}

/* erf: |x| < 1: x + x P(x^2) (degree 6, 1.2e-9 relative before rounding; P's constant
 * term is 2/sqrt(pi) - 1, so that x, exact, is added last: x P(x^2) with 2/sqrt(pi) in the
 * polynomial rounded the constant to float32 and erred by up to 2.3 ulp);
 * 1 <= |x| <= 3.92: 1 - exp(Q(|x|)) with Q of degree 9 fitted to log(erfc) (4e-12 relative
 * in erf before rounding); beyond 3.92 erf rounds to +-1 in float32. Eager float32 erf and
 * GELU call this too (native/eager_erf.c; ops/erf_float32.py in NumPy): the same bits. */
EM_FN float em_erf_f32(float x) {
    float a = em_fabs_f32(x);
    float x2 = x * x;
    float p = 7.8540266258642077e-05f;
    p = em_horner_f32(p, x2, -8.0102478386834264e-04f);
    p = em_horner_f32(p, x2, 5.1883347332477570e-03f);
    p = em_horner_f32(p, x2, -2.6853816583752632e-02f);
    p = em_horner_f32(p, x2, 1.1283585429191589e-01f);
    p = em_horner_f32(p, x2, -3.7612625956535339e-01f);
    p = em_horner_f32(p, x2, 1.2837916709551257e-01f);
    float small = a + a * p;
    bool above = a > 3.92f;
    bool below = a < 1.0f;
    float t = above ? 3.92f : a;
    t = below ? 1.0f : t;
    float q = 7.9894272175806691e-07f;
    q = em_horner_f32(q, t, -1.2693669305008370e-05f);
    q = em_horner_f32(q, t, 6.6093874920625240e-05f);
    q = em_horner_f32(q, t, 9.4471091870218515e-05f);
    q = em_horner_f32(q, t, -3.3411611802875996e-03f);
    q = em_horner_f32(q, t, 2.3803757503628731e-02f);
    q = em_horner_f32(q, t, -1.0692477971315384e-01f);
    q = em_horner_f32(q, t, -6.3422209024429321e-01f);
    q = em_horner_f32(q, t, -1.1291933059692383e+00f);
    q = em_horner_f32(q, t, 1.2343005801085383e-04f);
    float big = 1.0f - em_exp_bounded_f32(q);
    return em_copysign_f32(below ? small : big, x);
}

/* expm1: |x| < 0.5: x + x^2/2 + x^3 P(x) (degree 5, 1e-10 relative before rounding);
 * else exp(x) - 1 (no harmful cancellation there). Sign copied from x, for -0.0. */
EM_FN float em_expm1_f32(float x) {
    float p = 2.4816106815706007e-05f;
    p = em_horner_f32(p, x, 1.9971690198872238e-04f);
    p = em_horner_f32(p, x, 1.3889144174754620e-03f);
    p = em_horner_f32(p, x, 8.3331493660807610e-03f);
    p = em_horner_f32(p, x, 4.1666664183139801e-02f);
    p = em_horner_f32(p, x, 1.6666667163372040e-01f);
    p = em_horner_f32(p, x, 0.5f);
    float small = x + x * (x * p);
    float big = em_exp_f32(x) - 1.0f;
    bool near_zero = em_fabs_f32(x) < 0.5f;
    bool zero = x == 0.0f;
    float r = near_zero ? small : big;
    return zero ? x : r;
}

/* log1p: Goldberg's trick, log(u) * x / (u - 1) with u = 1 + x, exact because u - 1 is. */
EM_FN float em_log1p_f32(float x) {
    float u = 1.0f + x;
    float r = em_log_f32(u) * (x / (u - 1.0f));
    bool exact = u == 1.0f;
    bool infinite = x == EM_INF_F32;
    r = exact ? x : r;
    return infinite ? x : r;
}
