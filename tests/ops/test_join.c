/* ct_cat and ct_stack join tensors as torch.cat / torch.stack do: along any dim (negative dims
 * count from the end), promoting dtypes, from strided views, with empty inputs; checked against
 * a plain C reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctorch.h"
#include "tensor/tensor_internal.h"

/* A contiguous tensor whose values are seed * 1000 + its flat index (exact in float32). */
static ct_tensor *make(ct_dtype dtype, const int64_t *shape, int ndim, int seed)
{
    int64_t n = ct_shape_numel(shape, ndim);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = seed * 1000 + (double)i;
    ct_tensor *f = ct_tensor_from_data(v, CT_F64, shape, ndim, CT_DEVICE_CPU);
    ct_tensor *t = ct_to_dtype(f, dtype);
    ct_release(f);
    free(v);
    assert_non_null(t);
    return t;
}

static double *values_of(const ct_tensor *t)
{
    int64_t n = ct_numel(t);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    ct_tensor *d = ct_to_dtype(t, CT_F64);
    assert_int_equal(ct_tensor_to_array(d, v, (size_t)n * sizeof *v), CT_OK);
    ct_release(d);
    return v;
}

/* The reference: out[outer][offset + j][inner] = input[outer][j][inner] along dim d. */
static void check_cat(const ct_tensor *const *inputs, int count, int dim, const ct_tensor *out)
{
    int ndim = ct_tensor_ndim(out);
    int d = dim < 0 ? dim + ndim : dim;
    const int64_t *os = ct_tensor_shape(out);
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < d; k++) outer *= os[k];
    for (int k = d + 1; k < ndim; k++) inner *= os[k];
    double *got = values_of(out);
    int64_t start = 0;
    for (int i = 0; i < count; i++) {
        const ct_tensor *t = inputs[i];
        if (ct_tensor_ndim(t) == 1 && ct_tensor_shape(t)[0] == 0 && ndim != 1) continue;
        int64_t size = ct_tensor_shape(t)[d];
        double *want = values_of(t);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < size; j++)
                for (int64_t in = 0; in < inner; in++) {
                    double w = want[(o * size + j) * inner + in];
                    double g = got[(o * os[d] + start + j) * inner + in];
                    if (w != g) fail_msg("input %d at (%lld, %lld, %lld): %g != %g", i,
                                         (long long)o, (long long)j, (long long)in, g, w);
                }
        free(want);
        start += size;
    }
    assert_int_equal(start, os[d]);
    free(got);
}

static void cat_along_every_dim_including_negative_dims(void **state)
{
    (void)state;
    int64_t base[3] = {2, 3, 4};
    for (int dim = -3; dim < 3; dim++) {
        int d = dim < 0 ? dim + 3 : dim;
        int64_t s1[3] = {2, 3, 4}, s2[3] = {2, 3, 4}, s3[3] = {2, 3, 4};
        s2[d] = 1;
        s3[d] = 5;
        ct_tensor *t[3] = {make(CT_F32, s1, 3, 1), make(CT_F32, s2, 3, 2), make(CT_F32, s3, 3, 3)};
        ct_tensor *out = ct_cat((const ct_tensor *const *)t, 3, dim);
        assert_non_null(out);
        int64_t expected[3] = {base[0], base[1], base[2]};
        expected[d] = base[d] + 1 + 5;
        assert_memory_equal(ct_tensor_shape(out), expected, sizeof expected);
        check_cat((const ct_tensor *const *)t, 3, dim, out);
        ct_release(out);
        for (int i = 0; i < 3; i++) ct_release(t[i]);
    }
}

static void cat_promotes_dtypes_like_pytorch(void **state)
{
    (void)state;
    int64_t s[2] = {2, 2};
    ct_tensor *i = make(CT_I32, s, 2, 1), *f = make(CT_F32, s, 2, 2), *u = make(CT_U8, s, 2, 0);
    ct_tensor *l = make(CT_I64, s, 2, 3), *b = ct_ones(s, 2, CT_BOOL, CT_DEVICE_CPU);
    const ct_tensor *if_[2] = {i, f}, *ul[2] = {u, l}, *bu[2] = {b, u}, *bb[2] = {b, b};
    ct_tensor *out = ct_cat(if_, 2, 0);
    assert_int_equal(ct_tensor_dtype(out), CT_F32);
    check_cat(if_, 2, 0, out);
    ct_release(out);
    out = ct_cat(ul, 2, 1);
    assert_int_equal(ct_tensor_dtype(out), CT_I64);
    check_cat(ul, 2, 1, out);
    ct_release(out);
    out = ct_cat(bu, 2, 0);
    assert_int_equal(ct_tensor_dtype(out), CT_U8);
    ct_release(out);
    out = ct_cat(bb, 2, 0);
    assert_int_equal(ct_tensor_dtype(out), CT_BOOL);
    ct_release(out);
    ct_release(i);
    ct_release(f);
    ct_release(u);
    ct_release(l);
    ct_release(b);
}

static void cat_reads_strided_views(void **state)
{
    (void)state;
    int64_t s[2] = {4, 6};
    ct_tensor *a = make(CT_F64, s, 2, 1), *b = make(CT_F64, s, 2, 2);
    /* a transposed ([6, 4]) and every other row of b ([2, 6]) seen as [6, 2] transposed. */
    int64_t at_shape[2] = {6, 4}, at_strides[2] = {1, 6};
    int64_t bs_shape[2] = {6, 2}, bs_strides[2] = {1, 12};
    ct_tensor *at = ct_tensor_view_of(a, 2, at_shape, at_strides, 0);
    ct_tensor *bs = ct_tensor_view_of(b, 2, bs_shape, bs_strides, 6);
    const ct_tensor *list[2] = {at, bs};
    ct_tensor *out = ct_cat(list, 2, 1);
    int64_t expected[2] = {6, 6};
    assert_memory_equal(ct_tensor_shape(out), expected, sizeof expected);
    check_cat(list, 2, 1, out);
    ct_release(out);
    ct_release(at);
    ct_release(bs);
    ct_release(a);
    ct_release(b);
}

static void cat_with_empty_inputs(void **state)
{
    (void)state;
    int64_t s[2] = {2, 3}, e[2] = {0, 3}, legacy[1] = {0}, wide_empty[2] = {2, 0};
    ct_tensor *a = make(CT_F32, s, 2, 1), *empty_rows = ct_empty(e, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *empty_1d = ct_empty(legacy, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *no_cols = ct_empty(wide_empty, 2, CT_F32, CT_DEVICE_CPU);
    /* [0, 3] joins along dim 0; a 1-D [0] joins anything (PyTorch's legacy rule). */
    const ct_tensor *list[4] = {empty_rows, a, empty_1d, a};
    ct_tensor *out = ct_cat(list, 4, 0);
    int64_t expected[2] = {4, 3};
    assert_non_null(out);
    assert_memory_equal(ct_tensor_shape(out), expected, sizeof expected);
    check_cat(list, 4, 0, out);
    ct_release(out);
    /* [2, 0] joins along dim 1. */
    const ct_tensor *cols[3] = {no_cols, a, no_cols};
    out = ct_cat(cols, 3, -1);
    assert_memory_equal(ct_tensor_shape(out), s, sizeof s);
    check_cat(cols, 3, 1, out);
    ct_release(out);
    /* All empty: an empty result. */
    const ct_tensor *empties[2] = {empty_rows, empty_rows};
    out = ct_cat(empties, 2, 0);
    assert_non_null(out);
    assert_int_equal(ct_numel(out), 0);
    ct_release(out);
    const ct_tensor *legacies[2] = {empty_1d, empty_1d};
    out = ct_cat(legacies, 2, 0);
    assert_non_null(out);
    assert_int_equal(ct_tensor_ndim(out), 1);
    assert_int_equal(ct_numel(out), 0);
    ct_release(out);
    ct_release(a);
    ct_release(empty_rows);
    ct_release(empty_1d);
    ct_release(no_cols);
}

static void cat_of_one_tensor_is_a_new_copy(void **state)
{
    (void)state;
    int64_t s[1] = {5};
    ct_tensor *a = make(CT_I64, s, 1, 4);
    const ct_tensor *list[1] = {a};
    ct_tensor *out = ct_cat(list, 1, 0);
    assert_false(ct_tensor_shares_storage(out, a));
    check_cat(list, 1, 0, out);
    ct_release(out);
    ct_release(a);
}

/* stack along dim d: out's slice i along d is input i. */
static void check_stack(const ct_tensor *const *inputs, int count, int dim, const ct_tensor *out)
{
    int ndim = ct_tensor_ndim(out);
    int d = dim < 0 ? dim + ndim : dim;
    const int64_t *os = ct_tensor_shape(out);
    assert_int_equal(os[d], count);
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < d; k++) outer *= os[k];
    for (int k = d + 1; k < ndim; k++) inner *= os[k];
    double *got = values_of(out);
    for (int i = 0; i < count; i++) {
        double *want = values_of(inputs[i]);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t in = 0; in < inner; in++)
                assert_true(got[(o * count + i) * inner + in] == want[o * inner + in]);
        free(want);
    }
    free(got);
}

static void stack_along_every_dim_including_negative_dims(void **state)
{
    (void)state;
    int64_t s[2] = {3, 4};
    ct_tensor *t[3] = {make(CT_F32, s, 2, 1), make(CT_F32, s, 2, 2), make(CT_I32, s, 2, 3)};
    for (int dim = -3; dim <= 2; dim++) {
        ct_tensor *out = ct_stack((const ct_tensor *const *)t, 3, dim);
        assert_non_null(out);
        assert_int_equal(ct_tensor_ndim(out), 3);
        assert_int_equal(ct_tensor_dtype(out), CT_F32);
        check_stack((const ct_tensor *const *)t, 3, dim, out);
        ct_release(out);
    }
    for (int i = 0; i < 3; i++) ct_release(t[i]);
}

static void stack_of_scalars_strided_views_and_empty_tensors(void **state)
{
    (void)state;
    double x = 1.5, y = -2.0;
    ct_tensor *sx = ct_tensor_from_data(&x, CT_F64, NULL, 0, CT_DEVICE_CPU);
    ct_tensor *sy = ct_tensor_from_data(&y, CT_F64, NULL, 0, CT_DEVICE_CPU);
    const ct_tensor *scalars[2] = {sx, sy};
    ct_tensor *out = ct_stack(scalars, 2, 0);
    int64_t two[1] = {2};
    assert_int_equal(ct_tensor_ndim(out), 1);
    assert_memory_equal(ct_tensor_shape(out), two, sizeof two);
    check_stack(scalars, 2, 0, out);
    ct_release(out);

    int64_t s[2] = {3, 4}, ts[2] = {4, 3}, tstr[2] = {1, 4};
    ct_tensor *a = make(CT_F32, s, 2, 1), *b = make(CT_F32, s, 2, 2);
    ct_tensor *at = ct_tensor_view_of(a, 2, ts, tstr, 0), *bt = ct_tensor_view_of(b, 2, ts, tstr, 0);
    const ct_tensor *views[2] = {at, bt};
    out = ct_stack(views, 2, 1);
    check_stack(views, 2, 1, out);
    ct_release(out);

    int64_t e[2] = {0, 3}, expected[3] = {0, 3, 2};
    ct_tensor *empty = ct_empty(e, 2, CT_F32, CT_DEVICE_CPU);
    const ct_tensor *empties[2] = {empty, empty};
    out = ct_stack(empties, 2, -1);
    assert_non_null(out);
    assert_memory_equal(ct_tensor_shape(out), expected, sizeof expected);
    ct_release(out);
    ct_release(empty);
    ct_release(at);
    ct_release(bt);
    ct_release(a);
    ct_release(b);
    ct_release(sx);
    ct_release(sy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cat_along_every_dim_including_negative_dims),
        cmocka_unit_test(cat_promotes_dtypes_like_pytorch),
        cmocka_unit_test(cat_reads_strided_views),
        cmocka_unit_test(cat_with_empty_inputs),
        cmocka_unit_test(cat_of_one_tensor_is_a_new_copy),
        cmocka_unit_test(stack_along_every_dim_including_negative_dims),
        cmocka_unit_test(stack_of_scalars_strided_views_and_empty_tensors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
