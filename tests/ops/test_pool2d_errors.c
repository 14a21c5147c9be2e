/* The pools reject bad input with a status and a message naming the shapes and arguments:
 * wrong ranks, empty planes, integer dtypes, non-positive kernel or stride, padding beyond
 * half the kernel, inputs too small for the kernel, NULL arguments. */
#include "test_common.h"

static ct_tensor *f32(const int64_t *shape, int ndim)
{
    return ct_zeros(shape, ndim, CT_F32, CT_DEVICE_CPU);
}

/* Both pools fail with status and a message holding `fragment` (after the op's name). */
static void expect(const ct_tensor *x, const int64_t *kernel, const int64_t *stride, const int64_t *padding,
                   ct_status status, const char *fragment)
{
    const char *names[2] = {"ct_max_pool2d: ", "ct_avg_pool2d: "};
    for (int op = 0; op < 2; op++) {
        ct_clear_error();
        ct_tensor *out = op == 0 ? ct_max_pool2d(x, kernel, stride, padding)
                                 : ct_avg_pool2d(x, kernel, stride, padding, true);
        assert_null(out);
        assert_int_equal(ct_last_error(), status);
        const char *message = ct_last_error_message();
        if (!strstr(message, names[op]) && status != CT_ERR_NULL_ARGUMENT)
            fail_msg("'%s' not in '%s'", names[op], message);
        if (!strstr(message, fragment)) fail_msg("'%s' not in '%s'", fragment, message);
        ct_clear_error();
    }
}

static void ranks_planes_and_dtypes(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t k2[2] = {2, 2};
    expect(f32((int64_t[]){3, 8, 8}, 3), k2, NULL, NULL, CT_ERR_SHAPE,
           "expected a 4-D input [N, C, H, W], but got input of shape [3, 8, 8]");
    expect(f32((int64_t[]){1, 2, 0, 4}, 4), k2, NULL, NULL, CT_ERR_SHAPE,
           "with C, H and W non-zero (N may be 0), but got input of shape [1, 2, 0, 4]");
    expect(ct_zeros((int64_t[]){1, 1, 4, 4}, 4, CT_I32, CT_DEVICE_CPU), k2, NULL, NULL, CT_ERR_DTYPE,
           "input has dtype int32; pooling needs a floating dtype (float32, float64, float16 or "
           "bfloat16)");
    ct_scope_pop();
}

static void window_arguments(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *x = f32((int64_t[]){1, 1, 6, 6}, 4);
    expect(x, (int64_t[]){0, 2}, NULL, NULL, CT_ERR_INVALID_ARGUMENT,
           "kernel_size must be positive (and below 2^31), but got kernel_size [0, 2]");
    expect(x, (int64_t[]){2, 2}, (int64_t[]){2, 0}, NULL, CT_ERR_INVALID_ARGUMENT,
           "stride must be positive (and below 2^31), but got stride [2, 0]");
    expect(x, (int64_t[]){3, 3}, NULL, (int64_t[]){2, 0}, CT_ERR_INVALID_ARGUMENT,
           "padding must be between 0 and half the kernel size, but got padding [2, 0] for kernel_size [3, 3]");
    expect(x, (int64_t[]){3, 3}, NULL, (int64_t[]){0, -1}, CT_ERR_INVALID_ARGUMENT, "padding [0, -1]");
    expect(f32((int64_t[]){1, 1, 2, 9}, 4), (int64_t[]){3, 3}, NULL, (int64_t[]){0, 1}, CT_ERR_SHAPE,
           "input [1, 1, 2, 9] is smaller than the kernel: kernel_size [3, 3] over the padded input 2 x 11 "
           "(padding [0, 1]) leaves no output");
    ct_scope_pop();
}

static void null_arguments(void **state)
{
    (void)state;
    ct_scope_push();
    expect(NULL, (int64_t[]){2, 2}, NULL, NULL, CT_ERR_NULL_ARGUMENT, "input");
    expect(f32((int64_t[]){1, 1, 4, 4}, 4), NULL, NULL, NULL, CT_ERR_NULL_ARGUMENT, "kernel_size");
    ct_tensor *indices = (ct_tensor *)&indices; /* set to NULL on failure */
    assert_null(ct_max_pool2d_with_indices(NULL, (int64_t[]){2, 2}, NULL, NULL, &indices));
    assert_null(indices);
    ct_clear_error();
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ranks_planes_and_dtypes),
        cmocka_unit_test(window_arguments),
        cmocka_unit_test(null_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
