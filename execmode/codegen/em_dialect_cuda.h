/* execmode kernel prelude, CUDA dialect: types, primitives and float math.
 *
 * CUDA's own math library is vectorised by construction (one thread per element) and
 * accurate to a few ulp, with IEEE NaN/Inf handling: the helpers map onto it directly.
 * Compiled without --use_fast_math, for the same reason the C side has no -ffast-math.
 * No #include: NVRTC (CuPy's RawModule) compiles this without the standard headers.
 */
#define EM_FN static __device__ __forceinline__
typedef int em_int32;
typedef long long em_int64;
typedef unsigned int em_uint32;
#define EM_INF_F32 __int_as_float(0x7f800000)
#define EM_INF_F64 __longlong_as_double(0x7ff0000000000000LL)
#define EM_NAN_F32 __int_as_float(0x7fffffff)
#define EM_NAN_F64 __longlong_as_double(0x7fffffffffffffffLL)

/* float -> int: CUDA's conversions saturate (NaN -> 0), as CuPy's astype does. */
EM_FN em_int32 em_f32_to_i32(float x) { return (em_int32)x; }
EM_FN em_int32 em_f64_to_i32(double x) { return (em_int32)x; }
EM_FN em_int64 em_f32_to_i64(float x) { return (em_int64)x; }
EM_FN em_int64 em_f64_to_i64(double x) { return (em_int64)x; }

EM_FN float em_fabs_f32(float x) { return fabsf(x); }
EM_FN double em_fabs_f64(double x) { return fabs(x); }
EM_FN float em_copysign_f32(float x, float s) { return copysignf(x, s); }
EM_FN double em_copysign_f64(double x, double s) { return copysign(x, s); }
EM_FN float em_floor_f32(float x) { return floorf(x); }
EM_FN double em_floor_f64(double x) { return floor(x); }
EM_FN float em_ceil_f32(float x) { return ceilf(x); }
EM_FN double em_ceil_f64(double x) { return ceil(x); }
EM_FN float em_rint_f32(float x) { return rintf(x); }
EM_FN double em_rint_f64(double x) { return rint(x); }
EM_FN float em_sqrt_f32(float x) { return sqrtf(x); }
EM_FN double em_sqrt_f64(double x) { return sqrt(x); }
EM_FN float em_fmod_f32(float a, float b) { return fmodf(a, b); }
EM_FN double em_fmod_f64(double a, double b) { return fmod(a, b); }
EM_FN float em_powf_f32(float a, float b) { return powf(a, b); }
EM_FN double em_powf_f64(double a, double b) { return pow(a, b); }

#define EM_CUDA_MATH(name, f32_fn, f64_fn)                                                \
    EM_FN float em_##name##_f32(float x) { return f32_fn(x); }                            \
    EM_FN double em_##name##_f64(double x) { return f64_fn(x); }
EM_CUDA_MATH(exp, expf, exp)
EM_CUDA_MATH(log, logf, log)
EM_CUDA_MATH(expm1, expm1f, expm1)
EM_CUDA_MATH(log1p, log1pf, log1p)
EM_CUDA_MATH(tanh, tanhf, tanh)
EM_CUDA_MATH(erf, erff, erf)
EM_CUDA_MATH(sin, sinf, sin)
EM_CUDA_MATH(cos, cosf, cos)
