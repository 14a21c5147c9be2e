/* ct_matmul rejects bad input with a status and a message that says what is wrong: shapes that
 * do not multiply or broadcast, 0-d operands, bool, mixed dtypes, NULL, two devices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ctorch.h"
#include "support/fake_device.h"

static ct_tensor *zeros(ct_dtype dtype, const int64_t *shape, int ndim)
{
    ct_tensor *t = ct_zeros(shape, ndim, dtype, CT_DEVICE_CPU);
    assert_non_null(t);
    return t;
}

/* ct_matmul(a, b) fails with status and a message containing each of the fragments. */
static void expect_error(const ct_tensor *a, const ct_tensor *b, ct_status status,
                         const char *fragment1, const char *fragment2)
{
    ct_clear_error();
    ct_tensor *c = ct_matmul(a, b);
    assert_null(c);
    assert_int_equal(ct_last_error(), status);
    const char *message = ct_last_error_message();
    if (!strstr(message, fragment1)) fail_msg("'%s' not in '%s'", fragment1, message);
    if (fragment2 && !strstr(message, fragment2)) fail_msg("'%s' not in '%s'", fragment2, message);
    ct_clear_error();
}

static void inner_size_mismatch_names_both_shapes_and_sizes(void **state)
{
    (void)state;
    int64_t s23[2] = {2, 3}, s45[2] = {4, 5}, s3[1] = {3}, s4[1] = {4}, b343[3] = {3, 4, 3};
    ct_tensor *a = zeros(CT_F32, s23, 2), *b = zeros(CT_F32, s45, 2);
    ct_tensor *v3 = zeros(CT_F32, s3, 1), *v4 = zeros(CT_F32, s4, 1), *batched = zeros(CT_F32, b343, 3);
    expect_error(a, b, CT_ERR_SHAPE, "ct_matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)", NULL);
    expect_error(v3, v4, CT_ERR_SHAPE, "shapes [3] and [4] cannot be multiplied (3 != 4)", NULL);
    expect_error(v4, a, CT_ERR_SHAPE, "shapes [4] and [2, 3] cannot be multiplied (4 != 2)", NULL);
    expect_error(a, v4, CT_ERR_SHAPE, "shapes [2, 3] and [4] cannot be multiplied (3 != 4)", NULL);
    expect_error(batched, a, CT_ERR_SHAPE, "shapes [3, 4, 3] and [2, 3] cannot be multiplied (3 != 2)", NULL);
    ct_release(a);
    ct_release(b);
    ct_release(v3);
    ct_release(v4);
    ct_release(batched);
}

static void batch_dims_that_do_not_broadcast_are_named(void **state)
{
    (void)state;
    int64_t as[3] = {3, 2, 4}, bs[3] = {5, 4, 2};
    ct_tensor *a = zeros(CT_F32, as, 3), *b = zeros(CT_F32, bs, 3);
    expect_error(a, b, CT_ERR_SHAPE, "[3, 2, 4] and [5, 4, 2] cannot be broadcast", "3 != 5");
    ct_release(a);
    ct_release(b);
}

static void zero_dim_operands_are_rejected(void **state)
{
    (void)state;
    int64_t s2[1] = {2};
    ct_tensor *scalar = zeros(CT_F32, NULL, 0), *v = zeros(CT_F32, s2, 1);
    expect_error(scalar, v, CT_ERR_SHAPE, "need at least 1 dim", "[]");
    expect_error(v, scalar, CT_ERR_SHAPE, "need at least 1 dim", NULL);
    ct_release(scalar);
    ct_release(v);
}

static void bool_matmul_is_a_dtype_error(void **state)
{
    (void)state;
    int64_t s[2] = {2, 2};
    ct_tensor *a = zeros(CT_BOOL, s, 2);
    expect_error(a, a, CT_ERR_DTYPE, "ct_matmul", "bool");
    ct_release(a);
}

static void mixed_dtypes_are_an_error_naming_both(void **state)
{
    (void)state;
    int64_t s[2] = {2, 2};
    ct_tensor *f = zeros(CT_F32, s, 2), *d = zeros(CT_F64, s, 2), *i = zeros(CT_I32, s, 2);
    expect_error(f, d, CT_ERR_DTYPE, "same dtype", "float32 and float64");
    expect_error(i, f, CT_ERR_DTYPE, "same dtype", "int32 and float32");
    ct_release(f);
    ct_release(d);
    ct_release(i);
}

static void null_inputs_name_the_argument_and_keep_an_earlier_error(void **state)
{
    (void)state;
    int64_t s[2] = {2, 2};
    ct_tensor *a = zeros(CT_F32, s, 2);
    expect_error(NULL, a, CT_ERR_NULL_ARGUMENT, "ct_matmul", "'a'");
    expect_error(a, NULL, CT_ERR_NULL_ARGUMENT, "ct_matmul", "'b'");
    /* A chain: the first failure's error is kept. */
    int64_t bad[2] = {3, 3};
    ct_tensor *b = zeros(CT_F32, bad, 2);
    ct_clear_error();
    ct_tensor *c = ct_matmul(ct_matmul(a, b), a);
    assert_null(c);
    assert_int_equal(ct_last_error(), CT_ERR_SHAPE);
    assert_non_null(strstr(ct_last_error_message(), "cannot be multiplied"));
    ct_clear_error();
    ct_release(a);
    ct_release(b);
}

static void operands_on_two_devices_are_an_error_naming_both(void **state)
{
    (void)state;
    int64_t s[2] = {2, 2};
    ct_device fake0 = {CT_OPENCL, 0}, fake1 = {CT_OPENCL, 1};
    ct_tensor *cpu = zeros(CT_F32, s, 2);
    ct_tensor *d0 = ct_ones(s, 2, CT_F32, fake0), *d1 = ct_ones(s, 2, CT_F32, fake1);
    assert_non_null(d0);
    assert_non_null(d1);
    expect_error(cpu, d0, CT_ERR_DEVICE, "cpu", "opencl:0");
    expect_error(d0, d1, CT_ERR_DEVICE, "opencl:0", "opencl:1");
    /* On one device it works, and the result stays there. */
    ct_tensor *c = ct_matmul(d1, d1);
    assert_non_null(c);
    assert_true(ct_device_equal(ct_tensor_device(c), fake1));
    float v[4];
    assert_int_equal(ct_tensor_to_array(c, v, sizeof v), CT_OK);
    for (int i = 0; i < 4; i++) assert_true(v[i] == 2.0f);
    ct_release(c);
    ct_release(cpu);
    ct_release(d0);
    ct_release(d1);
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inner_size_mismatch_names_both_shapes_and_sizes),
        cmocka_unit_test(batch_dims_that_do_not_broadcast_are_named),
        cmocka_unit_test(zero_dim_operands_are_rejected),
        cmocka_unit_test(bool_matmul_is_a_dtype_error),
        cmocka_unit_test(mixed_dtypes_are_an_error_naming_both),
        cmocka_unit_test(null_inputs_name_the_argument_and_keep_an_earlier_error),
        cmocka_unit_test(operands_on_two_devices_are_an_error_naming_both),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
