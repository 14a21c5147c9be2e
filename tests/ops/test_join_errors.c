/* ct_cat and ct_stack reject bad input with a status and a message naming what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ctorch.h"
#include "support/fake_device.h"

typedef ct_tensor *(*join_fn)(const ct_tensor *const *, int, int);

static void expect_error(join_fn join, const ct_tensor *const *list, int count, int dim,
                         ct_status status, const char *fragment1, const char *fragment2)
{
    ct_clear_error();
    assert_null(join(list, count, dim));
    assert_int_equal(ct_last_error(), status);
    const char *message = ct_last_error_message();
    if (!strstr(message, fragment1)) fail_msg("'%s' not in '%s'", fragment1, message);
    if (fragment2 && !strstr(message, fragment2)) fail_msg("'%s' not in '%s'", fragment2, message);
    ct_clear_error();
}

static ct_tensor *zeros(const int64_t *shape, int ndim)
{
    ct_tensor *t = ct_zeros(shape, ndim, CT_F32, CT_DEVICE_CPU);
    assert_non_null(t);
    return t;
}

static void an_empty_list_is_an_error(void **state)
{
    (void)state;
    int64_t s[1] = {2};
    ct_tensor *a = zeros(s, 1);
    const ct_tensor *list[1] = {a};
    expect_error(ct_cat, list, 0, 0, CT_ERR_INVALID_ARGUMENT, "ct_cat", "non-empty list");
    expect_error(ct_stack, list, 0, 0, CT_ERR_INVALID_ARGUMENT, "ct_stack", "non-empty list");
    expect_error(ct_cat, list, -1, 0, CT_ERR_INVALID_ARGUMENT, "count is -1", NULL);
    ct_release(a);
}

static void cat_shape_mismatch_names_both_shapes_and_the_dim(void **state)
{
    (void)state;
    int64_t s23[2] = {2, 3}, s24[2] = {2, 4}, s33[2] = {3, 3}, s234[3] = {2, 3, 4};
    ct_tensor *a = zeros(s23, 2), *b = zeros(s24, 2), *c = zeros(s33, 2), *d = zeros(s234, 3);
    const ct_tensor *ab[2] = {a, b}, *ac[2] = {a, c}, *ad[2] = {a, d};
    expect_error(ct_cat, ab, 2, 0, CT_ERR_SHAPE, "tensors[0] has shape [2, 3] and tensors[1] has shape [2, 4]",
                 "except in dim 0 (dim 1 has 3 and 4)");
    expect_error(ct_cat, ac, 2, 1, CT_ERR_SHAPE, "[2, 3] and tensors[1] has shape [3, 3]",
                 "except in dim 1 (dim 0 has 2 and 3)");
    expect_error(ct_cat, ad, 2, 0, CT_ERR_SHAPE, "[2, 3] and tensors[1] has shape [2, 3, 4]",
                 "same number of dims");
    ct_release(a);
    ct_release(b);
    ct_release(c);
    ct_release(d);
}

static void zero_dim_tensors_cannot_be_concatenated(void **state)
{
    (void)state;
    ct_tensor *s = zeros(NULL, 0);
    const ct_tensor *list[2] = {s, s};
    expect_error(ct_cat, list, 2, 0, CT_ERR_SHAPE, "tensors[0] is 0-d", NULL);
    ct_release(s);
}

static void stack_shape_mismatch_names_both_shapes(void **state)
{
    (void)state;
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s6[1] = {6};
    ct_tensor *a = zeros(s23, 2), *b = zeros(s32, 2), *c = zeros(s6, 1);
    const ct_tensor *aab[3] = {a, a, b}, *ac[2] = {a, c};
    expect_error(ct_stack, aab, 3, 0, CT_ERR_SHAPE, "tensors[0] has shape [2, 3] and tensors[2] has shape [3, 2]",
                 "equal shape");
    expect_error(ct_stack, ac, 2, 1, CT_ERR_SHAPE, "[2, 3] and tensors[1] has shape [6]", NULL);
    ct_release(a);
    ct_release(b);
    ct_release(c);
}

static void dim_out_of_range_is_an_index_error(void **state)
{
    (void)state;
    int64_t s[2] = {2, 3};
    ct_tensor *a = zeros(s, 2);
    const ct_tensor *list[2] = {a, a};
    expect_error(ct_cat, list, 2, 2, CT_ERR_INDEX, "ct_cat: dim 2 is out of range", "-2 to 1");
    expect_error(ct_cat, list, 2, -3, CT_ERR_INDEX, "dim -3 is out of range", NULL);
    /* stack inserts a dim: -3 to 2 are valid. */
    expect_error(ct_stack, list, 2, 3, CT_ERR_INDEX, "ct_stack: dim 3 is out of range", "-3 to 2");
    expect_error(ct_stack, list, 2, -4, CT_ERR_INDEX, "dim -4 is out of range", NULL);
    ct_release(a);
}

static void null_list_or_tensor_is_named(void **state)
{
    (void)state;
    int64_t s[1] = {2};
    ct_tensor *a = zeros(s, 1);
    const ct_tensor *list[3] = {a, NULL, a};
    expect_error(ct_cat, NULL, 2, 0, CT_ERR_NULL_ARGUMENT, "ct_cat", "'tensors'");
    expect_error(ct_cat, list, 3, 0, CT_ERR_NULL_ARGUMENT, "ct_cat", "'tensors[1]'");
    expect_error(ct_stack, list, 3, 0, CT_ERR_NULL_ARGUMENT, "ct_stack", "'tensors[1]'");
    ct_release(a);
}

static void tensors_on_two_devices_are_an_error_naming_both(void **state)
{
    (void)state;
    int64_t s[1] = {2};
    ct_device fake0 = {CT_OPENCL, 0}, fake1 = {CT_OPENCL, 1};
    ct_tensor *cpu = zeros(s, 1), *d0 = ct_ones(s, 1, CT_F32, fake0), *d1 = ct_ones(s, 1, CT_F32, fake1);
    const ct_tensor *mixed[3] = {d0, d0, cpu}, *fakes[2] = {d0, d1};
    expect_error(ct_cat, mixed, 3, 0, CT_ERR_DEVICE, "opencl:0", "cpu");
    expect_error(ct_stack, fakes, 2, 0, CT_ERR_DEVICE, "opencl:0", "opencl:1");
    /* On one device both work and stay there. */
    const ct_tensor *same[2] = {d1, d1};
    ct_tensor *out = ct_cat(same, 2, 0), *stacked = ct_stack(same, 2, 0);
    assert_non_null(out);
    assert_non_null(stacked);
    assert_true(ct_device_equal(ct_tensor_device(out), fake1));
    assert_true(ct_device_equal(ct_tensor_device(stacked), fake1));
    float v[4];
    assert_int_equal(ct_tensor_to_array(out, v, sizeof v), CT_OK);
    for (int i = 0; i < 4; i++) assert_true(v[i] == 1.0f);
    ct_release(out);
    ct_release(stacked);
    ct_release(cpu);
    ct_release(d0);
    ct_release(d1);
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_empty_list_is_an_error),
        cmocka_unit_test(cat_shape_mismatch_names_both_shapes_and_the_dim),
        cmocka_unit_test(zero_dim_tensors_cannot_be_concatenated),
        cmocka_unit_test(stack_shape_mismatch_names_both_shapes),
        cmocka_unit_test(dim_out_of_range_is_an_index_error),
        cmocka_unit_test(null_list_or_tensor_is_named),
        cmocka_unit_test(tensors_on_two_devices_are_an_error_naming_both),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
