/* execmode kernel prelude, shared by the C and the CUDA dialects.
 *
 * The op templates of execmode/ops call these helpers (em_max_f32, em_floordiv_i64, ...).
 * Every helper reproduces NumPy's result for the same inputs, NaN, Inf and -0.0 included:
 * the debugger hunts NaNs, so a kernel must never hide or invent one.
 *
 * The dialect header included before this one defines EM_FN (the helper qualifiers), the
 * integer types (em_int32, em_int64), EM_INF_* and the float math primitives (em_fabs_*,
 * em_floor_*, em_ceil_*, em_rint_*, em_sqrt_*, em_fmod_*, em_copysign_*, em_powf_*).
 * Integer arithmetic wraps around as NumPy's does: the C side compiles with -fwrapv.
 */

/* ---- predicates -------------------------------------------------------------------- */
#define EM_FLOAT_PREDICATES(sfx, T, INF)                                                  \
    EM_FN bool em_isnan_##sfx(T x) { return x != x; }                                     \
    EM_FN bool em_isinf_##sfx(T x) { return em_fabs_##sfx(x) == INF; }                    \
    EM_FN bool em_isfinite_##sfx(T x) { return em_fabs_##sfx(x) < INF; }
EM_FLOAT_PREDICATES(f32, float, EM_INF_F32)
EM_FLOAT_PREDICATES(f64, double, EM_INF_F64)

#define EM_EXACT_PREDICATES(sfx, T)                                                       \
    EM_FN bool em_isnan_##sfx(T x) { (void)x; return false; }                             \
    EM_FN bool em_isinf_##sfx(T x) { (void)x; return false; }                            \
    EM_FN bool em_isfinite_##sfx(T x) { (void)x; return true; }
EM_EXACT_PREDICATES(i32, em_int32)
EM_EXACT_PREDICATES(i64, em_int64)
EM_EXACT_PREDICATES(bool, bool)

/* ---- integer -> float conversions ----------------------------------------------------- */
/* An integer converts to +0.0, never -0.0, in NumPy as in C. But with -fno-trapping-math GCC
 * folds (float)(int64)x into truncf(x), which gives -0.0 for x in (-1, -0.0], and first drops
 * any "+ 0.0f" that would repair the sign, reasoning that an integer cannot convert to -0.0.
 * A select on the converted value survives the fold (and costs one blend when vectorised). */
#define EM_INT_TO_FLOAT(I, isfx, F, fsfx)                                                  \
    EM_FN F em_##isfx##_to_##fsfx(I v) { F r = (F)v; return r == (F)0 ? (F)0 : r; }
EM_INT_TO_FLOAT(em_int32, i32, float, f32)
EM_INT_TO_FLOAT(em_int32, i32, double, f64)
EM_INT_TO_FLOAT(em_int64, i64, float, f32)
EM_INT_TO_FLOAT(em_int64, i64, double, f64)

/* ---- maximum / minimum: NaN wins, as in np.maximum; ties return the second operand --- */
/* Both comparisons always run (| not ||): branch-free code that vectorises. */
#define EM_MINMAX(sfx, T)                                                                 \
    EM_FN T em_max_##sfx(T a, T b) { bool take_a = (a > b) | (a != a); return take_a ? a : b; } \
    EM_FN T em_min_##sfx(T a, T b) { bool take_a = (a < b) | (a != a); return take_a ? a : b; }
EM_MINMAX(f32, float)
EM_MINMAX(f64, double)
EM_MINMAX(i32, em_int32)
EM_MINMAX(i64, em_int64)
EM_MINMAX(bool, bool)

/* ---- abs, sign ------------------------------------------------------------------------ */
EM_FN float em_abs_f32(float x) { return em_fabs_f32(x); }
EM_FN double em_abs_f64(double x) { return em_fabs_f64(x); }
EM_FN em_int32 em_abs_i32(em_int32 x) { return x < 0 ? -x : x; }
EM_FN em_int64 em_abs_i64(em_int64 x) { return x < 0 ? -x : x; }
EM_FN bool em_abs_bool(bool x) { return x; }

/* np.sign: NaN stays NaN and both zeros give +0. */
#define EM_FLOAT_SIGN(sfx, T)                                                             \
    EM_FN T em_sign_##sfx(T x) {                                                          \
        bool positive = x > 0, negative = x < 0, zero = x == 0;                           \
        T r = zero ? (T)0 : x;                                                            \
        r = negative ? (T)-1 : r;                                                         \
        return positive ? (T)1 : r;                                                       \
    }
EM_FLOAT_SIGN(f32, float)
EM_FLOAT_SIGN(f64, double)
EM_FN em_int32 em_sign_i32(em_int32 x) { return (x > 0) - (x < 0); }
EM_FN em_int64 em_sign_i64(em_int64 x) { return (x > 0) - (x < 0); }
EM_FN bool em_sign_bool(bool x) { return x; }

/* ---- rounding of integers is the identity (np.floor keeps int dtypes) ---------------- */
#define EM_INT_ROUNDING(sfx, T)                                                           \
    EM_FN T em_floor_##sfx(T x) { return x; }                                             \
    EM_FN T em_ceil_##sfx(T x) { return x; }                                              \
    EM_FN T em_rint_##sfx(T x) { return x; }
EM_INT_ROUNDING(i32, em_int32)
EM_INT_ROUNDING(i64, em_int64)
EM_INT_ROUNDING(bool, bool)

/* ---- floor division and remainder --------------------------------------------------- */
/* NumPy's npy_divmod (numpy/_core/src/npymath/npy_math_internal.h.src), line by line, so
 * that signs of zeros, Inf and NaN results match: x // 0 is +-Inf or NaN, 5 // -inf is -1,
 * -0.0 % 3 is +0.0. */
#define EM_FLOAT_DIVMOD(sfx, T)                                                           \
    EM_FN T em_floordiv_##sfx(T a, T b) {                                                 \
        if (b == 0) return a / b;                                                         \
        T mod = em_fmod_##sfx(a, b);                                                      \
        T div = (a - mod) / b;                                                            \
        if (mod != 0) {                                                                   \
            if ((b < 0) != (mod < 0)) div -= (T)1;                                        \
        }                                                                                 \
        if (div != 0) {                                                                   \
            T floordiv = em_floor_##sfx(div);                                             \
            if (div - floordiv > (T)0.5) floordiv += (T)1;                                \
            return floordiv;                                                              \
        }                                                                                 \
        return em_copysign_##sfx((T)0, a / b);                                            \
    }                                                                                     \
    EM_FN T em_mod_##sfx(T a, T b) {                                                      \
        T mod = em_fmod_##sfx(a, b);                                                      \
        if (b == 0) return mod;                                                           \
        if (mod != 0) {                                                                   \
            if ((b < 0) != (mod < 0)) mod += b;                                           \
            return mod;                                                                   \
        }                                                                                 \
        return em_copysign_##sfx((T)0, b);                                                \
    }
EM_FLOAT_DIVMOD(f32, float)
EM_FLOAT_DIVMOD(f64, double)

/* Integers: x // 0 and x % 0 give 0 (NumPy warns and returns 0); MIN // -1 wraps to MIN.
 * The -1 case never reaches the hardware divide, which would trap on MIN / -1. */
#define EM_INT_DIVMOD(sfx, T)                                                             \
    EM_FN T em_floordiv_##sfx(T a, T b) {                                                 \
        if (b == 0) return 0;                                                             \
        if (b == -1) return -a;                                                           \
        T q = a / b;                                                                      \
        return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;                          \
    }                                                                                     \
    EM_FN T em_mod_##sfx(T a, T b) {                                                      \
        if (b == 0 || b == -1) return 0;                                                  \
        T r = a % b;                                                                      \
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;                              \
    }
EM_INT_DIVMOD(i32, em_int32)
EM_INT_DIVMOD(i64, em_int64)

/* ---- power ---------------------------------------------------------------------------- */
EM_FN float em_pow_f32(float a, float b) { return em_powf_f32(a, b); }
EM_FN double em_pow_f64(double a, double b) { return em_powf_f64(a, b); }

/* Integer power by squaring, wrapping like NumPy. NumPy raises for negative exponents
 * (eager refuses them); a kernel cannot raise, so the fusion pass keeps integer power out of
 * kernels (passes/fuse.py). Called anyway, it returns what 1 / a**-b truncates to. */
#define EM_INT_POW(sfx, T)                                                                \
    EM_FN T em_pow_##sfx(T a, T b) {                                                      \
        if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);                \
        T result = 1;                                                                     \
        while (b) {                                                                       \
            if (b & 1) result *= a;                                                       \
            a *= a;                                                                       \
            b >>= 1;                                                                      \
        }                                                                                 \
        return result;                                                                    \
    }
EM_INT_POW(i32, em_int32)
EM_INT_POW(i64, em_int64)
