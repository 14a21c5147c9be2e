/* Bad input to the elementwise ops: shapes that do not broadcast, dtypes an op does not take,
 * NULL tensors (the first error of a chain is kept) and operands on two devices. Each case checks
 * the status and the message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ops/elementwise_check.h"
#include "support/fake_device.h"

typedef ct_tensor *(*binary_fn)(const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*unary_fn)(const ct_tensor *);
typedef ct_tensor *(*scalar_fn)(const ct_tensor *, double);

static const struct {
    const char *name;
    binary_fn fn;
} binary_ops[] = {
    {"ct_add", ct_add}, {"ct_sub", ct_sub}, {"ct_mul", ct_mul}, {"ct_div", ct_div},
    {"ct_pow", ct_pow}, {"ct_maximum", ct_maximum}, {"ct_minimum", ct_minimum},
    {"ct_eq", ct_eq}, {"ct_ne", ct_ne}, {"ct_lt", ct_lt}, {"ct_le", ct_le}, {"ct_gt", ct_gt},
    {"ct_ge", ct_ge},
};
#define BINARY_COUNT (int)(sizeof binary_ops / sizeof binary_ops[0])

static const struct {
    const char *name;
    unary_fn fn;
} unary_ops[] = {
    {"ct_neg", ct_neg}, {"ct_abs", ct_abs}, {"ct_exp", ct_exp}, {"ct_log", ct_log},
    {"ct_sqrt", ct_sqrt}, {"ct_relu", ct_relu}, {"ct_sigmoid", ct_sigmoid}, {"ct_tanh", ct_tanh},
    {"ct_gelu", ct_gelu},
};
#define UNARY_COUNT (int)(sizeof unary_ops / sizeof unary_ops[0])

static const struct {
    const char *name;
    scalar_fn fn;
} scalar_ops[] = {
    {"ct_add_scalar", ct_add_scalar}, {"ct_sub_scalar", ct_sub_scalar},
    {"ct_mul_scalar", ct_mul_scalar}, {"ct_div_scalar", ct_div_scalar},
    {"ct_pow_scalar", ct_pow_scalar}, {"ct_eq_scalar", ct_eq_scalar},
    {"ct_ne_scalar", ct_ne_scalar},   {"ct_lt_scalar", ct_lt_scalar},
    {"ct_le_scalar", ct_le_scalar},   {"ct_gt_scalar", ct_gt_scalar},
    {"ct_ge_scalar", ct_ge_scalar},
};
#define SCALAR_COUNT (int)(sizeof scalar_ops / sizeof scalar_ops[0])

static ct_tensor *make(ct_dtype dtype, const int64_t *shape, int ndim, ct_device device)
{
    ct_tensor *t = ct_ones(shape, ndim, dtype, device);
    assert_non_null(t);
    return t;
}

static void shape_mismatch_in_every_binary_op_names_both_shapes(void **state)
{
    (void)state;
    ct_clear_error();
    int64_t s23[2] = {2, 3}, s4[1] = {4}, s0[1] = {0}, s2[1] = {2};
    ct_tensor *a = make(CT_F32, s23, 2, CT_DEVICE_CPU), *b = make(CT_F32, s4, 1, CT_DEVICE_CPU);
    ct_tensor *e = make(CT_I32, s0, 1, CT_DEVICE_CPU), *c = make(CT_I32, s2, 1, CT_DEVICE_CPU);
    for (int k = 0; k < BINARY_COUNT; k++) {
        assert_null(binary_ops[k].fn(a, b));
        ASSERT_ERROR(CT_ERR_SHAPE, binary_ops[k].name, "[2, 3]", "[4]");
        assert_null(binary_ops[k].fn(b, a));
        ASSERT_ERROR(CT_ERR_SHAPE, binary_ops[k].name, "[4]", "[2, 3]");
        /* an empty dim broadcasts only against 1 */
        assert_null(binary_ops[k].fn(e, c));
        ASSERT_ERROR(CT_ERR_SHAPE, binary_ops[k].name, "[0]", "[2]");
    }
    ct_tensor *cond = make(CT_BOOL, s4, 1, CT_DEVICE_CPU);
    assert_null(ct_where(cond, a, a));
    ASSERT_ERROR(CT_ERR_SHAPE, "ct_where", "[4]", "[2, 3]");
    assert_null(ct_where(cond, c, c));
    ASSERT_ERROR(CT_ERR_SHAPE, "ct_where", "[4]", "[2]");
    ct_release(cond);
    ct_release(a);
    ct_release(b);
    ct_release(e);
    ct_release(c);
}

static void unsupported_dtypes_are_dtype_errors_that_say_what_to_do(void **state)
{
    (void)state;
    ct_clear_error();
    int64_t s3[1] = {3};
    ct_tensor *mask = make(CT_BOOL, s3, 1, CT_DEVICE_CPU), *n = make(CT_I32, s3, 1, CT_DEVICE_CPU);
    ct_tensor *f = make(CT_F32, s3, 1, CT_DEVICE_CPU), *u = make(CT_U8, s3, 1, CT_DEVICE_CPU);

    assert_null(ct_sub(mask, mask));
    ASSERT_ERROR(CT_ERR_DTYPE, "ct_sub", "bool", "ct_eq_scalar(mask, 0)");
    assert_null(ct_sub(mask, n));
    ASSERT_ERROR(CT_ERR_DTYPE, "ct_sub", "a is bool, b is int32");
    assert_null(ct_sub(f, mask));
    ASSERT_ERROR(CT_ERR_DTYPE, "ct_sub", "a is float32, b is bool");
    assert_null(ct_sub_scalar(mask, 1.0));
    ASSERT_ERROR(CT_ERR_DTYPE, "ct_sub_scalar", "bool");
    assert_null(ct_pow(mask, mask));
    ASSERT_ERROR(CT_ERR_DTYPE, "ct_pow", "bool", "ct_to_dtype");
    assert_null(ct_neg(mask));
    ASSERT_ERROR(CT_ERR_DTYPE, "ct_neg", "negation", "bool", "ct_eq_scalar(mask, 0)");
    assert_null(ct_abs(mask));
    ASSERT_ERROR(CT_ERR_DTYPE, "ct_abs", "bool", "ct_to_dtype");
    assert_null(ct_relu(mask));
    ASSERT_ERROR(CT_ERR_DTYPE, "ct_relu", "bool");
    assert_null(ct_clamp(mask, 0, 1));
    ASSERT_ERROR(CT_ERR_DTYPE, "ct_clamp", "bool");
    assert_null(ct_clamp_min(mask, 0));
    ASSERT_ERROR(CT_ERR_DTYPE, "ct_clamp_min", "bool");
    assert_null(ct_clamp_max(mask, 1));
    ASSERT_ERROR(CT_ERR_DTYPE, "ct_clamp_max", "bool");
    assert_null(ct_where(f, n, n));
    ASSERT_ERROR(CT_ERR_DTYPE, "ct_where", "cond must be a bool tensor", "float32");
    assert_null(ct_where(u, n, n));
    ASSERT_ERROR(CT_ERR_DTYPE, "ct_where", "uint8");

    ct_release(mask);
    ct_release(n);
    ct_release(f);
    ct_release(u);
}

static void a_nan_bound_cannot_clamp_an_integer_tensor(void **state)
{
    (void)state;
    ct_clear_error();
    int64_t s3[1] = {3};
    ct_tensor *n = make(CT_I64, s3, 1, CT_DEVICE_CPU);
    assert_null(ct_clamp(n, NAN, 1));
    ASSERT_ERROR(CT_ERR_INVALID_ARGUMENT, "ct_clamp", "NaN", "int64");
    assert_null(ct_clamp_max(n, NAN));
    ASSERT_ERROR(CT_ERR_INVALID_ARGUMENT, "ct_clamp_max", "NaN");
    ct_release(n);
}

static void null_inputs_return_null_and_name_the_argument(void **state)
{
    (void)state;
    ct_clear_error();
    int64_t s3[1] = {3};
    ct_tensor *t = make(CT_F32, s3, 1, CT_DEVICE_CPU);
    for (int k = 0; k < BINARY_COUNT; k++) {
        assert_null(binary_ops[k].fn(NULL, t));
        ASSERT_ERROR(CT_ERR_NULL_ARGUMENT, binary_ops[k].name, "'a'");
        assert_null(binary_ops[k].fn(t, NULL));
        ASSERT_ERROR(CT_ERR_NULL_ARGUMENT, binary_ops[k].name, "'b'");
    }
    for (int k = 0; k < UNARY_COUNT; k++) {
        assert_null(unary_ops[k].fn(NULL));
        ASSERT_ERROR(CT_ERR_NULL_ARGUMENT, unary_ops[k].name, "'a'");
    }
    for (int k = 0; k < SCALAR_COUNT; k++) {
        assert_null(scalar_ops[k].fn(NULL, 1.0));
        ASSERT_ERROR(CT_ERR_NULL_ARGUMENT, scalar_ops[k].name, "'a'");
    }
    assert_null(ct_clamp(NULL, 0, 1));
    ASSERT_ERROR(CT_ERR_NULL_ARGUMENT, "ct_clamp", "'a'");
    assert_null(ct_clamp_min(NULL, 0));
    ASSERT_ERROR(CT_ERR_NULL_ARGUMENT, "ct_clamp_min", "'a'");
    assert_null(ct_clamp_max(NULL, 0));
    ASSERT_ERROR(CT_ERR_NULL_ARGUMENT, "ct_clamp_max", "'a'");
    assert_null(ct_where(NULL, t, t));
    ASSERT_ERROR(CT_ERR_NULL_ARGUMENT, "ct_where", "'cond'");
    assert_null(ct_where(t, NULL, t));
    ASSERT_ERROR(CT_ERR_NULL_ARGUMENT, "ct_where", "'a'");
    assert_null(ct_where(t, t, NULL));
    ASSERT_ERROR(CT_ERR_NULL_ARGUMENT, "ct_where", "'b'");
    ct_release(t);
}

static void a_chain_returns_null_and_keeps_its_first_error(void **state)
{
    (void)state;
    ct_clear_error();
    int64_t s23[2] = {2, 3}, s4[1] = {4};
    ct_tensor *a = make(CT_F32, s23, 2, CT_DEVICE_CPU), *b = make(CT_F32, s4, 1, CT_DEVICE_CPU);

    assert_null(ct_relu(ct_add(NULL, b)));
    ASSERT_ERROR(CT_ERR_NULL_ARGUMENT, "ct_add", "'a'");

    /* the shape error of the inner add survives the outer ops */
    assert_null(ct_sigmoid(ct_mul_scalar(ct_relu(ct_add(a, b)), 2.0)));
    ASSERT_ERROR(CT_ERR_SHAPE, "ct_add", "[2, 3]", "[4]");

    assert_null(ct_where(ct_gt(a, b), a, a));
    ASSERT_ERROR(CT_ERR_SHAPE, "ct_gt");

    ct_release(a);
    ct_release(b);
}

static void operands_on_two_devices_are_an_error_naming_both(void **state)
{
    (void)state;
    ct_clear_error();
    int64_t s3[1] = {3};
    ct_device gpu0 = {CT_OPENCL, 0}, gpu1 = {CT_OPENCL, 1};
    ct_tensor *on0 = make(CT_F32, s3, 1, gpu0), *on1 = make(CT_F32, s3, 1, gpu1);
    ct_tensor *cpu = make(CT_F32, s3, 1, CT_DEVICE_CPU), *mask = make(CT_BOOL, s3, 1, CT_DEVICE_CPU);
    size_t copied = ct_test_fake_bytes_copied();
    for (int k = 0; k < BINARY_COUNT; k++) {
        assert_null(binary_ops[k].fn(on0, cpu));
        ASSERT_ERROR(CT_ERR_DEVICE, binary_ops[k].name, "opencl:0", "cpu", "same device");
        assert_null(binary_ops[k].fn(cpu, on1));
        ASSERT_ERROR(CT_ERR_DEVICE, binary_ops[k].name, "cpu", "opencl:1");
        assert_null(binary_ops[k].fn(on0, on1));
        ASSERT_ERROR(CT_ERR_DEVICE, binary_ops[k].name, "opencl:0", "opencl:1");
    }
    assert_null(ct_where(mask, on0, on0));
    ASSERT_ERROR(CT_ERR_DEVICE, "ct_where", "cpu", "opencl:0");
    assert_null(ct_where(mask, cpu, on1));
    ASSERT_ERROR(CT_ERR_DEVICE, "ct_where", "cpu", "opencl:1");
    /* never a silent copy */
    assert_int_equal(ct_test_fake_bytes_copied(), copied);
    ct_release(on0);
    ct_release(on1);
    ct_release(cpu);
    ct_release(mask);
}

static void ops_on_one_accelerator_compute_there(void **state)
{
    (void)state;
    ct_clear_error();
    ct_device gpu1 = {CT_OPENCL, 1};
    int64_t shape[1] = {3};
    float av[3] = {1, -2, 3}, bv[3] = {10, 20, 30};
    ct_tensor *a = ct_tensor_from_data(av, CT_F32, shape, 1, gpu1);
    ct_tensor *b = ct_tensor_from_data(bv, CT_F32, shape, 1, gpu1);
    ct_tensor *sum = ct_add(a, b), *r = ct_relu(a), *s = ct_mul_scalar(a, 2), *g = ct_gt(b, a);
    ct_tensor *w = ct_where(g, a, b);
    ct_tensor *results[5] = {sum, r, s, g, w};
    for (int k = 0; k < 5; k++) {
        assert_non_null(results[k]);
        assert_true(ct_device_equal(ct_tensor_device(results[k]), gpu1));
    }
    float back[3];
    assert_int_equal(ct_tensor_to_array(sum, back, sizeof back), CT_OK);
    assert_true(back[0] == 11 && back[1] == 18 && back[2] == 33);
    assert_int_equal(ct_tensor_to_array(w, back, sizeof back), CT_OK);
    assert_true(back[0] == 1 && back[1] == -2 && back[2] == 3);
    for (int k = 0; k < 5; k++) ct_release(results[k]);
    ct_release(a);
    ct_release(b);
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shape_mismatch_in_every_binary_op_names_both_shapes),
        cmocka_unit_test(unsupported_dtypes_are_dtype_errors_that_say_what_to_do),
        cmocka_unit_test(a_nan_bound_cannot_clamp_an_integer_tensor),
        cmocka_unit_test(null_inputs_return_null_and_name_the_argument),
        cmocka_unit_test(a_chain_returns_null_and_keeps_its_first_error),
        cmocka_unit_test(operands_on_two_devices_are_an_error_naming_both),
        cmocka_unit_test(ops_on_one_accelerator_compute_there),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
