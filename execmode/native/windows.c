/* Sliding windows over float32/float64 images: max pooling (execmode/ops/pooling.py) and
 * im2col/col2im (execmode/ops/conv.py). Each op keeps its NumPy version of the same rule
 * (the reference, and the path without a compiler or on a GPU); these give its bits.
 *
 * The images are (planes, h, w), C-contiguous; a window starts every (sh, sw) positions at
 * (-ph, -pw) and reads (kh, kw) positions spaced (dh, dw) apart. A window's maximum is its
 * first maximum in row-major order over the positions inside the image (padding is never
 * chosen: every window holds at least one image position), and the first NaN wins, as
 * NumPy's argmax finds them. dims: planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
} em_pool_dims;

/* The window's offsets [*lo, *hi) along one axis that land inside [0, size). */
static inline void em_inside(int64_t start, int64_t k, int64_t step, int64_t size,
                             int64_t *lo, int64_t *hi) {
    int64_t a = start >= 0 ? 0 : (-start + step - 1) / step;
    int64_t b = start + (k - 1) * step < size ? k : (size - 1 - start) / step + 1;
    *lo = a;
    *hi = b;
}

/* Each window column's offsets inside the image, computed once per call (they take
 * divisions, which per window would cost as much as the window's comparisons). */
typedef struct {
    int64_t left, j0, j1;
} em_window_columns;

static em_window_columns *em_columns(const em_pool_dims *d) {
    em_window_columns *c = malloc((size_t)d->ow * sizeof *c);
    if (!c) return 0;
    for (int64_t ox = 0; ox < d->ow; ox++) {
        c[ox].left = ox * d->sw - d->pw;
        em_inside(c[ox].left, d->kw, d->dw, d->w, &c[ox].j0, &c[ox].j1);
    }
    return c;
}

/* The flat index (y * w + x) of a window's first maximum in one image: the window's
 * rows [i0, i1) from ``top``, its columns ``c``. The dims are a local copy in the
 * callers, so that no store makes the compiler reload them. */
#define EM_DEFINE_ARGMAX(T)                                                             \
    static inline int64_t em_window_argmax_##T(const T *x, const em_pool_dims *d,        \
                                               int64_t top, int64_t i0, int64_t i1,      \
                                               const em_window_columns *c) {             \
        const int64_t left = c->left, j0 = c->j0, j1 = c->j1;                            \
        int64_t best_at = (top + i0 * d->dh) * d->w + left + j0 * d->dw;                 \
        T best = x[best_at];                                                             \
        int nan = 0;                                                                     \
        /* Without branches on the values (random data mispredicts them half the time):  \
         * the first maximum by a strict >, then, only where a NaN was seen, the first   \
         * NaN. */                                                                       \
        for (int64_t i = i0; i < i1; i++) {                                              \
            const int64_t row = (top + i * d->dh) * d->w + left;                         \
            for (int64_t j = j0; j < j1; j++) {                                          \
                const int64_t at = row + j * d->dw;                                      \
                const T v = x[at];                                                       \
                const int more = v > best;                                               \
                best_at = more ? at : best_at;                                           \
                best = more ? v : best;                                                  \
                nan |= v != v;                                                           \
            }                                                                            \
        }                                                                                \
        if (nan)                                                                         \
            for (int64_t i = i0; i < i1; i++)                                            \
                for (int64_t j = j0; j < j1; j++) {                                      \
                    const int64_t at = (top + i * d->dh) * d->w + left + j * d->dw;      \
                    if (x[at] != x[at]) return at;                                       \
                }                                                                        \
        return best_at;                                                                  \
    }

/* Calls BODY for every window (plane p, row oy, column ox) with ``at``, its maximum's
 * flat index in plane p. Returns -1 when out of memory, else 0. */
#define EM_FOR_EACH_WINDOW(T, x, dims, BODY)                                            \
    em_pool_dims d;                                                                      \
    memcpy(&d, dims, sizeof d);                                                          \
    em_window_columns *columns = em_columns(&d);                                         \
    if (!columns) return -1;                                                             \
    const int64_t image = d.h * d.w, pooled = d.oh * d.ow;                               \
    for (int64_t p = 0; p < d.planes; p++) {                                             \
        const T *xp = x + p * image;                                                     \
        for (int64_t oy = 0; oy < d.oh; oy++) {                                          \
            const int64_t top = oy * d.sh - d.ph;                                        \
            int64_t i0, i1;                                                              \
            em_inside(top, d.kh, d.dh, d.h, &i0, &i1);                                   \
            for (int64_t ox = 0; ox < d.ow; ox++) {                                      \
                const int64_t at = em_window_argmax_##T(xp, &d, top, i0, i1,             \
                                                        columns + ox);                   \
                BODY;                                                                    \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    free(columns);                                                                       \
    return 0

/* 2x2 windows at stride 2, no padding or dilation, all inside the image: the common max
 * pool, whose windows tile the image. The general walk's bounds and offsets per window
 * cost more than the window's four comparisons, so where no NaN is in the image (the
 * general walk finds the first NaN), a row of these windows has a loop of its own,
 * vectorised, with the same rule. */
static inline int em_tiled_2x2(const int64_t *dims) {
    em_pool_dims d;
    memcpy(&d, dims, sizeof d);
    return d.kh == 2 && d.kw == 2 && d.sh == 2 && d.sw == 2 && d.ph == 0 && d.pw == 0 &&
           d.dh == 1 && d.dw == 1 && 2 * d.oh <= d.h && 2 * d.ow <= d.w;
}

/* em_fast_2x2_T: whether x's windows take the rows below (tiled 2x2, no NaN in x).
 * One row of 2x2 windows: rows x0 and x1 of x (h0, h1 of h), ow windows. Written as
 * selects on comparisons, without branches, so that the compiler vectorises it; for
 * images without NaN. b wins over a by b > a, c over both by c > their maximum, e over
 * all three likewise: the first maximum in row-major order. */
#define EM_DEFINE_ROW_2X2(T)                                                            \
    static inline int em_fast_2x2_##T(const T *x, const int64_t *dims) {                \
        if (!em_tiled_2x2(dims)) return 0;                                               \
        int nan = 0;                                                                     \
        for (int64_t i = 0, n = dims[0] * dims[1] * dims[2]; i < n; i++)                 \
            nan |= x[i] != x[i];                                                         \
        return !nan;                                                                     \
    }                                                                                    \
    static inline void em_select_row_2x2_##T(const T *restrict x0, const T *restrict x1,  \
                                            const T *restrict h0, const T *restrict h1,  \
                                            T *restrict out, int64_t ow) {               \
        for (int64_t ox = 0; ox < ow; ox++) {                                            \
            const T a = x0[2 * ox], b = x0[2 * ox + 1], c = x1[2 * ox], e = x1[2 * ox + 1]; \
            const T ha = h0[2 * ox], hb = h0[2 * ox + 1], hc = h1[2 * ox];               \
            const T he = h1[2 * ox + 1];                                                 \
            const T ab = b > a ? b : a;                                                  \
            const T abc = c > ab ? c : ab;                                               \
            T v = b > a ? hb : ha;                                                       \
            v = c > ab ? hc : v;                                                         \
            out[ox] = e > abc ? he : v;                                                  \
        }                                                                                \
    }                                                                                    \
    static inline void em_scatter_row_2x2_##T(const T *restrict x0, const T *restrict x1, \
                                             const T *restrict g, T *restrict o0,        \
                                             T *restrict o1, int64_t ow) {               \
        const T zero = 0;                                                                \
        for (int64_t ox = 0; ox < ow; ox++) {                                            \
            const T a = x0[2 * ox], b = x0[2 * ox + 1], c = x1[2 * ox], e = x1[2 * ox + 1]; \
            const T ab = b > a ? b : a;                                                  \
            const T abc = c > ab ? c : ab;                                               \
            /* zero + g, as the general path adds g into zeros (-0.0 becomes +0.0) */    \
            const T add = zero + g[ox];                                                  \
            const T p0 = b > a ? zero : add, p1 = b > a ? add : zero;                    \
            const T q0 = c > ab ? zero : p0, q1 = c > ab ? zero : p1;                    \
            const T q2 = c > ab ? add : zero;                                            \
            const int last = e > abc;                                                    \
            o0[2 * ox] = last ? zero : q0;                                               \
            o0[2 * ox + 1] = last ? zero : q1;                                           \
            o1[2 * ox] = last ? zero : q2;                                               \
            o1[2 * ox + 1] = last ? add : zero;                                          \
        }                                                                                \
    }

/* Every row of 2x2 windows (plane p, row oy): ``top``, its first image row's offset. */
#define EM_FOR_EACH_2X2_ROW(dims, BODY)                                                 \
    const int64_t h = dims[1], w = dims[2], oh = dims[3], ow = dims[4];                  \
    for (int64_t p = 0; p < dims[0]; p++)                                                \
        for (int64_t oy = 0; oy < oh; oy++) {                                            \
            const int64_t top = p * h * w + 2 * oy * w, row = (p * oh + oy) * ow;        \
            BODY;                                                                        \
        }

/* out[window] = h[the window's first maximum in x]; index (or NULL) gets that position. */
#define EM_DEFINE_SELECT(T, SFX)                                                        \
    static void em_max_pool_select_2x2_##SFX(const T *h_in, const T *x, T *out,          \
                                             const int64_t *dims) {                      \
        EM_FOR_EACH_2X2_ROW(dims, em_select_row_2x2_##T(x + top, x + top + w, h_in + top, \
                                                        h_in + top + w, out + row, ow)); \
    }                                                                                    \
    int em_max_pool_select_##SFX(const T *h_in, const T *x, T *out, int64_t *index,     \
                                 const int64_t *dims) {                                  \
        if (!index && em_fast_2x2_##T(x, dims)) {                                        \
            em_max_pool_select_2x2_##SFX(h_in, x, out, dims);                            \
            return 0;                                                                    \
        }                                                                                \
        EM_FOR_EACH_WINDOW(T, x, dims, {                                                 \
            const int64_t o = p * pooled + oy * d.ow + ox;                               \
            out[o] = h_in[p * image + at];                                               \
            if (index) index[o] = at;                                                    \
        });                                                                              \
    }

/* out = zeros of x's shape, then g[window] added at the window's first maximum in x, the
 * windows in row-major order (where windows overlap, that is the order of the sums). */
#define EM_DEFINE_SCATTER(T, SFX)                                                       \
    static void em_max_pool_scatter_2x2_##SFX(const T *g, const T *x, T *out,           \
                                              const int64_t *dims) {                     \
        EM_FOR_EACH_2X2_ROW(dims, em_scatter_row_2x2_##T(x + top, x + top + w, g + row,   \
                                                         out + top, out + top + w, ow)); \
    }                                                                                    \
    int em_max_pool_scatter_##SFX(const T *g, const T *x, T *out, const int64_t *dims) {  \
        const size_t bytes = (size_t)(dims[0] * dims[1] * dims[2]) * sizeof(T);          \
        if (em_fast_2x2_##T(x, dims)) {                                                  \
            /* its windows write every position they cover, zeros too */                 \
            if (dims[1] != 2 * dims[3] || dims[2] != 2 * dims[4])                        \
                memset(out, 0, bytes);                                                   \
            em_max_pool_scatter_2x2_##SFX(g, x, out, dims);                              \
            return 0;                                                                    \
        }                                                                                \
        memset(out, 0, bytes);                                                           \
        EM_FOR_EACH_WINDOW(T, x, dims,                                                   \
                           out[p * image + at] += g[p * pooled + oy * d.ow + ox]);       \
    }

EM_DEFINE_ARGMAX(float)
EM_DEFINE_ARGMAX(double)
EM_DEFINE_ROW_2X2(float)
EM_DEFINE_ROW_2X2(double)
EM_DEFINE_SELECT(float, f32)
EM_DEFINE_SELECT(double, f64)
EM_DEFINE_SCATTER(float, f32)
EM_DEFINE_SCATTER(double, f64)

/* im2col of padded images: cols (planes, kh, kw, oh, ow), each window position's values
 * copied (ph, pw unused: the caller pads). */
#define EM_DEFINE_IM2COL(T, SFX)                                                        \
    void em_im2col_##SFX(const T *x, T *cols, const int64_t *dims) {                     \
        em_pool_dims d;                                                                  \
        memcpy(&d, dims, sizeof d);                                                      \
        const int64_t image = d.h * d.w, length = d.oh * d.ow;                           \
        for (int64_t p = 0; p < d.planes; p++)                                           \
            for (int64_t i = 0; i < d.kh; i++)                                           \
                for (int64_t j = 0; j < d.kw; j++) {                                     \
                    T *row = cols + ((p * d.kh + i) * d.kw + j) * length;                \
                    const T *src = x + p * image + i * d.dh * d.w + j * d.dw;            \
                    for (int64_t oy = 0; oy < d.oh; oy++) {                              \
                        const T *line = src + oy * d.sh * d.w;                           \
                        T *to = row + oy * d.ow;                                         \
                        if (d.sw == 1)                                                   \
                            memcpy(to, line, (size_t)d.ow * sizeof(T));                  \
                        else                                                             \
                            for (int64_t ox = 0; ox < d.ow; ox++) to[ox] = line[ox * d.sw]; \
                    }                                                                    \
                }                                                                        \
    }

/* col2im, im2col's adjoint: each image starts at +0.0, then the columns of each window
 * offset (i, j), in row-major order of the offsets, are added where they were read from:
 * every position gets its sums in the order of NumPy's strided adds (one add per offset
 * over the whole batch), so the same bits. */
#define EM_DEFINE_COL2IM(T, SFX)                                                        \
    void em_col2im_##SFX(const T *cols, T *out, const int64_t *dims) {                   \
        em_pool_dims d;                                                                  \
        memcpy(&d, dims, sizeof d);                                                      \
        const int64_t image = d.h * d.w, length = d.oh * d.ow;                           \
        memset(out, 0, (size_t)(d.planes * image) * sizeof(T));                          \
        for (int64_t p = 0; p < d.planes; p++)                                           \
            for (int64_t i = 0; i < d.kh; i++)                                           \
                for (int64_t j = 0; j < d.kw; j++) {                                     \
                    const T *row = cols + ((p * d.kh + i) * d.kw + j) * length;          \
                    T *dst = out + p * image + i * d.dh * d.w + j * d.dw;                \
                    for (int64_t oy = 0; oy < d.oh; oy++) {                              \
                        T *line = dst + oy * d.sh * d.w;                                 \
                        const T *from = row + oy * d.ow;                                 \
                        if (d.sw == 1)                                                   \
                            for (int64_t ox = 0; ox < d.ow; ox++) line[ox] += from[ox];  \
                        else                                                             \
                            for (int64_t ox = 0; ox < d.ow; ox++)                        \
                                line[ox * d.sw] += from[ox];                             \
                    }                                                                    \
                }                                                                        \
    }

EM_DEFINE_IM2COL(float, f32)
EM_DEFINE_IM2COL(double, f64)
EM_DEFINE_COL2IM(float, f32)
EM_DEFINE_COL2IM(double, f64)
