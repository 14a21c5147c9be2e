/* Helpers of the elementwise tests: tensors of any dtype from double values (contiguous,
 * transposed or sliced views), values read back as doubles, broadcasting of reference indices,
 * and comparisons with a stated tolerance. Include after cmocka.h. */
#ifndef CT_TEST_ELEMENTWISE_CHECK_H
#define CT_TEST_ELEMENTWISE_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "tensor/tensor_internal.h"

/* Tolerances relative to max(1, |want|): float32 results are compared with float32 arithmetic
 * done here, so only libm differences remain. Integers and bool must match exactly. */
#define CHECK_TOL_F32 1e-5
#define CHECK_TOL_F64 1e-12

__attribute__((unused)) static const ct_dtype check_all_dtypes[] = {CT_F32, CT_F64, CT_I32, CT_I64, CT_U8, CT_BOOL};
#define CHECK_DTYPE_COUNT 6

/* value converted to dtype and back, as a tensor of that dtype holds it */
static inline double check_round(ct_dtype dtype, double value)
{
    switch (dtype) {
    case CT_F32: return (float)value;
    case CT_F64: return value;
    case CT_I32: return (int32_t)value;
    case CT_I64: return (double)(int64_t)value;
    case CT_U8: return (uint8_t)(int64_t)value;
    default: return value != 0;
    }
}

static inline void check_store(ct_dtype dtype, void *dst, int64_t i, double value)
{
    switch (dtype) {
    case CT_F32: ((float *)dst)[i] = (float)value; break;
    case CT_F64: ((double *)dst)[i] = value; break;
    case CT_I32: ((int32_t *)dst)[i] = (int32_t)value; break;
    case CT_I64: ((int64_t *)dst)[i] = (int64_t)value; break;
    case CT_U8: ((uint8_t *)dst)[i] = (uint8_t)(int64_t)value; break;
    default: ((uint8_t *)dst)[i] = value != 0; break;
    }
}

static inline double check_load(ct_dtype dtype, const void *src, int64_t i)
{
    switch (dtype) {
    case CT_F32: return ((const float *)src)[i];
    case CT_F64: return ((const double *)src)[i];
    case CT_I32: return ((const int32_t *)src)[i];
    case CT_I64: return (double)((const int64_t *)src)[i];
    default: return ((const uint8_t *)src)[i];
    }
}

/* A contiguous tensor of dtype holding values (row-major). */
static inline ct_tensor *tensor_of(ct_dtype dtype, const int64_t *shape, int ndim, const double *values)
{
    int64_t n = ct_shape_numel(shape, ndim);
    void *data = calloc((size_t)(n > 0 ? n : 1), 8);
    for (int64_t i = 0; i < n; i++) check_store(dtype, data, i, values[i]);
    ct_tensor *t = ct_tensor_from_data(data, dtype, shape, ndim, CT_DEVICE_CPU);
    free(data);
    assert_non_null(t);
    return t;
}

/* A [rows, cols] non-contiguous view with these values: the transpose of a [cols, rows] tensor. */
static inline ct_tensor *transposed_of(ct_dtype dtype, int64_t rows, int64_t cols, const double *values)
{
    double *base_values = malloc((size_t)(rows * cols + 1) * sizeof *base_values);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) base_values[j * rows + i] = values[i * cols + j];
    int64_t base_shape[2] = {cols, rows};
    ct_tensor *base = tensor_of(dtype, base_shape, 2, base_values);
    free(base_values);
    int64_t shape[2] = {rows, cols}, strides[2] = {1, rows};
    ct_tensor *view = ct_tensor_view_of(base, 2, shape, strides, 0);
    ct_release(base);
    assert_false(ct_is_contiguous(view));
    return view;
}

/* A [rows, cols] non-contiguous view with these values: every other column, from column 1, of
 * a [rows, 2 * cols + 1] tensor whose other elements are 99. */
static inline ct_tensor *sliced_of(ct_dtype dtype, int64_t rows, int64_t cols, const double *values)
{
    int64_t width = 2 * cols + 1;
    double *base_values = malloc((size_t)(rows * width) * sizeof *base_values);
    for (int64_t k = 0; k < rows * width; k++) base_values[k] = 99;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) base_values[i * width + 1 + 2 * j] = values[i * cols + j];
    int64_t base_shape[2] = {rows, width};
    ct_tensor *base = tensor_of(dtype, base_shape, 2, base_values);
    free(base_values);
    int64_t shape[2] = {rows, cols}, strides[2] = {width, 2};
    ct_tensor *view = ct_tensor_view_of(base, 2, shape, strides, 1);
    ct_release(base);
    assert_false(ct_is_contiguous(view));
    return view;
}

/* The elements of t in row-major order, as doubles, into a malloc'ed array. */
static inline double *values_of(const ct_tensor *t)
{
    int64_t n = ct_numel(t);
    size_t bytes = (size_t)(n > 0 ? n : 1) * ct_dtype_size(ct_tensor_dtype(t));
    void *raw = calloc(1, bytes);
    assert_int_equal(ct_tensor_to_array(t, raw, bytes), CT_OK);
    double *out = calloc((size_t)(n > 0 ? n : 1), sizeof *out);
    for (int64_t i = 0; i < n; i++) out[i] = check_load(ct_tensor_dtype(t), raw, i);
    free(raw);
    return out;
}

/* The row-major index into a tensor of in_shape for element `index` of the broadcast out_shape. */
static inline int64_t broadcast_index(int64_t index, const int64_t *out_shape, int out_ndim,
                               const int64_t *in_shape, int in_ndim)
{
    int64_t in_index = 0, in_stride = 1;
    for (int d = out_ndim - 1; d >= 0; d--) {
        int64_t coord = index % out_shape[d];
        index /= out_shape[d];
        int id = in_ndim - out_ndim + d;
        if (id < 0) continue;
        if (in_shape[id] != 1) in_index += coord * in_stride;
        in_stride *= in_shape[id];
    }
    return in_index;
}

static inline bool check_close(double got, double want, ct_dtype dtype)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    if (dtype == CT_F32) return fabs(got - want) <= CHECK_TOL_F32 * fmax(1.0, fabs(want));
    if (dtype == CT_F64) return fabs(got - want) <= CHECK_TOL_F64 * fmax(1.0, fabs(want));
    return got == want;
}

/* Fails naming the first element that differs. */
static inline void assert_values(const char *what, const double *got, const double *want, int64_t n,
                          ct_dtype dtype)
{
    for (int64_t i = 0; i < n; i++)
        if (!check_close(got[i], want[i], dtype))
            fail_msg("%s (%s): element %lld is %.17g, expected %.17g", what, ct_dtype_name(dtype),
                     (long long)i, got[i], want[i]);
}

/* t has this dtype and shape. */
static inline void assert_geometry(const ct_tensor *t, ct_dtype dtype, const int64_t *shape, int ndim)
{
    assert_non_null(t);
    assert_int_equal(ct_tensor_dtype(t), dtype);
    assert_int_equal(ct_tensor_ndim(t), ndim);
    for (int d = 0; d < ndim; d++) assert_int_equal(ct_tensor_shape(t)[d], shape[d]);
}

/* The last error has this status and its message contains each of the given pieces. */
static inline void assert_error(ct_status status, const char *const *pieces, int count)
{
    if (ct_last_error() != status)
        fail_msg("expected %s, got %s: %s", ct_status_name(status), ct_status_name(ct_last_error()),
                 ct_last_error_message());
    for (int k = 0; k < count; k++)
        if (!strstr(ct_last_error_message(), pieces[k]))
            fail_msg("message \"%s\" does not contain \"%s\"", ct_last_error_message(), pieces[k]);
    ct_clear_error();
}

#define ASSERT_ERROR(status, ...)                                                                \
    do {                                                                                         \
        const char *const pieces_[] = {__VA_ARGS__};                                             \
        assert_error(status, pieces_, (int)(sizeof pieces_ / sizeof pieces_[0]));                 \
    } while (0)

#endif
