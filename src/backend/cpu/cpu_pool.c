/* The CPU's pooling entry (ct_backend.pool2d): float32 and float64 max and average pooling,
 * forward and backward, as plain loops over each plane, with the common small windows (2x2, 3x3)
 * unrolled by the compiler and no window clipping where a window lies inside the input.
 *
 * Why not oneDNN's pooling: on NCHW tensors oneDNN 2.6 runs its reference `simple_nchw` kernel
 * (tens of milliseconds for the digits cnn's pooling at batch 512 on 2 Zen 3 cores, 10x the
 * dialect kernel), its max pooling starts from -FLT_MAX (a window of -inf gave -3.4e38 where
 * PyTorch gives -inf) and skips NaN where PyTorch's returns it, and its workspace holds positions
 * in the window, not ct_max_pool2d_with_indices' h * W + w. Why not the dialect kernels
 * (kernels/nn.ct): their work item is an output row (or an input row backward), found by
 * divisions and walked with windows clipped at run time; on the cnn's 4- and 2-wide rows that
 * overhead is the work (38% of a training step at batch 512).
 *
 * Results are the dialect kernels' bits: every element is computed from the same terms in the
 * same order (max: the window in (h, w) order, the first largest wins, a NaN always; backward:
 * an input element sums its contributions in (oh, ow) order, here scattered plane by plane in
 * that order, there gathered). tests/backend/test_cpu_engines_agree.c checks it. */
#include <stdint.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_engine_choice.h"
#include "backend/cpu/cpu_launcher.h"
#include "core/core_internal.h"

typedef struct geometry {
    long h, w, oh, ow, kh, kw, sh, sw, ph, pw;
    int include_pad;
} geometry;

/* The window of output o along a dim, clipped to the input: [*begin, *end); returns its length
 * clipped to the padded input (count_include_pad's divisor). As ct_nn_window in kernels/nn.ct. */
static inline long window(long o, long k, long s, long pad, long size, long *begin, long *end)
{
    long b = o * s - pad;
    long e = b + k < size + pad ? b + k : size + pad;
    *begin = b > 0 ? b : 0;
    *end = e < size ? e : size;
    return e - b;
}

/* The outputs along a dim whose windows lie wholly inside the input: [*first, *last). */
static inline void inner_outputs(long k, long s, long pad, long size, long out, long *first, long *last)
{
    long f = (pad + s - 1) / s;
    long l = size - k + pad >= 0 ? (size - k + pad) / s + 1 : 0;
    *first = f < out ? f : out;
    *last = l < out ? l : out;
    if (*last < *first) *last = *first;
}

/* mask (all ones or zero) ? a : b on the values' bits: a compare's result as a mask, where
 * `take ? a : b` became a branch per element, mispredicted on data as often as not (a window's
 * largest element is anywhere), which took most of the time. */
static inline float select_f32(long mask, float a, float b)
{
    uint32_t ua, ub, m = (uint32_t)mask;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    uint32_t r = (ua & m) | (ub & ~m);
    float out;
    memcpy(&out, &r, sizeof out);
    return out;
}

static inline double select_f64(long mask, double a, double b)
{
    uint64_t ua, ub, m = (uint64_t)mask;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    uint64_t r = (ua & m) | (ub & ~m);
    double out;
    memcpy(&out, &r, sizeof out);
    return out;
}

/* The planes a block's vectors hold (GCC's and clang's vector types: whatever the machine's
 * registers, each lane computes as the scalar code does), and integers of the same width for the
 * compares' masks and the maxima's positions (int32: a block needs planes below 2^31 elements). */
#define LANES_f32 8
#define LANES_f64 4
typedef float VT_f32 __attribute__((vector_size(4 * LANES_f32)));
typedef int32_t IT_f32 __attribute__((vector_size(4 * LANES_f32)));
typedef double VT_f64 __attribute__((vector_size(8 * LANES_f64)));
typedef int64_t IT_f64 __attribute__((vector_size(8 * LANES_f64)));
typedef int32_t IE_f32;
typedef int64_t IE_f64;

#define CT_DEFINE_CPU_POOL(T, S)                                                                 \
    /* The largest of a window at base (rows W apart), first wins, NaN always. */               \
    static inline __attribute__((always_inline)) void max_window_##S(                            \
        const T *base, long W, long kh, long kw, T *value, long *at)                             \
    {                                                                                            \
        T m = base[0];                                                                           \
        long best = 0;                                                                           \
        for (long i = 0; i < kh; i++)                                                            \
            for (long j = 0; j < kw; j++) {                                                      \
                T v = base[i * W + j];                                                           \
                long take = -(long)((v > m) | (v != v)); /* all ones or zero */                  \
                best ^= (best ^ (i * W + j)) & take;                                             \
                m = select_##S(take, v, m);                                                      \
            }                                                                                    \
        *value = m;                                                                              \
        *at = best;                                                                              \
    }                                                                                            \
                                                                                                 \
    /* Windows kh x kw inside the input, of output row oh, outputs [first, last). */             \
    static inline __attribute__((always_inline)) void max_inner_##S(                            \
        const T *in, T *out, int64_t *chosen, const geometry *g, long oh, long first, long last, \
        long kh, long kw)                                                                        \
    {                                                                                            \
        long top = oh * g->sh - g->ph;                                                           \
        for (long ow = first; ow < last; ow++) {                                                 \
            long corner = top * g->w + ow * g->sw - g->pw;                                       \
            T m;                                                                                 \
            long at;                                                                             \
            max_window_##S(in + corner, g->w, kh, kw, &m, &at);                                  \
            out[ow] = m;                                                                         \
            chosen[ow] = corner + at;                                                            \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* One output of a window clipped by the input's edges. */                                   \
    static void max_clipped_##S(const T *in, T *out, int64_t *chosen, const geometry *g, long oh, \
                                long ow)                                                         \
    {                                                                                            \
        long h0, h1, w0, w1;                                                                     \
        window(oh, g->kh, g->sh, g->ph, g->h, &h0, &h1);                                         \
        window(ow, g->kw, g->sw, g->pw, g->w, &w0, &w1);                                         \
        T m;                                                                                     \
        long at;                                                                                 \
        max_window_##S(in + h0 * g->w + w0, g->w, h1 - h0, w1 - w0, &m, &at);                    \
        out[ow] = m;                                                                             \
        chosen[ow] = h0 * g->w + w0 + at;                                                        \
    }                                                                                            \
                                                                                                 \
    static void max_plane_##S(const T *in, T *out, int64_t *chosen, const geometry *g)           \
    {                                                                                            \
        long oh_first, oh_last, ow_first, ow_last;                                               \
        inner_outputs(g->kh, g->sh, g->ph, g->h, g->oh, &oh_first, &oh_last);                    \
        inner_outputs(g->kw, g->sw, g->pw, g->w, g->ow, &ow_first, &ow_last);                    \
        for (long oh = 0; oh < g->oh; oh++, out += g->ow, chosen += g->ow) {                     \
            if (oh < oh_first || oh >= oh_last) {                                                \
                for (long ow = 0; ow < g->ow; ow++) max_clipped_##S(in, out, chosen, g, oh, ow);  \
                continue;                                                                        \
            }                                                                                    \
            for (long ow = 0; ow < ow_first; ow++) max_clipped_##S(in, out, chosen, g, oh, ow);   \
            if (g->kh == 2 && g->kw == 2)                                                        \
                max_inner_##S(in, out, chosen, g, oh, ow_first, ow_last, 2, 2);                  \
            else if (g->kh == 3 && g->kw == 3)                                                   \
                max_inner_##S(in, out, chosen, g, oh, ow_first, ow_last, 3, 3);                  \
            else                                                                                 \
                max_inner_##S(in, out, chosen, g, oh, ow_first, ow_last, g->kh, g->kw);          \
            for (long ow = ow_last; ow < g->ow; ow++) max_clipped_##S(in, out, chosen, g, oh, ow); \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* The gradient of each output to the element its forward chose, in (oh, ow) order. */      \
    static void max_backward_plane_##S(T *gin, const T *gout, const int64_t *chosen,             \
                                       const geometry *g)                                        \
    {                                                                                            \
        long size = g->h * g->w, outputs = g->oh * g->ow;                                        \
        memset(gin, 0, sizeof(T) * (size_t)size);                                                \
        for (long o = 0; o < outputs; o++) {                                                     \
            int64_t at = chosen[o];                                                              \
            if (at >= 0 && at < size) gin[at] += gout[o];                                        \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    static inline __attribute__((always_inline)) T window_sum_##S(const T *base, long W, long kh, \
                                                                  long kw)                       \
    {                                                                                            \
        T acc = 0;                                                                               \
        for (long i = 0; i < kh; i++)                                                            \
            for (long j = 0; j < kw; j++) acc += base[i * W + j];                                \
        return acc;                                                                              \
    }                                                                                            \
                                                                                                 \
    static inline __attribute__((always_inline)) void avg_row_##S(const T *in, T *out,           \
                                                                  const geometry *g, long oh,    \
                                                                  long kh, long kw)              \
    {                                                                                            \
        long h0, h1;                                                                             \
        long ph = window(oh, g->kh, g->sh, g->ph, g->h, &h0, &h1);                               \
        for (long ow = 0; ow < g->ow; ow++) {                                                    \
            long w0, w1;                                                                         \
            long pw = window(ow, g->kw, g->sw, g->pw, g->w, &w0, &w1);                           \
            int inside = h1 - h0 == kh && w1 - w0 == kw;                                         \
            T acc = inside ? window_sum_##S(in + h0 * g->w + w0, g->w, kh, kw)                   \
                           : window_sum_##S(in + h0 * g->w + w0, g->w, h1 - h0, w1 - w0);        \
            long divisor = g->include_pad ? ph * pw : (h1 - h0) * (w1 - w0);                     \
            out[ow] = acc / (T)divisor;                                                          \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    static void avg_plane_##S(const T *in, T *out, const geometry *g)                            \
    {                                                                                            \
        for (long oh = 0; oh < g->oh; oh++, out += g->ow) {                                      \
            if (g->kh == 2 && g->kw == 2) avg_row_##S(in, out, g, oh, 2, 2);                     \
            else if (g->kh == 3 && g->kw == 3) avg_row_##S(in, out, g, oh, 3, 3);                \
            else avg_row_##S(in, out, g, oh, g->kh, g->kw);                                      \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* Each output's gradient over its divisor, spread over its window, in (oh, ow) order. */    \
    static void avg_backward_plane_##S(T *gin, const T *gout, const geometry *g)                 \
    {                                                                                            \
        memset(gin, 0, sizeof(T) * (size_t)(g->h * g->w));                                      \
        for (long oh = 0; oh < g->oh; oh++) {                                                    \
            long h0, h1;                                                                         \
            long ph = window(oh, g->kh, g->sh, g->ph, g->h, &h0, &h1);                           \
            for (long ow = 0; ow < g->ow; ow++) {                                                \
                long w0, w1;                                                                     \
                long pw = window(ow, g->kw, g->sw, g->pw, g->w, &w0, &w1);                       \
                long divisor = g->include_pad ? ph * pw : (h1 - h0) * (w1 - w0);                 \
                T v = gout[oh * g->ow + ow] / (T)divisor;                                        \
                for (long h = h0; h < h1; h++)                                                   \
                    for (long w = w0; w < w1; w++) gin[h * g->w + w] += v;                       \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* The forward of LANES_##S planes at once, a plane a lane: every plane has the same windows, \
     * so the lanes run the scalar loops' steps in the scalar loops' order, each on its plane. */ \
    static void max_block_##S(const T *in, T *out, int64_t *chosen, const geometry *g)           \
    {                                                                                            \
        long in_size = g->h * g->w, out_size = g->oh * g->ow;                                    \
        for (long oh = 0, o = 0; oh < g->oh; oh++) {                                             \
            long h0, h1;                                                                         \
            window(oh, g->kh, g->sh, g->ph, g->h, &h0, &h1);                                     \
            for (long ow = 0; ow < g->ow; ow++, o++) {                                           \
                long w0, w1;                                                                     \
                window(ow, g->kw, g->sw, g->pw, g->w, &w0, &w1);                                 \
                VT_##S m;                                                                        \
                IT_##S best = (IT_##S){0} + (IE_##S)(h0 * g->w + w0);                            \
                for (int l = 0; l < LANES_##S; l++) m[l] = in[l * in_size + h0 * g->w + w0];     \
                for (long h = h0; h < h1; h++)                                                   \
                    for (long w = w0; w < w1; w++) {                                             \
                        VT_##S v;                                                                \
                        for (int l = 0; l < LANES_##S; l++) v[l] = in[l * in_size + h * g->w + w]; \
                        IT_##S take = (v > m) | (v != v);                                        \
                        best = (best & ~take) | (((IT_##S){0} + (IE_##S)(h * g->w + w)) & take); \
                        m = (VT_##S)(((IT_##S)m & ~take) | ((IT_##S)v & take));                  \
                    }                                                                            \
                for (int l = 0; l < LANES_##S; l++) {                                            \
                    out[l * out_size + o] = m[l];                                                \
                    chosen[l * out_size + o] = best[l];                                          \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    static void avg_block_##S(const T *in, T *out, const geometry *g)                            \
    {                                                                                            \
        long in_size = g->h * g->w, out_size = g->oh * g->ow;                                    \
        for (long oh = 0, o = 0; oh < g->oh; oh++) {                                             \
            long h0, h1;                                                                         \
            long ph = window(oh, g->kh, g->sh, g->ph, g->h, &h0, &h1);                           \
            for (long ow = 0; ow < g->ow; ow++, o++) {                                           \
                long w0, w1;                                                                     \
                long pw = window(ow, g->kw, g->sw, g->pw, g->w, &w0, &w1);                       \
                VT_##S acc = {0};                                                                \
                for (long h = h0; h < h1; h++)                                                   \
                    for (long w = w0; w < w1; w++) {                                             \
                        VT_##S v;                                                                \
                        for (int l = 0; l < LANES_##S; l++) v[l] = in[l * in_size + h * g->w + w]; \
                        acc += v;                                                                \
                    }                                                                            \
                long divisor = g->include_pad ? ph * pw : (h1 - h0) * (w1 - w0);                 \
                acc = acc / (T)divisor;                                                          \
                for (int l = 0; l < LANES_##S; l++) out[l * out_size + o] = acc[l];              \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* Forward: blocks of LANES_##S planes, then the planes left one by one; backward: plane by  \
     * plane (a scatter of contiguous rows, which the vector blocks would not speed up). */      \
    static void pool_##S(const ct_pool2d_args *a, const geometry *g, bool parallel)              \
    {                                                                                            \
        T *x = (T *)a->x + a->x_offset, *y = (T *)a->y + a->y_offset;                            \
        int64_t *indices = a->indices ? (int64_t *)a->indices + a->indices_offset : NULL;        \
        long in_size = g->h * g->w, out_size = g->oh * g->ow;                                    \
        bool forward = a->pass == CT_POOL_MAX_FORWARD || a->pass == CT_POOL_AVG_FORWARD;         \
        long blocks = forward && in_size < INT32_MAX ? a->planes / LANES_##S : 0;                \
        long tasks = blocks + a->planes - blocks * LANES_##S;                                    \
        _Pragma("omp parallel for schedule(static) if (parallel)")                               \
        for (long t = 0; t < tasks; t++) {                                                       \
            long p = t < blocks ? t * LANES_##S : blocks * LANES_##S + (t - blocks);              \
            T *xp = x + p * in_size, *yp = y + p * out_size;                                     \
            int64_t *ip = indices ? indices + p * out_size : NULL;                               \
            switch (a->pass) {                                                                   \
            case CT_POOL_MAX_FORWARD:                                                            \
                if (t < blocks) max_block_##S(xp, yp, ip, g);                                    \
                else max_plane_##S(xp, yp, ip, g);                                               \
                break;                                                                           \
            case CT_POOL_MAX_BACKWARD: max_backward_plane_##S(xp, yp, ip, g); break;             \
            case CT_POOL_AVG_FORWARD:                                                            \
                if (t < blocks) avg_block_##S(xp, yp, g);                                        \
                else avg_plane_##S(xp, yp, g);                                                   \
                break;                                                                           \
            case CT_POOL_AVG_BACKWARD: avg_backward_plane_##S(xp, yp, g); break;                 \
            }                                                                                    \
        }                                                                                        \
    }

CT_DEFINE_CPU_POOL(float, f32)
CT_DEFINE_CPU_POOL(double, f64)

bool ct_cpu_pool2d_takes(int index, const ct_pool2d_args *args)
{
    (void)index;
    return ct_cpu_pool_own_loops() && (args->dtype == CT_F32 || args->dtype == CT_F64);
}

ct_status ct_cpu_pool2d(int index, void *stream, const ct_pool2d_args *args)
{
    (void)stream;
    if (!ct_cpu_pool2d_takes(index, args))
        return ct_error(CT_ERR_INTERNAL, "cpu pool2d: no pooling loop for %s here",
                        ct_dtype_name(args->dtype));
    bool max = args->pass == CT_POOL_MAX_FORWARD || args->pass == CT_POOL_MAX_BACKWARD;
    if (max && !args->indices)
        return ct_error(CT_ERR_INTERNAL, "cpu pool2d: max pooling without its indices");
    geometry g = {.h = args->h, .w = args->w, .oh = args->out_h, .ow = args->out_w,
                  .kh = args->kernel[0], .kw = args->kernel[1], .sh = args->stride[0],
                  .sw = args->stride[1], .ph = args->padding[0], .pw = args->padding[1],
                  .include_pad = args->count_include_pad};
    /* As a kernel launch: the team wakes only for work that pays for it (cpu_launcher.h). */
    int64_t touched = (int64_t)args->planes * (g.h * g.w + g.oh * g.ow * (max ? 2 : 1));
    bool parallel = touched >= CT_CPU_PARALLEL_MIN_WORK;
    if (args->dtype == CT_F32) pool_f32(args, &g, parallel);
    else pool_f64(args, &g, parallel);
    return CT_OK;
}
