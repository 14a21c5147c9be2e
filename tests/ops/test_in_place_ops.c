/* In-place ops (add_, mul_, add_scalar_, mul_scalar_, fill_, zero_): results written into self on
 * every device, through views, broadcasting other; the refusals on tensors that require grad
 * while grad mode is on (as PyTorch's on leaves), allowed under no-grad; dtype and shape rules. */
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

static void in_place_ops_write_into_self_on_every_device(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    const float a[6] = {1, 2, 3, 4, 5, 6}, row[3] = {10, 20, 30};
    int64_t s23[2] = {2, 3}, s3[1] = {3};
    for (int d = 0; d < count; d++) {
        ct_scope_push();
        ct_tensor *t = ct_tensor_from_data(a, CT_F32, s23, 2, devices[d]);
        ct_tensor *r = ct_tensor_from_data(row, CT_F32, s3, 1, devices[d]);
        double v[6];
        assert_int_equal(ct_add_(t, r), CT_OK); /* broadcast over rows */
        values(t, v, 6);
        assert_true(v[0] == 11 && v[2] == 33 && v[3] == 14 && v[5] == 36);
        assert_int_equal(ct_mul_(t, t), CT_OK); /* other aliases self */
        values(t, v, 6);
        assert_true(v[0] == 121 && v[5] == 1296);
        assert_int_equal(ct_add_scalar_(t, -1), CT_OK);
        assert_int_equal(ct_mul_scalar_(t, 0.5), CT_OK);
        values(t, v, 6);
        assert_true(v[0] == 60 && v[5] == 647.5);
        /* through a view: column 1 of t */
        ct_tensor *column = ct_select(t, 1, 1);
        assert_int_equal(ct_fill_(column, 7), CT_OK);
        values(t, v, 6);
        assert_true(v[1] == 7 && v[4] == 7 && v[0] == 60);
        ct_tensor *transposed = ct_transpose(t, 0, 1);
        assert_int_equal(ct_zero_(transposed), CT_OK);
        values(t, v, 6);
        for (int k = 0; k < 6; k++) assert_true(v[k] == 0);
        /* integers stay integers: int64 += 2 */
        ct_tensor *i = ct_ones(s3, 1, CT_I64, devices[d]);
        assert_int_equal(ct_add_scalar_(i, 2), CT_OK);
        assert_int_equal(ct_mul_(i, i), CT_OK);
        assert_int_equal(ct_tensor_dtype(i), CT_I64);
        values(i, v, 3);
        assert_true(v[0] == 9 && v[2] == 9);
        ct_scope_pop();
    }
}

static void in_place_on_a_tensor_that_requires_grad_is_refused_unless_no_grad(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t s[1] = {3};
    ct_tensor *w = ct_ones(s, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *g = ct_ones(s, 1, CT_F32, CT_DEVICE_CPU);
    ct_requires_grad_(w, true);
    assert_int_equal(ct_add_(w, g), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "leaf that requires grad");
    assert_int_equal(ct_zero_(w), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_zero_");
    /* a tensor of a recorded graph: ctorch records no in-place op */
    ct_tensor *y = ct_mul_scalar(w, 2);
    assert_int_equal(ct_mul_scalar_(y, 3), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "recorded graph");
    /* nor into a plain tensor from one that requires grad */
    assert_int_equal(ct_add_(g, w), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "other requires grad");
    double v[3];
    values(w, v, 3);
    assert_true(v[0] == 1 && v[1] == 1);
    /* the optimizer's way: under no-grad */
    ct_no_grad_push();
    assert_int_equal(ct_add_(w, g), CT_OK);
    assert_int_equal(ct_mul_scalar_(w, 0.5), CT_OK);
    ct_no_grad_pop();
    values(w, v, 3);
    assert_true(v[0] == 1 && v[2] == 1);
    assert_true(ct_requires_grad(w) && ct_is_leaf(w));
    ct_scope_pop();
}

static void in_place_dtype_and_shape_rules(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t s3[1] = {3}, s23[2] = {2, 3};
    ct_tensor *i = ct_ones(s3, 1, CT_I64, CT_DEVICE_CPU);
    ct_tensor *f = ct_ones(s3, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_add_(i, f), CT_ERR_DTYPE);
    assert_error(CT_ERR_DTYPE, "can't be cast");
    assert_int_equal(ct_mul_scalar_(i, 0.5), CT_ERR_DTYPE);
    assert_error(CT_ERR_DTYPE, "ct_mul_scalar_");
    assert_int_equal(ct_add_(f, i), CT_OK); /* int into float is fine */
    ct_tensor *big = ct_ones(s23, 2, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_add_(f, big), CT_ERR_SHAPE);
    assert_error(CT_ERR_SHAPE, "self's [3]");
    assert_int_equal(ct_fill_(i, 0.5), CT_OK); /* truncated, as ct_full */
    ct_tensor *u = ct_ones(s3, 1, CT_U8, CT_DEVICE_CPU);
    assert_int_equal(ct_fill_(u, 300), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "300");
    ct_tensor *one = ct_ones(NULL, 0, CT_F32, CT_DEVICE_CPU);
    ct_tensor *expanded = ct_expand(one, s3, 1);
    assert_int_equal(ct_fill_(expanded, 2), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "single memory location");
    assert_int_equal(ct_add_(NULL, f), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "self");
    assert_int_equal(ct_mul_(f, NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "other");
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(in_place_ops_write_into_self_on_every_device),
        cmocka_unit_test(in_place_on_a_tensor_that_requires_grad_is_refused_unless_no_grad),
        cmocka_unit_test(in_place_dtype_and_shape_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
