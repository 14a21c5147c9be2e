/* Plain-C references of the nn ops (direct loops over doubles, no im2col), and helpers to make
 * test tensors from them and read results back. Include after cmocka.h. */
#ifndef CT_TEST_NN_REFERENCE_H
#define CT_TEST_NN_REFERENCE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ctorch.h"

/* n reproducible values in [lo, hi) from seed (an LCG: the same on every run and machine). */
static inline double *ref_values(int64_t n, uint64_t seed, double lo, double hi)
{
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (int64_t i = 0; i < n; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = lo + (hi - lo) * (double)(state >> 11) / 9007199254740992.0;
    }
    return v;
}

/* A tensor of dtype on device holding values (float32 rounds them). */
static inline ct_tensor *ref_tensor(const double *values, const int64_t *shape, int ndim, ct_dtype dtype,
                                    ct_device device)
{
    ct_tensor *t64 = ct_tensor_from_data(values, CT_F64, shape, ndim, device);
    ct_tensor *t = ct_to_dtype(t64, dtype);
    ct_release(t64);
    return t;
}

/* t's values as doubles (malloc'd). */
static inline double *ref_read(const ct_tensor *t)
{
    int64_t n = ct_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    ct_tensor *t64 = ct_to_dtype(t, CT_F64);
    assert_non_null(t64);
    assert_int_equal(ct_tensor_to_array(t64, v, sizeof(double) * (size_t)n), CT_OK);
    ct_release(t64);
    return v;
}

/* Every got[i] within tol * max(1, |want[i]|) of want[i]. */
static inline void ref_compare(const char *what, const double *got, const double *want, int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++) {
        double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
        if (!(fabs(got[i] - want[i]) <= tol * scale) && !(isnan(got[i]) && isnan(want[i])))
            fail_msg("%s: element %lld is %.10g, expected %.10g", what, (long long)i, got[i], want[i]);
    }
}

typedef struct ref_conv {
    int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, groups;
} ref_conv;

static inline int64_t ref_conv_out_h(const ref_conv *c) { return (c->h + 2 * c->ph - c->dh * (c->kh - 1) - 1) / c->sh + 1; }
static inline int64_t ref_conv_out_w(const ref_conv *c) { return (c->w + 2 * c->pw - c->dw * (c->kw - 1) - 1) / c->sw + 1; }

/* out [n, o, oh, ow] of x [n, c, h, w], weight [o, c / groups, kh, kw], bias [o] or NULL. */
static inline void ref_conv2d(const ref_conv *p, const double *x, const double *weight, const double *bias,
                              double *out)
{
    int64_t oh_n = ref_conv_out_h(p), ow_n = ref_conv_out_w(p);
    int64_t cg = p->c / p->groups, og = p->o / p->groups;
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t o = 0; o < p->o; o++) {
            int64_t g = o / og;
            for (int64_t oh = 0; oh < oh_n; oh++)
                for (int64_t ow = 0; ow < ow_n; ow++) {
                    double acc = bias ? bias[o] : 0;
                    for (int64_t ci = 0; ci < cg; ci++)
                        for (int64_t kh = 0; kh < p->kh; kh++)
                            for (int64_t kw = 0; kw < p->kw; kw++) {
                                int64_t ih = oh * p->sh - p->ph + kh * p->dh;
                                int64_t iw = ow * p->sw - p->pw + kw * p->dw;
                                if (ih < 0 || ih >= p->h || iw < 0 || iw >= p->w) continue;
                                int64_t c = g * cg + ci;
                                acc += x[((n * p->c + c) * p->h + ih) * p->w + iw] *
                                       weight[((o * cg + ci) * p->kh + kh) * p->kw + kw];
                            }
                    out[((n * p->o + o) * oh_n + oh) * ow_n + ow] = acc;
                }
        }
}

typedef struct ref_pool {
    int64_t planes, h, w, kh, kw, sh, sw, ph, pw;
} ref_pool;

static inline int64_t ref_pool_out_h(const ref_pool *p) { return (p->h + 2 * p->ph - p->kh) / p->sh + 1; }
static inline int64_t ref_pool_out_w(const ref_pool *p) { return (p->w + 2 * p->pw - p->kw) / p->sw + 1; }

/* Max pooling with -inf padding; the first largest (or the last NaN) wins, as PyTorch. */
static inline void ref_max_pool2d(const ref_pool *p, const double *x, double *out, int64_t *indices)
{
    int64_t oh_n = ref_pool_out_h(p), ow_n = ref_pool_out_w(p);
    for (int64_t q = 0; q < p->planes; q++)
        for (int64_t oh = 0; oh < oh_n; oh++)
            for (int64_t ow = 0; ow < ow_n; ow++) {
                double best = -INFINITY;
                int64_t at = -1;
                for (int64_t kh = 0; kh < p->kh; kh++)
                    for (int64_t kw = 0; kw < p->kw; kw++) {
                        int64_t h = oh * p->sh - p->ph + kh, w = ow * p->sw - p->pw + kw;
                        if (h < 0 || h >= p->h || w < 0 || w >= p->w) continue;
                        double v = x[(q * p->h + h) * p->w + w];
                        if (at < 0 || v > best || isnan(v)) {
                            best = v;
                            at = h * p->w + w;
                        }
                    }
                out[(q * oh_n + oh) * ow_n + ow] = best;
                indices[(q * oh_n + oh) * ow_n + ow] = at;
            }
}

/* Average pooling: windows clipped to the padded input; divisor that clipped size
 * (count_include_pad) or the count of input elements. */
static inline void ref_avg_pool2d(const ref_pool *p, const double *x, bool count_include_pad, double *out)
{
    int64_t oh_n = ref_pool_out_h(p), ow_n = ref_pool_out_w(p);
    for (int64_t q = 0; q < p->planes; q++)
        for (int64_t oh = 0; oh < oh_n; oh++)
            for (int64_t ow = 0; ow < ow_n; ow++) {
                double sum = 0;
                int64_t inside = 0, padded = 0;
                for (int64_t kh = 0; kh < p->kh; kh++)
                    for (int64_t kw = 0; kw < p->kw; kw++) {
                        int64_t h = oh * p->sh - p->ph + kh, w = ow * p->sw - p->pw + kw;
                        if (h >= p->h + p->ph || w >= p->w + p->pw) continue;
                        padded++;
                        if (h < 0 || h >= p->h || w < 0 || w >= p->w) continue;
                        inside++;
                        sum += x[(q * p->h + h) * p->w + w];
                    }
                out[(q * oh_n + oh) * ow_n + ow] = sum / (double)(count_include_pad ? padded : inside);
            }
}

/* Batch norm of x [n, c, inner]: with the batch's statistics (training; mean_out and var_out
 * get the mean and the biased variance) or the given mean and var. weight, bias may be NULL. */
static inline void ref_batch_norm(const double *x, int64_t n, int64_t c, int64_t inner, const double *weight,
                                  const double *bias, bool training, const double *mean_in,
                                  const double *var_in, double eps, double *out, double *mean_out,
                                  double *var_out)
{
    for (int64_t ch = 0; ch < c; ch++) {
        double mean = 0, var = 0;
        if (training) {
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < inner; j++) mean += x[(i * c + ch) * inner + j];
            mean /= (double)(n * inner);
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < inner; j++) {
                    double d = x[(i * c + ch) * inner + j] - mean;
                    var += d * d;
                }
            var /= (double)(n * inner);
            if (mean_out) mean_out[ch] = mean;
            if (var_out) var_out[ch] = var;
        } else {
            mean = mean_in[ch];
            var = var_in[ch];
        }
        double invstd = 1 / sqrt(var + eps);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < inner; j++) {
                int64_t at = (i * c + ch) * inner + j;
                out[at] = (x[at] - mean) * invstd * (weight ? weight[ch] : 1) + (bias ? bias[ch] : 0);
            }
    }
}

#endif
