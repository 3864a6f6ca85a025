/* erf of float32/float64 arrays on fdlibm's two inner intervals (|x| < 1.25), for
 * execmode/ops/erf.py: the same double operations, in the same order, as its NumPy
 * version (Horner's rule as _poly writes it, no FMA: -ffp-contract=off), so the same
 * bits; vectorised. Elements with |x| >= 1.25 or NaN get a meaningless value here: the
 * caller computes those with NumPy. */
#include <math.h>
#include <stdint.h>

static inline __attribute__((always_inline)) double em_erf_inner(double v) {
    double a = __builtin_fabs(v);
    double z = v * v;
    double s = a - 1.0;
    double p = z * -2.3763016656650163e-05;
    p = p + -0.005770270296489442;
    p = p * z;
    p = p + -0.02848174957559851;
    p = p * z;
    p = p + -0.3250421072470015;
    p = p * z;
    p = p + 0.12837916709551256;
    double q = z * -3.960228278775368e-06;
    q = q + 0.00013249473800432164;
    q = q * z;
    q = q + 0.005081306281875766;
    q = q * z;
    q = q + 0.0650222499887673;
    q = q * z;
    q = q + 0.39791722395915535;
    q = q * z;
    q = q + 1.0;
    double pa = s * -0.002166375594868791;
    pa = pa + 0.035478304325618236;
    pa = pa * s;
    pa = pa + -0.11089469428239668;
    pa = pa * s;
    pa = pa + 0.31834661990116175;
    pa = pa * s;
    pa = pa + -0.3722078760357013;
    pa = pa * s;
    pa = pa + 0.41485611868374833;
    pa = pa * s;
    pa = pa + -0.0023621185607526594;
    double qa = s * 0.011984499846799107;
    qa = qa + 0.01363708391202905;
    qa = qa * s;
    qa = qa + 0.12617121980876164;
    qa = qa * s;
    qa = qa + 0.07182865441419627;
    qa = qa * s;
    qa = qa + 0.540397917702171;
    qa = qa * s;
    qa = qa + 0.10642088040084423;
    qa = qa * s;
    qa = qa + 1.0;
    double small = p / q;
    small = small * v;
    small = small + v;
    double mid = 0.8450629115104675 + pa / qa;
    mid = __builtin_copysign(mid, v);
    return a < 0.84375 ? small : mid;
}

void em_erf_inner_f32(const float *restrict x, float *restrict out, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        out[i] = (float)em_erf_inner((double)x[i]);
}

void em_erf_inner_f64(const double *restrict x, double *restrict out, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        out[i] = em_erf_inner(x[i]);
}
