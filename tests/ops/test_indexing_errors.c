/* ct_index_select, ct_gather and ct_one_hot reject bad input with a status and a message:
 * indices out of range or negative (found before any read through them, wherever they are in
 * the index), index dtypes and shapes, dims out of range, NULL, tensors on two devices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctorch.h"
#include "support/fake_device.h"

static void expect_message(ct_tensor *result, ct_status status, const char *fragment1,
                           const char *fragment2)
{
    assert_null(result);
    assert_int_equal(ct_last_error(), status);
    const char *message = ct_last_error_message();
    if (!strstr(message, fragment1)) fail_msg("'%s' not in '%s'", fragment1, message);
    if (fragment2 && !strstr(message, fragment2)) fail_msg("'%s' not in '%s'", fragment2, message);
    ct_clear_error();
}

static ct_tensor *index_of(ct_dtype dtype, const int64_t *values, const int64_t *shape, int ndim)
{
    ct_tensor *l = ct_tensor_from_data(values, CT_I64, shape, ndim, CT_DEVICE_CPU);
    ct_tensor *t = ct_to_dtype(l, dtype);
    ct_release(l);
    assert_non_null(t);
    return t;
}

static ct_tensor *zeros(ct_dtype dtype, const int64_t *shape, int ndim)
{
    ct_tensor *t = ct_zeros(shape, ndim, dtype, CT_DEVICE_CPU);
    assert_non_null(t);
    return t;
}

static void index_out_of_range_names_the_index_and_the_valid_range(void **state)
{
    (void)state;
    int64_t shape[2] = {3, 5}, values[3] = {1, 7, 2}, ishape[1] = {3};
    ct_tensor *a = zeros(CT_F32, shape, 2);
    for (int it = 0; it < 2; it++) {
        ct_tensor *index = index_of(it ? CT_I32 : CT_I64, values, ishape, 1);
        ct_clear_error();
        expect_message(ct_index_select(a, 1, index), CT_ERR_INDEX,
                       "ct_index_select: index 7 is out of bounds for dim 1 with size 5", "[0, 5)");
        expect_message(ct_index_select(a, 0, index), CT_ERR_INDEX, "index 7", "dim 0 with size 3");
        ct_release(index);
    }
    int64_t gvalues[6] = {0, 1, 2, 3, 4, 5}, gshape[2] = {2, 3};
    ct_tensor *gindex = index_of(CT_I64, gvalues, gshape, 2);
    expect_message(ct_gather(a, 0, gindex), CT_ERR_INDEX,
                   "ct_gather: index 5 is out of bounds for dim 0 with size 3", "[0, 3)");
    ct_release(gindex);
    ct_release(a);
}

static void a_bad_index_far_into_a_large_index_is_found(void **state)
{
    (void)state;
    int64_t count = 50000, *values = calloc((size_t)count, sizeof *values), ishape[1] = {count};
    values[count - 3] = 10;
    int64_t shape[1] = {10};
    ct_tensor *a = zeros(CT_F64, shape, 1), *index = index_of(CT_I32, values, ishape, 1);
    ct_clear_error();
    expect_message(ct_gather(a, 0, index), CT_ERR_INDEX, "index 10 is out of bounds", "size 10");
    expect_message(ct_index_select(a, 0, index), CT_ERR_INDEX, "index 10 is out of bounds", NULL);
    ct_release(index);
    values[count - 3] = 0;
    values[40000] = -4;
    index = index_of(CT_I64, values, ishape, 1);
    expect_message(ct_gather(a, 0, index), CT_ERR_INDEX, "index -4 is negative", "[0, 10)");
    ct_release(index);
    ct_release(a);
    free(values);
}

static void negative_indices_are_rejected_as_pytorch_does(void **state)
{
    (void)state;
    int64_t shape[2] = {3, 4}, values[2] = {0, -1}, ishape[1] = {2}, gshape[2] = {1, 2};
    ct_tensor *a = zeros(CT_I64, shape, 2), *index = index_of(CT_I64, values, ishape, 1);
    ct_tensor *gindex = index_of(CT_I32, values, gshape, 2);
    ct_clear_error();
    expect_message(ct_index_select(a, 1, index), CT_ERR_INDEX,
                   "ct_index_select: index -1 is negative", "negative indices are not accepted");
    expect_message(ct_gather(a, 1, gindex), CT_ERR_INDEX, "ct_gather: index -1 is negative", "[0, 4)");
    ct_release(gindex);
    ct_release(index);
    ct_release(a);
}

static void an_index_into_an_empty_dim_is_out_of_range(void **state)
{
    (void)state;
    int64_t shape[2] = {0, 3}, values[1] = {0}, ishape[1] = {1};
    ct_tensor *a = zeros(CT_F32, shape, 2), *index = index_of(CT_I64, values, ishape, 1);
    ct_clear_error();
    expect_message(ct_index_select(a, 0, index), CT_ERR_INDEX, "index 0 is out of bounds", "size 0");
    ct_release(index);
    ct_release(a);
}

static void index_dtype_must_be_int32_or_int64(void **state)
{
    (void)state;
    int64_t shape[1] = {4}, values[2] = {0, 1}, ishape[1] = {2};
    ct_tensor *a = zeros(CT_F32, shape, 1);
    ct_dtype bad[3] = {CT_F32, CT_U8, CT_BOOL};
    for (int i = 0; i < 3; i++) {
        ct_tensor *index = index_of(bad[i], values, ishape, 1);
        ct_clear_error();
        expect_message(ct_index_select(a, 0, index), CT_ERR_DTYPE, "ct_index_select: index must be int64 or int32",
                       ct_dtype_name(bad[i]));
        expect_message(ct_gather(a, 0, index), CT_ERR_DTYPE, "ct_gather", ct_dtype_name(bad[i]));
        expect_message(ct_one_hot(index, 3), CT_ERR_DTYPE, "ct_one_hot", ct_dtype_name(bad[i]));
        ct_release(index);
    }
    ct_release(a);
}

static void index_shapes_that_do_not_fit_are_named(void **state)
{
    (void)state;
    int64_t shape[2] = {3, 4}, values[12] = {0}, i2[2] = {2, 2}, i1[1] = {2}, big[2] = {4, 2};
    ct_tensor *a = zeros(CT_F32, shape, 2);
    ct_tensor *two_d = index_of(CT_I64, values, i2, 2), *one_d = index_of(CT_I64, values, i1, 1);
    ct_tensor *too_big = index_of(CT_I64, values, big, 2);
    ct_clear_error();
    expect_message(ct_index_select(a, 0, two_d), CT_ERR_SHAPE, "index must be 1-D", "[2, 2]");
    expect_message(ct_gather(a, 1, one_d), CT_ERR_SHAPE, "index has shape [2] and a has shape [3, 4]",
                   "same number of dims");
    expect_message(ct_gather(a, 1, too_big), CT_ERR_SHAPE, "index has shape [4, 2] and a has shape [3, 4]",
                   "dim 0 (4 > 3)");
    ct_release(two_d);
    ct_release(one_d);
    ct_release(too_big);
    ct_release(a);
}

static void dim_out_of_range_is_an_index_error(void **state)
{
    (void)state;
    int64_t shape[2] = {3, 4}, values[2] = {0, 1}, ishape[1] = {2}, gshape[2] = {1, 2};
    ct_tensor *a = zeros(CT_F32, shape, 2), *index = index_of(CT_I64, values, ishape, 1);
    ct_tensor *gindex = index_of(CT_I64, values, gshape, 2);
    ct_clear_error();
    expect_message(ct_index_select(a, 2, index), CT_ERR_INDEX, "ct_index_select: dim 2 is out of range", "-2 to 1");
    expect_message(ct_gather(a, -3, gindex), CT_ERR_INDEX, "ct_gather: dim -3 is out of range", NULL);
    ct_release(gindex);
    ct_release(index);
    ct_release(a);
}

static void one_hot_rejects_negative_and_too_large_class_values(void **state)
{
    (void)state;
    int64_t values[3] = {0, 4, 2}, negative[3] = {0, -2, 1}, ishape[1] = {3}, none[1] = {0};
    ct_tensor *index = index_of(CT_I64, values, ishape, 1), *neg = index_of(CT_I32, negative, ishape, 1);
    ct_tensor *empty = ct_empty(none, 1, CT_I64, CT_DEVICE_CPU);
    ct_clear_error();
    expect_message(ct_one_hot(index, 3), CT_ERR_INDEX, "ct_one_hot: class value 4 is out of range for num_classes 3",
                   "[0, 3)");
    expect_message(ct_one_hot(index, 0), CT_ERR_INDEX, "class value 4", "num_classes 0");
    expect_message(ct_one_hot(neg, -1), CT_ERR_INDEX, "class value -2 is negative", NULL);
    expect_message(ct_one_hot(index, -2), CT_ERR_INVALID_ARGUMENT, "num_classes is -2", NULL);
    expect_message(ct_one_hot(empty, -1), CT_ERR_INVALID_ARGUMENT, "empty index", "num_classes");
    ct_release(index);
    ct_release(neg);
    ct_release(empty);
}

static void null_inputs_are_named(void **state)
{
    (void)state;
    int64_t shape[1] = {3}, values[1] = {0}, ishape[1] = {1};
    ct_tensor *a = zeros(CT_F32, shape, 1), *index = index_of(CT_I64, values, ishape, 1);
    ct_clear_error();
    expect_message(ct_index_select(NULL, 0, index), CT_ERR_NULL_ARGUMENT, "ct_index_select", "'a'");
    expect_message(ct_index_select(a, 0, NULL), CT_ERR_NULL_ARGUMENT, "ct_index_select", "'index'");
    expect_message(ct_gather(NULL, 0, index), CT_ERR_NULL_ARGUMENT, "ct_gather", "'a'");
    expect_message(ct_gather(a, 0, NULL), CT_ERR_NULL_ARGUMENT, "ct_gather", "'index'");
    expect_message(ct_one_hot(NULL, 3), CT_ERR_NULL_ARGUMENT, "ct_one_hot", "'index'");
    ct_release(index);
    ct_release(a);
}

static void tensors_on_two_devices_are_an_error_naming_both(void **state)
{
    (void)state;
    int64_t shape[1] = {3}, values[2] = {2, 0}, ishape[1] = {2};
    ct_device fake0 = {CT_OPENCL, 0}, fake1 = {CT_OPENCL, 1};
    ct_tensor *cpu_index = index_of(CT_I64, values, ishape, 1);
    ct_tensor *a0 = ct_ones(shape, 1, CT_F32, fake0), *index1 = ct_to(cpu_index, fake1);
    assert_non_null(a0);
    assert_non_null(index1);
    ct_clear_error();
    expect_message(ct_index_select(a0, 0, cpu_index), CT_ERR_DEVICE, "opencl:0", "cpu");
    expect_message(ct_gather(a0, 0, index1), CT_ERR_DEVICE, "opencl:0", "opencl:1");
    /* On one device: the checks and kernels run there, and the result stays there. */
    ct_tensor *index0 = ct_to(cpu_index, fake0);
    ct_tensor *out = ct_index_select(a0, 0, index0), *hot = ct_one_hot(index1, -1);
    assert_non_null(out);
    assert_non_null(hot);
    assert_true(ct_device_equal(ct_tensor_device(out), fake0));
    assert_true(ct_device_equal(ct_tensor_device(hot), fake1));
    int64_t h[6];
    assert_int_equal(ct_tensor_to_array(hot, h, sizeof h), CT_OK);
    int64_t expected[6] = {0, 0, 1, 1, 0, 0};
    assert_memory_equal(h, expected, sizeof h);
    int64_t too_far[2] = {0, 3};
    ct_tensor *bad_cpu = index_of(CT_I64, too_far, ishape, 1), *bad0 = ct_to(bad_cpu, fake0);
    expect_message(ct_index_select(a0, 0, bad0), CT_ERR_INDEX, "index 3 is out of bounds", "size 3");
    ct_release(bad_cpu);
    ct_release(bad0);
    ct_release(out);
    ct_release(hot);
    ct_release(index0);
    ct_release(index1);
    ct_release(a0);
    ct_release(cpu_index);
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(index_out_of_range_names_the_index_and_the_valid_range),
        cmocka_unit_test(a_bad_index_far_into_a_large_index_is_found),
        cmocka_unit_test(negative_indices_are_rejected_as_pytorch_does),
        cmocka_unit_test(an_index_into_an_empty_dim_is_out_of_range),
        cmocka_unit_test(index_dtype_must_be_int32_or_int64),
        cmocka_unit_test(index_shapes_that_do_not_fit_are_named),
        cmocka_unit_test(dim_out_of_range_is_an_index_error),
        cmocka_unit_test(one_hot_rejects_negative_and_too_large_class_values),
        cmocka_unit_test(null_inputs_are_named),
        cmocka_unit_test(tensors_on_two_devices_are_an_error_naming_both),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
