/* NumPy's pairwise summation (numpy/_core/src/umath/loops_utils.h.src, pairwise_sum),
 * for kernels summing an output again as eager does once its values could overflow
 * (eager_sum.py, render_reduction.py's eager_resum). The same additions in the same
 * order, in the array's own type: under 8 values one after another from -0.0; up to 128
 * in 8 interleaved accumulators combined as a tree; above that, two halves (the first a
 * multiple of 8) summed the same way. No fast-math: the compiler keeps this order. C only. */
#include <stdlib.h>

#define EM_PAIRWISE_SUM(sfx, T)                                                           \
    static T em_pairwise_sum_##sfx(const T *a, int64_t n)                                 \
    {                                                                                     \
        if (n < 8) {                                                                      \
            T res = -0.0;                                                                 \
            for (int64_t i = 0; i < n; ++i)                                               \
                res += a[i];                                                              \
            return res;                                                                   \
        }                                                                                 \
        if (n <= 128) {                                                                   \
            T r[8];                                                                       \
            for (int j = 0; j < 8; ++j)                                                   \
                r[j] = a[j];                                                              \
            int64_t i = 8;                                                                \
            for (; i < n - (n % 8); i += 8)                                               \
                for (int j = 0; j < 8; ++j)                                               \
                    r[j] += a[i + j];                                                     \
            T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));  \
            for (; i < n; ++i)                                                            \
                res += a[i];                                                              \
            return res;                                                                   \
        }                                                                                 \
        int64_t half = n / 2;                                                             \
        half -= half % 8;                                                                 \
        return em_pairwise_sum_##sfx(a, half) + em_pairwise_sum_##sfx(a + half, n - half); \
    }
EM_PAIRWISE_SUM(f32, float)
EM_PAIRWISE_SUM(f64, double)
