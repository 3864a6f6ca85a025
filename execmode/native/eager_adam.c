/* Adam's and AdamW's update of one parameter in one pass over its arrays
 * (execmode/optim/plain.py's _adam_chunk): per element, the same float operations in the
 * same order, each rounded to the parameter's dtype (compiled without contraction or
 * fast-math), so the same bits as the NumPy passes, which each stream the arrays again.
 *
 * c: beta1, beta2, 1 - beta1, 1 - beta2, bias1, bias2, lr, eps, shrink (1 - lr * decay,
 * AdamW), decay (Adam's L2 term); flags: 1 maximize, 2 shrink, 4 add decay. amsgrad is
 * left to NumPy (its maximum's NaN rule). */
#include <math.h>
#include <stdint.h>

#define EM_ADAM(T, SFX, SQRT)                                                             \
    void em_adam_##SFX(T *p, const T *g, T *m, T *v, int64_t n, const T *c, int flags) {  \
        const T beta1 = c[0], beta2 = c[1], k1 = c[2], k2 = c[3], bias1 = c[4],          \
                bias2 = c[5], lr = c[6], eps = c[7], shrink = c[8], decay = c[9];        \
        for (int64_t i = 0; i < n; ++i) {                                                \
            T gi = g[i], pi = p[i];                                                      \
            if (flags & 1)                                                               \
                gi = -gi;                                                                \
            if (flags & 2)                                                               \
                pi = pi * shrink;                                                        \
            else if (flags & 4)                                                          \
                gi = gi + decay * pi;                                                    \
            const T mi = beta1 * m[i] + k1 * gi;                                         \
            const T t = k2 * gi;                                                         \
            const T vi = beta2 * v[i] + t * gi;                                          \
            m[i] = mi;                                                                   \
            v[i] = vi;                                                                   \
            const T s1 = SQRT(vi / bias2) + eps;                                         \
            p[i] = pi - (lr * (mi / bias1)) / s1;                                        \
        }                                                                                \
    }

EM_ADAM(float, f32, sqrtf)
EM_ADAM(double, f64, sqrt)

/* A group's parameters in one call: ptrs holds each parameter's (p, g, m, v), n their
 * sizes. The parameters share no memory (optim/plain.py checks), so their order is free. */
#define EM_ADAM_MANY(T, SFX)                                                              \
    void em_adam_many_##SFX(int64_t count, void *const *ptrs, const int64_t *n,          \
                            const T *c, int flags) {                                     \
        for (int64_t j = 0; j < count; ++j)                                              \
            em_adam_##SFX((T *)ptrs[4 * j], (const T *)ptrs[4 * j + 1],                  \
                          (T *)ptrs[4 * j + 2], (T *)ptrs[4 * j + 3], n[j], c, flags);   \
    }

EM_ADAM_MANY(float, f32)
EM_ADAM_MANY(double, f64)
