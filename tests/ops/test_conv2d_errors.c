/* ct_conv2d rejects bad input with a status and a message naming the shapes: wrong ranks,
 * channels that groups does not divide, a channel mismatch, a kernel larger than the padded
 * input, non-positive stride/dilation/groups, negative padding, a bias of the wrong shape,
 * integer and mixed dtypes, NULL arguments and operands on two devices. */
#include "test_common.h"
#include "support/fake_device.h"

static ct_tensor *f32(const int64_t *shape, int ndim)
{
    return ct_zeros(shape, ndim, CT_F32, CT_DEVICE_CPU);
}

/* ct_conv2d(...) fails with status and a message holding both fragments. */
static void expect(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b, const int64_t *stride,
                   const int64_t *padding, const int64_t *dilation, int64_t groups, ct_status status,
                   const char *fragment1, const char *fragment2)
{
    ct_clear_error();
    assert_null(ct_conv2d(x, w, b, stride, padding, dilation, groups));
    assert_int_equal(ct_last_error(), status);
    const char *message = ct_last_error_message();
    if (!strstr(message, fragment1)) fail_msg("'%s' not in '%s'", fragment1, message);
    if (fragment2 && !strstr(message, fragment2)) fail_msg("'%s' not in '%s'", fragment2, message);
    ct_clear_error();
}

static void wrong_ranks_are_named(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *x3 = f32((int64_t[]){3, 8, 8}, 3), *x = f32((int64_t[]){2, 3, 8, 8}, 4);
    ct_tensor *w = f32((int64_t[]){4, 3, 3, 3}, 4), *w2 = f32((int64_t[]){4, 27}, 2);
    expect(x3, w, NULL, NULL, NULL, NULL, 1, CT_ERR_SHAPE,
           "ct_conv2d: expected a 4-D input [N, C, H, W], but got input of shape [3, 8, 8]", NULL);
    expect(x, w2, NULL, NULL, NULL, NULL, 1, CT_ERR_SHAPE,
           "expected a 4-D weight [O, C / groups, kH, kW], but got weight of shape [4, 27]", NULL);
    ct_scope_pop();
}

static void channels_and_groups_must_fit(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *x6 = f32((int64_t[]){2, 6, 8, 8}, 4), *x4 = f32((int64_t[]){2, 4, 8, 8}, 4);
    ct_tensor *w6 = f32((int64_t[]){6, 2, 3, 3}, 4), *w8 = f32((int64_t[]){8, 3, 3, 3}, 4);
    ct_tensor *w4 = f32((int64_t[]){4, 3, 3, 3}, 4);
    expect(x6, w6, NULL, NULL, NULL, NULL, 4, CT_ERR_SHAPE,
           "weight [6, 2, 3, 3] has 6 output channels, which groups = 4 does not divide", NULL);
    expect(x6, w8, NULL, NULL, NULL, NULL, 4, CT_ERR_SHAPE,
           "input [2, 6, 8, 8] has 6 channels, which groups = 4 does not divide", NULL);
    expect(x4, w4, NULL, NULL, NULL, NULL, 1, CT_ERR_SHAPE,
           "weight [4, 3, 3, 3] with groups = 1 expects an input with 3 channels, but input "
           "[2, 4, 8, 8] has 4", NULL);
    expect(x6, w6, NULL, NULL, NULL, NULL, 2, CT_ERR_SHAPE,
           "weight [6, 2, 3, 3] with groups = 2 expects an input with 4 channels", "[2, 6, 8, 8] has 6");
    expect(x6, w6, NULL, NULL, NULL, NULL, 0, CT_ERR_INVALID_ARGUMENT, "groups must be positive, but got 0", NULL);
    expect(x6, w6, NULL, NULL, NULL, NULL, -3, CT_ERR_INVALID_ARGUMENT, "groups must be positive, but got -3", NULL);
    ct_scope_pop();
}

static void kernels_larger_than_the_padded_input_are_named(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *x = f32((int64_t[]){1, 1, 2, 5}, 4), *w = f32((int64_t[]){1, 1, 3, 3}, 4);
    expect(x, w, NULL, NULL, NULL, NULL, 1, CT_ERR_SHAPE,
           "the kernel 3 x 3 (dilation [1, 1]: 3 x 3 effective) is larger than the padded input 2 x 5",
           "(input [1, 1, 2, 5], padding [0, 0])");
    ct_tensor *x5 = f32((int64_t[]){1, 1, 5, 5}, 4);
    expect(x5, w, NULL, NULL, NULL, (int64_t[]){1, 3}, 1, CT_ERR_SHAPE,
           "the kernel 3 x 3 (dilation [1, 3]: 3 x 7 effective) is larger than the padded input 5 x 5", NULL);
    /* padding makes room */
    ct_tensor *ok = ct_conv2d(x, w, NULL, NULL, (int64_t[]){1, 0}, NULL, 1);
    assert_non_null(ok);
    int64_t want[4] = {1, 1, 2, 3};
    assert_memory_equal(ct_tensor_shape(ok), want, sizeof want);
    ct_scope_pop();
}

static void window_arguments_must_be_positive(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *x = f32((int64_t[]){1, 2, 6, 6}, 4), *w = f32((int64_t[]){2, 2, 3, 3}, 4);
    expect(x, w, NULL, (int64_t[]){1, 0}, NULL, NULL, 1, CT_ERR_INVALID_ARGUMENT,
           "ct_conv2d: stride must be positive", "got stride [1, 0]");
    expect(x, w, NULL, (int64_t[]){-2, 1}, NULL, NULL, 1, CT_ERR_INVALID_ARGUMENT, "stride [-2, 1]", NULL);
    expect(x, w, NULL, NULL, NULL, (int64_t[]){0, 1}, 1, CT_ERR_INVALID_ARGUMENT,
           "dilation must be positive", "got dilation [0, 1]");
    expect(x, w, NULL, NULL, (int64_t[]){0, -1}, NULL, 1, CT_ERR_INVALID_ARGUMENT,
           "padding must be non-negative", "got padding [0, -1]");
    ct_tensor *empty_kernel = f32((int64_t[]){2, 2, 0, 3}, 4);
    expect(x, empty_kernel, NULL, NULL, NULL, NULL, 1, CT_ERR_SHAPE, "weight [2, 2, 0, 3] has an empty kernel", NULL);
    ct_scope_pop();
}

static void bias_shape_and_dtypes_are_checked(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *x = f32((int64_t[]){1, 2, 6, 6}, 4), *w = f32((int64_t[]){4, 2, 3, 3}, 4);
    expect(x, w, f32((int64_t[]){3}, 1), NULL, NULL, NULL, 1, CT_ERR_SHAPE,
           "expected bias of shape [4] (one per output channel of weight [4, 2, 3, 3]), but got bias "
           "of shape [3]", NULL);
    expect(x, w, f32((int64_t[]){1, 4}, 2), NULL, NULL, NULL, 1, CT_ERR_SHAPE, "but got bias of shape [1, 4]", NULL);
    ct_tensor *xi = ct_zeros((int64_t[]){1, 2, 6, 6}, 4, CT_I64, CT_DEVICE_CPU);
    expect(xi, w, NULL, NULL, NULL, NULL, 1, CT_ERR_DTYPE,
           "input has dtype int64; convolution needs a floating dtype (float32, float64, float16 or "
           "bfloat16)", NULL);
    ct_tensor *w64 = ct_zeros((int64_t[]){4, 2, 3, 3}, 4, CT_F64, CT_DEVICE_CPU);
    expect(x, w64, NULL, NULL, NULL, NULL, 1, CT_ERR_DTYPE, "input is float32 but weight is float64", NULL);
    ct_tensor *b64 = ct_zeros((int64_t[]){4}, 1, CT_F64, CT_DEVICE_CPU);
    expect(x, w, b64, NULL, NULL, NULL, 1, CT_ERR_DTYPE, "input is float32 but bias is float64", NULL);
    ct_scope_pop();
}

static void null_arguments_and_two_devices(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *x = f32((int64_t[]){1, 2, 6, 6}, 4), *w = f32((int64_t[]){4, 2, 3, 3}, 4);
    expect(NULL, w, NULL, NULL, NULL, NULL, 1, CT_ERR_NULL_ARGUMENT, "ct_conv2d", "input");
    expect(x, NULL, NULL, NULL, NULL, NULL, 1, CT_ERR_NULL_ARGUMENT, "ct_conv2d", "weight");
    /* a chain keeps its first error */
    ct_clear_error();
    assert_null(ct_conv2d(ct_matmul(x, w), w, NULL, NULL, NULL, NULL, 1));
    assert_true(strstr(ct_last_error_message(), "ct_matmul") != NULL);
    ct_clear_error();
    ct_device fake0 = {CT_OPENCL, 0}, fake1 = {CT_OPENCL, 1};
    ct_tensor *w0 = ct_zeros((int64_t[]){4, 2, 3, 3}, 4, CT_F32, fake0);
    ct_tensor *b1 = ct_zeros((int64_t[]){4}, 1, CT_F32, fake1);
    expect(x, w0, NULL, NULL, NULL, NULL, 1, CT_ERR_DEVICE, "cpu", "opencl:0");
    expect(ct_zeros((int64_t[]){1, 2, 6, 6}, 4, CT_F32, fake0), w0, b1, NULL, NULL, NULL, 1, CT_ERR_DEVICE,
           "opencl:0", "opencl:1");
    ct_scope_pop();
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(wrong_ranks_are_named),
        cmocka_unit_test(channels_and_groups_must_fit),
        cmocka_unit_test(kernels_larger_than_the_padded_input_are_named),
        cmocka_unit_test(window_arguments_must_be_positive),
        cmocka_unit_test(bias_shape_and_dtypes_are_checked),
        cmocka_unit_test(null_arguments_and_two_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
