/* ct_batch_norm rejects bad input with a status and a message naming the shapes: fewer than 2
 * dims, per-channel tensors of the wrong shape or dtype, integer inputs, one running statistic
 * without the other, evaluation without running statistics, a single value per channel when
 * training, NULL input and operands on two devices. */
#include "test_common.h"
#include "support/fake_device.h"

static ct_tensor *f32(const int64_t *shape, int ndim)
{
    return ct_zeros(shape, ndim, CT_F32, CT_DEVICE_CPU);
}

static void expect(const ct_tensor *x, ct_tensor *rm, ct_tensor *rv, const ct_tensor *w, const ct_tensor *b,
                   bool training, ct_status status, const char *fragment1, const char *fragment2)
{
    ct_clear_error();
    assert_null(ct_batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5));
    assert_int_equal(ct_last_error(), status);
    const char *message = ct_last_error_message();
    if (!strstr(message, fragment1)) fail_msg("'%s' not in '%s'", fragment1, message);
    if (fragment2 && !strstr(message, fragment2)) fail_msg("'%s' not in '%s'", fragment2, message);
    ct_clear_error();
}

static void shapes_and_dtypes(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t c3 = 3, c4 = 4;
    ct_tensor *x = f32((int64_t[]){4, 3, 2, 2}, 4), *c = f32(&c3, 1), *wrong = f32(&c4, 1);
    expect(f32(&c3, 1), NULL, NULL, NULL, NULL, true, CT_ERR_SHAPE,
           "ct_batch_norm: expected input [N, C] or [N, C, ...] (2 or more dims), but got input of shape [3]", NULL);
    expect(x, wrong, c, NULL, NULL, true, CT_ERR_SHAPE,
           "expected running_mean of shape [3] (one per channel of input [4, 3, 2, 2]), but got running_mean of "
           "shape [4]", NULL);
    expect(x, c, c, wrong, NULL, true, CT_ERR_SHAPE, "expected weight of shape [3]", "got weight of shape [4]");
    expect(x, NULL, NULL, NULL, f32((int64_t[]){1, 3}, 2), true, CT_ERR_SHAPE, "expected bias of shape [3]",
           "got bias of shape [1, 3]");
    expect(ct_zeros((int64_t[]){4, 3}, 2, CT_I64, CT_DEVICE_CPU), NULL, NULL, NULL, NULL, true, CT_ERR_DTYPE,
           "input has dtype int64; batch normalisation needs a floating dtype (float32, float64, "
           "float16 or bfloat16)", NULL);
    expect(x, NULL, NULL, ct_ones(&c3, 1, CT_F64, CT_DEVICE_CPU), NULL, true, CT_ERR_DTYPE,
           "input is float32 but weight is float64", NULL);
    ct_scope_pop();
}

static void running_statistics_and_batch_sizes(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t c3 = 3;
    ct_tensor *x = f32((int64_t[]){4, 3}, 2), *c = f32(&c3, 1);
    expect(x, c, NULL, NULL, NULL, true, CT_ERR_NULL_ARGUMENT,
           "running_mean is given but running_var is NULL; give both running statistics or neither", NULL);
    expect(x, NULL, c, NULL, NULL, false, CT_ERR_NULL_ARGUMENT, "running_var is given but running_mean is NULL", NULL);
    expect(x, NULL, NULL, NULL, NULL, false, CT_ERR_NULL_ARGUMENT,
           "running_mean and running_var must be given when not training", NULL);
    expect(f32((int64_t[]){1, 3}, 2), c, c, NULL, NULL, true, CT_ERR_SHAPE,
           "expected more than 1 value per channel when training, but got input of shape [1, 3]", NULL);
    expect(f32((int64_t[]){1, 3, 1, 1}, 4), NULL, NULL, NULL, NULL, true, CT_ERR_SHAPE,
           "but got input of shape [1, 3, 1, 1]", NULL);
    /* one value per channel is fine in evaluation */
    assert_non_null(ct_batch_norm(f32((int64_t[]){1, 3}, 2), c, c, NULL, NULL, false, 0.1, 1e-5));
    ct_scope_pop();
}

static void null_input_and_two_devices(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t c3 = 3;
    expect(NULL, NULL, NULL, NULL, NULL, true, CT_ERR_NULL_ARGUMENT, "ct_batch_norm", "input");
    ct_tensor *x = f32((int64_t[]){4, 3}, 2);
    ct_tensor *w0 = ct_ones(&c3, 1, CT_F32, (ct_device){CT_OPENCL, 0});
    expect(x, NULL, NULL, w0, NULL, true, CT_ERR_DEVICE, "cpu", "opencl:0");
    ct_tensor *rm1 = ct_zeros(&c3, 1, CT_F32, (ct_device){CT_OPENCL, 1});
    expect(ct_zeros((int64_t[]){4, 3}, 2, CT_F32, (ct_device){CT_OPENCL, 0}), rm1, rm1, NULL, NULL, true,
           CT_ERR_DEVICE, "opencl:0", "opencl:1");
    ct_scope_pop();
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shapes_and_dtypes),
        cmocka_unit_test(running_statistics_and_batch_sizes),
        cmocka_unit_test(null_input_and_two_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
