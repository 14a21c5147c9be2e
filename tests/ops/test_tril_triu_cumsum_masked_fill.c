/* tril/triu keep one side of a diagonal of the last two dims (any batch, any diagonal), cumsum
 * runs along a dim (integers in int64, as PyTorch), masked_fill writes a value where a broadcast
 * mask is true; on every device, with PyTorch's refusals. */
#include <math.h>

#include "support/devices.h"
#include "test_common.h"

static void values(const ct_tensor *t, double *out, int64_t n)
{
    ct_tensor *d = ct_to_dtype(t, CT_F64);
    ct_tensor *h = ct_to(d, CT_DEVICE_CPU);
    assert_int_equal(ct_tensor_to_array(h, out, (size_t)n * sizeof *out), CT_OK);
    ct_release(h);
    ct_release(d);
}

static void triangles_keep_one_side_of_the_diagonal(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    int64_t shape[3] = {2, 3, 4};
    double x[24], v[24];
    for (int k = 0; k < 24; k++) x[k] = k + 1;
    for (int d = 0; d < count; d++)
        for (int dtype = 0; dtype < 3; dtype++) {
            ct_scope_push();
            const ct_dtype dtypes[3] = {CT_F32, CT_I64, CT_BOOL};
            ct_tensor *f = ct_tensor_from_data(x, CT_F64, shape, 3, devices[d]);
            ct_tensor *t = ct_to_dtype(f, dtypes[dtype]);
            for (int64_t diagonal = -4; diagonal <= 5; diagonal++)
                for (int upper = 0; upper < 2; upper++) {
                    ct_tensor *out = upper ? ct_triu(t, diagonal) : ct_tril(t, diagonal);
                    assert_int_equal(ct_tensor_dtype(out), dtypes[dtype]);
                    values(out, v, 24);
                    for (int k = 0; k < 24; k++) {
                        int64_t row = k / 4 % 3, column = k % 4;
                        bool keep = upper ? column - row >= diagonal : column - row <= diagonal;
                        double want = dtypes[dtype] == CT_BOOL ? 1 : x[k];
                        assert_true(v[k] == (keep ? want : 0));
                    }
                    ct_release(out);
                }
            /* a transposed view: the triangle of what it shows */
            ct_tensor *tt = ct_transpose(t, 1, 2); /* [2, 4, 3] */
            ct_tensor *out = ct_tril(tt, 0);
            ct_tensor *back = ct_contiguous(ct_transpose(out, 1, 2));
            values(back, v, 24);
            for (int k = 0; k < 24; k++) {
                int64_t row = k / 4 % 3, column = k % 4; /* in t; tt's row is column */
                double want = dtypes[dtype] == CT_BOOL ? 1 : x[k];
                assert_true(v[k] == (row - column <= 0 ? want : 0));
            }
            ct_scope_pop();
        }
    ct_scope_push();
    ct_tensor *huge = ct_tril(ct_ones(shape, 3, CT_F32, CT_DEVICE_CPU), INT64_MIN);
    values(huge, v, 24);
    for (int k = 0; k < 24; k++) assert_true(v[k] == 0);
    huge = ct_triu(ct_ones(shape, 3, CT_F32, CT_DEVICE_CPU), INT64_MIN);
    values(huge, v, 24);
    for (int k = 0; k < 24; k++) assert_true(v[k] == 1);
    int64_t s4[1] = {4};
    assert_null(ct_tril(ct_ones(s4, 1, CT_F32, CT_DEVICE_CPU), 0));
    assert_error(CT_ERR_SHAPE, "at least 2");
    assert_null(ct_triu(NULL, 0));
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_triu");
    ct_scope_pop();
}

static void cumsum_runs_along_a_dim_and_integers_give_int64(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    int64_t shape[2] = {2, 3};
    const double x[6] = {1, 2, 3, 4, 5, 6};
    double v[6];
    for (int d = 0; d < count; d++) {
        ct_scope_push();
        ct_tensor *f = ct_tensor_from_data(x, CT_F64, shape, 2, devices[d]);
        values(ct_cumsum(f, 1), v, 6);
        assert_true(v[0] == 1 && v[1] == 3 && v[2] == 6 && v[3] == 4 && v[4] == 9 && v[5] == 15);
        values(ct_cumsum(f, -2), v, 6);
        assert_true(v[0] == 1 && v[2] == 3 && v[3] == 5 && v[5] == 9);
        const ct_dtype integers[4] = {CT_I32, CT_I64, CT_U8, CT_BOOL};
        for (int k = 0; k < 4; k++) {
            ct_tensor *out = ct_cumsum(ct_to_dtype(f, integers[k]), 1);
            assert_int_equal(ct_tensor_dtype(out), CT_I64);
            values(out, v, 6);
            if (integers[k] == CT_BOOL) assert_true(v[2] == 3 && v[5] == 3);
            else assert_true(v[2] == 6 && v[5] == 15);
        }
        /* uint8 would wrap at 256; int64 does not: 200 + 200 */
        const double big[2] = {200, 200};
        int64_t two[1] = {2};
        ct_tensor *u = ct_to_dtype(ct_tensor_from_data(big, CT_F64, two, 1, devices[d]), CT_U8);
        values(ct_cumsum(u, 0), v, 2);
        assert_true(v[1] == 400);
        const ct_dtype floats[3] = {CT_F32, CT_F16, CT_BF16};
        for (int k = 0; k < 3; k++)
            assert_int_equal(ct_tensor_dtype(ct_cumsum(ct_to_dtype(f, floats[k]), 0)), floats[k]);
        ct_scope_pop();
    }
    ct_scope_push();
    assert_null(ct_cumsum(ct_ones(shape, 2, CT_F32, CT_DEVICE_CPU), 2));
    assert_error(CT_ERR_INDEX, "ct_cumsum");
    assert_null(ct_cumsum(NULL, 0));
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_cumsum");
    ct_scope_pop();
}

static void masked_fill_writes_where_the_broadcast_mask_is_true(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    int64_t shape[2] = {2, 3}, s3[1] = {3};
    const double x[6] = {1, 2, 3, 4, 5, 6}, m[3] = {1, 0, 1};
    double v[6];
    for (int d = 0; d < count; d++) {
        ct_scope_push();
        ct_tensor *f = ct_tensor_from_data(x, CT_F64, shape, 2, devices[d]);
        ct_tensor *mask = ct_to_dtype(ct_tensor_from_data(m, CT_F64, s3, 1, devices[d]), CT_BOOL);
        ct_tensor *out = ct_masked_fill(f, mask, -INFINITY);
        values(out, v, 6);
        assert_true(isinf(v[0]) && v[1] == 2 && isinf(v[2]) && isinf(v[3]) && v[4] == 5);
        ct_tensor *i = ct_masked_fill(ct_to_dtype(f, CT_I32), mask, 9);
        assert_int_equal(ct_tensor_dtype(i), CT_I32);
        values(i, v, 6);
        assert_true(v[0] == 9 && v[1] == 2 && v[5] == 9);
        ct_scope_pop();
    }
    ct_scope_push();
    ct_tensor *f = ct_ones(s3, 1, CT_F32, CT_DEVICE_CPU);
    /* a broadcasts with the mask too, as in PyTorch's out-of-place masked_fill */
    ct_tensor *wide = ct_ones(shape, 2, CT_BOOL, CT_DEVICE_CPU);
    ct_tensor *both = ct_masked_fill(f, wide, 0);
    assert_int_equal(ct_tensor_ndim(both), 2);
    assert_int_equal(ct_tensor_shape(both)[0], 2);
    int64_t s4[1] = {4};
    assert_null(ct_masked_fill(f, ct_ones(s4, 1, CT_BOOL, CT_DEVICE_CPU), 0));
    assert_error(CT_ERR_SHAPE, "ct_masked_fill");
    assert_null(ct_masked_fill(f, f, 0));
    assert_error(CT_ERR_DTYPE, "must be bool");
    ct_tensor *u = ct_ones(s3, 1, CT_U8, CT_DEVICE_CPU);
    assert_null(ct_masked_fill(u, ct_ones(s3, 1, CT_BOOL, CT_DEVICE_CPU), 300));
    assert_error(CT_ERR_INVALID_ARGUMENT, "300");
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(triangles_keep_one_side_of_the_diagonal),
        cmocka_unit_test(cumsum_runs_along_a_dim_and_integers_give_int64),
        cmocka_unit_test(masked_fill_writes_where_the_broadcast_mask_is_true),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
