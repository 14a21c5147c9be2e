/* Test helpers for the reductions: inputs in every layout (contiguous, transposed, strided with
 * an offset) made from host arrays, their logical values, and plain-C reference reductions. */
#ifndef CT_TEST_REDUCE_REFERENCE_H
#define CT_TEST_REDUCE_REFERENCE_H

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "tensor/tensor_internal.h"

typedef enum { LAYOUT_CONTIGUOUS, LAYOUT_TRANSPOSED, LAYOUT_STRIDED, LAYOUT_COUNT } test_layout;

typedef struct test_input {
    ct_tensor *t;   /* a view with the layout asked for */
    double *values; /* its logical values, row-major */
    int64_t numel;
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    test_layout layout; /* as made (a transposed 1-D shape is strided) */
} test_input;

/* A deterministic value for element i of a dtype: fractions of both signs for floats, values
 * up to 1e9 for int32 (their sums overflow int32), beyond int32 for int64. */
static inline double test_value(ct_dtype dtype, int64_t i, unsigned seed)
{
    uint64_t h = ((uint64_t)i + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed * 0xBF58476D1CE4E5B9ull);
    h ^= h >> 29;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 32;
    switch (dtype) {
    case CT_F32:
    case CT_F64: return ((double)(h % 20001) - 10000.0) / 4096.0;
    case CT_I32: return (double)((int64_t)(h % 2001) - 1000) * 1000000.0;
    case CT_I64: return (double)((int64_t)(h % 2001) - 1000) * 1e9 + (double)(h % 7);
    case CT_U8: return (double)(h % 256);
    default: return (double)(h % 2);
    }
}

static inline void store_value(void *data, ct_dtype dtype, int64_t i, double v)
{
    switch (dtype) {
    case CT_F32: ((float *)data)[i] = (float)v; break;
    case CT_F64: ((double *)data)[i] = v; break;
    case CT_I32: ((int32_t *)data)[i] = (int32_t)v; break;
    case CT_I64: ((int64_t *)data)[i] = (int64_t)v; break;
    default: ((uint8_t *)data)[i] = (uint8_t)v; break;
    }
}

static inline double load_value(const void *data, ct_dtype dtype, int64_t i)
{
    switch (dtype) {
    case CT_F32: return ((const float *)data)[i];
    case CT_F64: return ((const double *)data)[i];
    case CT_I32: return ((const int32_t *)data)[i];
    case CT_I64: return (double)((const int64_t *)data)[i];
    default: return ((const uint8_t *)data)[i];
    }
}

/* Makes an input of shape in a layout from generated values (or `given`, row-major over the
 * base storage, when not NULL). A transposed view of a 1-D or 0-d shape is strided instead. */
static inline test_input make_input_from(ct_dtype dtype, const int64_t *shape, int ndim, test_layout layout,
                                  unsigned seed, const double *given)
{
    test_input in = {0};
    in.ndim = ndim;
    memcpy(in.shape, shape, sizeof(int64_t) * (size_t)ndim);
    in.numel = ct_shape_numel(shape, ndim);
    if (layout == LAYOUT_TRANSPOSED && ndim < 2) layout = LAYOUT_STRIDED;
    if (ndim == 0) layout = LAYOUT_CONTIGUOUS;
    in.layout = layout;

    int64_t base_shape[CT_MAX_DIMS], base_strides[CT_MAX_DIMS], strides[CT_MAX_DIMS], offset = 0;
    memcpy(base_shape, shape, sizeof(int64_t) * (size_t)ndim);
    if (layout == LAYOUT_TRANSPOSED) { /* the storage holds the last two dims swapped */
        base_shape[ndim - 1] = shape[ndim - 2];
        base_shape[ndim - 2] = shape[ndim - 1];
    } else if (layout == LAYOUT_STRIDED) { /* every other element of the last dim, from 1 */
        base_shape[ndim - 1] = 2 * shape[ndim - 1] + 1;
    }
    ct_contiguous_strides(base_shape, ndim, base_strides);
    memcpy(strides, base_strides, sizeof(int64_t) * (size_t)ndim);
    if (layout == LAYOUT_TRANSPOSED) {
        strides[ndim - 1] = base_strides[ndim - 2];
        strides[ndim - 2] = base_strides[ndim - 1];
    } else if (layout == LAYOUT_STRIDED) {
        strides[ndim - 1] = 2;
        offset = 1;
    }
    int64_t base_numel = ct_shape_numel(base_shape, ndim);
    void *data = calloc((size_t)(base_numel > 0 ? base_numel : 1), 8);
    for (int64_t i = 0; i < base_numel; i++)
        store_value(data, dtype, i, given ? given[i] : test_value(dtype, i, seed));
    ct_tensor *base = ct_tensor_from_data(data, dtype, base_shape, ndim, CT_DEVICE_CPU);
    in.t = ct_tensor_view_of(base, ndim, shape, strides, offset);
    ct_release(base);

    in.values = calloc((size_t)(in.numel > 0 ? in.numel : 1), sizeof(double));
    for (int64_t i = 0; i < in.numel; i++) {
        int64_t rest = i, at = offset;
        for (int d = ndim - 1; d >= 0; d--) {
            at += (rest % shape[d]) * strides[d];
            rest /= shape[d];
        }
        in.values[i] = load_value(data, dtype, at);
    }
    free(data);
    return in;
}

static inline test_input make_input(ct_dtype dtype, const int64_t *shape, int ndim, test_layout layout,
                             unsigned seed)
{
    return make_input_from(dtype, shape, ndim, layout, seed, NULL);
}

static inline void free_input(test_input *in)
{
    ct_release(in->t);
    free(in->values);
}

/* A tensor's elements as doubles (row-major); the caller frees. */
static inline double *read_doubles(const ct_tensor *t)
{
    int64_t n = ct_numel(t);
    size_t bytes = (size_t)(n > 0 ? n : 1) * ct_dtype_size(ct_tensor_dtype(t));
    void *raw = calloc(1, bytes);
    double *out = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    if (ct_tensor_to_array(t, raw, bytes) != CT_OK) {
        free(raw);
        free(out);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) out[i] = load_value(raw, ct_tensor_dtype(t), i);
    free(raw);
    return out;
}

/* ---- the reference: which dims are reduced, the output shape, and each output's row ---- */

typedef struct ref_plan {
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    bool reduced[CT_MAX_DIMS];
    int64_t outputs, count; /* M, K */
    int out_ndim;
    int64_t out_shape[CT_MAX_DIMS];
} ref_plan;

static inline ref_plan ref_plan_make(const test_input *in, const int *dims, int ndims, bool keepdim)
{
    ref_plan r = {0};
    r.ndim = in->ndim;
    memcpy(r.shape, in->shape, sizeof r.shape);
    for (int j = 0; j < ndims; j++) r.reduced[(dims[j] + in->ndim) % (in->ndim ? in->ndim : 1)] = true;
    if (ndims == 0)
        for (int d = 0; d < in->ndim; d++) r.reduced[d] = true;
    r.outputs = r.count = 1;
    for (int d = 0; d < in->ndim; d++) {
        if (r.reduced[d]) {
            r.count *= in->shape[d];
            if (keepdim) r.out_shape[r.out_ndim++] = 1;
        } else {
            r.outputs *= in->shape[d];
            r.out_shape[r.out_ndim++] = in->shape[d];
        }
    }
    return r;
}

/* The values reduced into output m, in the order of the reduced dims (row-major). */
static inline void ref_row(const ref_plan *r, const double *values, int64_t m, double *row)
{
    for (int64_t k = 0; k < r->count; k++) {
        int64_t mm = m, kk = k, flat = 0, scale = 1;
        for (int d = r->ndim - 1; d >= 0; d--) {
            int64_t coord;
            if (r->reduced[d]) {
                coord = kk % r->shape[d];
                kk /= r->shape[d];
            } else {
                coord = mm % r->shape[d];
                mm /= r->shape[d];
            }
            flat += coord * scale;
            scale *= r->shape[d];
        }
        row[k] = values[flat];
    }
}

typedef enum { REF_SUM, REF_MEAN, REF_MAX, REF_MIN, REF_VAR, REF_STD, REF_ARGMAX, REF_ARGMIN } ref_op;

/* One output of op over a row of n values; *scale gets Σ|x| (for tolerances). Integer sums are
 * exact in int64. */
static inline double ref_reduce(ref_op op, ct_dtype dtype, const double *row, int64_t n, int64_t correction,
                         double *scale)
{
    double abs_sum = 0;
    for (int64_t k = 0; k < n; k++) abs_sum += fabs(row[k]);
    *scale = abs_sum;
    switch (op) {
    case REF_SUM:
    case REF_MEAN: {
        if (!ct_dtype_is_floating(dtype)) {
            int64_t s = 0;
            for (int64_t k = 0; k < n; k++) s += (int64_t)row[k];
            return (double)s;
        }
        double s = 0;
        for (int64_t k = 0; k < n; k++) s += row[k];
        return op == REF_MEAN ? s / (double)n : s;
    }
    case REF_MAX:
    case REF_MIN: {
        double best = row[0];
        for (int64_t k = 0; k < n; k++) {
            if (isnan(row[k])) return row[k];
            if (op == REF_MAX ? row[k] > best : row[k] < best) best = row[k];
        }
        return best;
    }
    case REF_ARGMAX:
    case REF_ARGMIN: {
        int64_t best = 0;
        for (int64_t k = 0; k < n; k++) {
            if (isnan(row[k])) return (double)k;
            if (op == REF_ARGMAX ? row[k] > row[best] : row[k] < row[best]) best = k;
        }
        return (double)best;
    }
    default: {
        double mean = 0, m2 = 0;
        for (int64_t k = 0; k < n; k++) mean += row[k];
        mean /= (double)n;
        for (int64_t k = 0; k < n; k++) m2 += (row[k] - mean) * (row[k] - mean);
        double divisor = (double)n - (double)correction;
        double var = m2 / (divisor > 0 ? divisor : 0);
        *scale = m2 / (double)n + mean * mean; /* the size of the terms */
        return op == REF_STD ? sqrt(var) : var;
    }
    }
}

/* ---- running an op against the reference ---- */

static const char *const ref_op_names[] = {"sum", "mean", "max", "min", "var", "std", "argmax", "argmin"};
static const char *const layout_names[] = {"contiguous", "transposed", "strided"};

/* "sum float32 strided [3, 4, 5] dims {0, -1} keepdim" into buf, to say which case failed. */
static inline const char *describe_case(char *buf, size_t size, ref_op op, const test_input *in,
                                        const int *dims, int ndims, bool keepdim)
{
    char shape[128];
    int used = snprintf(buf, size, "%s %s %s %s dims {", ref_op_names[op],
                        ct_dtype_name(ct_tensor_dtype(in->t)), layout_names[in->layout],
                        ct_shape_format(in->shape, in->ndim, shape, sizeof shape));
    for (int j = 0; j < ndims && used > 0 && (size_t)used < size; j++)
        used += snprintf(buf + used, size - (size_t)used, j ? ", %d" : "%d", dims[j]);
    if (used > 0 && (size_t)used < size) snprintf(buf + used, size - (size_t)used, "}%s", keepdim ? " keepdim" : "");
    return buf;
}

/* Tolerances: float32 sums and means within 1e-5 of Σ|x| (of the mean of |x| for a mean) + 1e-5,
 * float64 within 1e-12 of the same; var/std (computed in double) within 1e-6 (float32) or 1e-10
 * (float64) of |result| + E[x²]; integers, max, min and arg* exactly. */
static inline void assert_close(const char *what, ref_op op, ct_dtype dtype, double got, double want,
                                double scale, int64_t n, int64_t m)
{
    if (isnan(want)) {
        if (!isnan(got)) fail_msg("%s, output %lld: expected NaN, got %.17g", what, (long long)m, got);
        return;
    }
    if (isinf(want) || !ct_dtype_is_floating(dtype) || op == REF_MAX || op == REF_MIN ||
        op == REF_ARGMAX || op == REF_ARGMIN) {
        if (got != want)
            fail_msg("%s, output %lld: expected %.17g, got %.17g", what, (long long)m, want, got);
        return;
    }
    double tol;
    if (op == REF_SUM || op == REF_MEAN) {
        double size = op == REF_MEAN && n > 0 ? scale / (double)n : scale;
        tol = (dtype == CT_F32 ? 1e-5 : 1e-12) * (size + 1.0);
    } else {
        tol = (dtype == CT_F32 ? 1e-6 : 1e-10) * (fabs(want) + scale) + 1e-300;
    }
    if (!(fabs(got - want) <= tol))
        fail_msg("%s, output %lld: expected %.17g, got %.17g (tolerance %.3g)", what, (long long)m,
                 want, got, tol);
}

/* Calls op on `in` and compares dtype, shape and every value with the reference. var/std use
 * `correction`; arg* take dims[0] (or ndims 0: over everything, ct_argmax_all). */
static inline void check_against_reference(ref_op op, const test_input *in, const int *dims, int ndims,
                                           bool keepdim, int64_t correction)
{
    char what[256];
    describe_case(what, sizeof what, op, in, dims, ndims, keepdim);
    ct_tensor *out = NULL;
    ct_dtype dtype = ct_tensor_dtype(in->t), want_dtype = dtype;
    bool arg = op == REF_ARGMAX || op == REF_ARGMIN;
    switch (op) {
    case REF_SUM:
        out = ct_sum(in->t, dims, ndims, keepdim);
        if (!ct_dtype_is_floating(dtype)) want_dtype = CT_I64;
        break;
    case REF_MEAN: out = ct_mean(in->t, dims, ndims, keepdim); break;
    case REF_MAX: out = ct_max(in->t, dims, ndims, keepdim); break;
    case REF_MIN: out = ct_min(in->t, dims, ndims, keepdim); break;
    case REF_VAR: out = ct_var(in->t, dims, ndims, correction, keepdim); break;
    case REF_STD: out = ct_std(in->t, dims, ndims, correction, keepdim); break;
    case REF_ARGMAX: out = ndims ? ct_argmax(in->t, dims[0], keepdim) : ct_argmax_all(in->t); break;
    case REF_ARGMIN: out = ndims ? ct_argmin(in->t, dims[0], keepdim) : ct_argmin_all(in->t); break;
    }
    if (arg) want_dtype = CT_I64;
    if (!out) fail_msg("%s failed: %s", what, ct_last_error_message());
    ref_plan r = ref_plan_make(in, dims, ndims, arg && ndims == 0 ? false : keepdim);
    assert_int_equal(ct_tensor_dtype(out), want_dtype);
    assert_int_equal(ct_tensor_ndim(out), r.out_ndim);
    for (int d = 0; d < r.out_ndim; d++) assert_int_equal(ct_tensor_shape(out)[d], r.out_shape[d]);
    double *got = read_doubles(out);
    assert_non_null(got);
    double *row = calloc((size_t)(r.count > 0 ? r.count : 1), sizeof(double));
    for (int64_t m = 0; m < r.outputs; m++) {
        ref_row(&r, in->values, m, row);
        double scale = 0;
        double want = r.count == 0 ? (op == REF_SUM ? 0.0 : NAN)
                                   : ref_reduce(op, dtype, row, r.count, correction, &scale);
        assert_close(what, op, dtype, got[m], want, scale, r.count, m);
    }
    free(row);
    free(got);
    ct_release(out);
}

/* A reduction case: a shape and the dims to reduce (ndims 0: every dim). */
typedef struct dims_case {
    int ndim;
    int64_t shape[4];
    int ndims;
    int dims[4];
} dims_case;

/* Single dims, several, all, negative, dims of size 1, 1-D and 0-d. */
#define REDUCE_COMMON_CASES                                                                        \
    {2, {5, 7}, 1, {0}}, {2, {5, 7}, 1, {1}}, {2, {5, 7}, 1, {-1}}, {2, {5, 7}, 0, {0}},            \
    {2, {5, 7}, 2, {1, 0}}, {3, {3, 4, 5}, 1, {1}}, {3, {3, 4, 5}, 2, {0, 2}},                      \
    {3, {3, 4, 5}, 2, {-1, -3}}, {3, {3, 4, 5}, 2, {1, 2}}, {3, {3, 4, 5}, 0, {0}},                 \
    {3, {3, 4, 5}, 3, {2, 0, 1}}, {4, {2, 3, 4, 5}, 2, {1, 3}}, {4, {2, 3, 4, 5}, 1, {-3}},         \
    {4, {2, 3, 1, 5}, 2, {0, 2}}, {4, {2, 1, 4, 5}, 1, {1}}, {1, {100}, 1, {0}}, {1, {100}, 0, {0}}, \
    {0, {0}, 0, {0}}, {0, {0}, 1, {0}}, {0, {0}, 1, {-1}}

/* Rows longer than one chunk (4096), so that both passes run, contiguous and strided, and column
 * reductions (a contiguous kept dim: the tile kernels) with full and partial tiles of 16. */
#define REDUCE_LONG_CASES                                                                          \
    {1, {70000}, 0, {0}}, {2, {3, 9000}, 1, {1}}, {2, {3, 9000}, 1, {0}}, {2, {9000, 3}, 1, {0}},  \
    {3, {20, 30, 40}, 0, {0}}, {3, {20, 30, 40}, 2, {0, 2}}, {3, {20, 30, 40}, 2, {0, 1}},          \
    {2, {2, 12289}, 1, {-1}}, {2, {5000, 40}, 1, {0}}

/* Runs op over every case x dtype x layout x keepdim. */
static inline void run_cases(ref_op op, const ct_dtype *dtypes, int ndtypes, const dims_case *cases,
                             int ncases, int64_t correction)
{
    unsigned seed = 1;
    for (int t = 0; t < ndtypes; t++)
        for (int c = 0; c < ncases; c++)
            for (int layout = 0; layout < LAYOUT_COUNT; layout++)
                for (int keep = 0; keep < 2; keep++) {
                    test_input in = make_input(dtypes[t], cases[c].shape, cases[c].ndim,
                                               (test_layout)layout, seed++);
                    check_against_reference(op, &in, cases[c].dims, cases[c].ndims, keep, correction);
                    free_input(&in);
                }
}

#endif
