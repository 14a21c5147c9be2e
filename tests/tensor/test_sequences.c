/* arange and linspace: sizes and values as in PyTorch, on any device and dtype, and their errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctorch.h"
#include "support/fake_device.h"

/* The elements of t as doubles (any numeric dtype). */
static double *values_of(const ct_tensor *t)
{
    int64_t n = ct_numel(t);
    ct_tensor *as_double = ct_to_dtype(t, CT_F64);
    assert_non_null(as_double);
    double *values = calloc((size_t)n + 1, sizeof *values);
    assert_int_equal(ct_tensor_to_array(as_double, values, (size_t)(n + 1) * sizeof *values), CT_OK);
    ct_release(as_double);
    return values;
}

static void assert_sequence(ct_tensor *t, const double *expected, int64_t n, double tolerance)
{
    assert_non_null(t);
    assert_int_equal(ct_tensor_ndim(t), 1);
    assert_int_equal(ct_numel(t), n);
    double *values = values_of(t);
    for (int64_t i = 0; i < n; i++)
        if (fabs(values[i] - expected[i]) > tolerance)
            fail_msg("element %lld is %.17g, expected %.17g", (long long)i, values[i], expected[i]);
    free(values);
    ct_release(t);
}

static void arange_counts_ceil_of_the_range_over_the_step(void **state)
{
    (void)state;
    assert_sequence(ct_arange(0, 5, 1, CT_I64, CT_DEVICE_CPU), (const double[]){0, 1, 2, 3, 4}, 5, 0);
    assert_sequence(ct_arange(1, 2.5, 0.5, CT_F32, CT_DEVICE_CPU), (const double[]){1, 1.5, 2}, 3, 0);
    assert_sequence(ct_arange(1, 2.6, 0.5, CT_F32, CT_DEVICE_CPU), (const double[]){1, 1.5, 2, 2.5}, 4, 0);
    assert_sequence(ct_arange(-5, 5, 2.5, CT_F64, CT_DEVICE_CPU), (const double[]){-5, -2.5, 0, 2.5}, 4, 0);
    assert_sequence(ct_arange(3, 3, 1, CT_F32, CT_DEVICE_CPU), NULL, 0, 0);
    double tenths[10];
    for (int i = 0; i < 10; i++) tenths[i] = i * 0.1;
    assert_sequence(ct_arange(0, 1, 0.1, CT_F64, CT_DEVICE_CPU), tenths, 10, 1e-15);
    assert_sequence(ct_arange(0, 10, 3, CT_U8, CT_DEVICE_CPU), (const double[]){0, 3, 6, 9}, 4, 0);
}

static void arange_with_a_negative_step_counts_down(void **state)
{
    (void)state;
    assert_sequence(ct_arange(10, 0, -3, CT_I32, CT_DEVICE_CPU), (const double[]){10, 7, 4, 1}, 4, 0);
    assert_sequence(ct_arange(1, -1, -0.5, CT_F64, CT_DEVICE_CPU), (const double[]){1, 0.5, 0, -0.5}, 4, 0);
    assert_sequence(ct_arange(0, -2.5, -1, CT_F32, CT_DEVICE_CPU), (const double[]){0, -1, -2}, 3, 0);
}

static void linspace_spans_both_ends_exactly(void **state)
{
    (void)state;
    assert_sequence(ct_linspace(0, 1, 5, CT_F32, CT_DEVICE_CPU), (const double[]){0, 0.25, 0.5, 0.75, 1}, 5, 0);
    double thirds[7];
    for (int i = 0; i < 7; i++) thirds[i] = -1 + i / 3.0;
    ct_tensor *t = ct_linspace(-1, 1, 7, CT_F64, CT_DEVICE_CPU);
    double *values = values_of(t);
    assert_true(values[0] == -1.0 && values[6] == 1.0);
    free(values);
    assert_sequence(t, thirds, 7, 1e-15);
    assert_sequence(ct_linspace(10, 0, 3, CT_F64, CT_DEVICE_CPU), (const double[]){10, 5, 0}, 3, 0);
    assert_sequence(ct_linspace(2.5, 9, 1, CT_F32, CT_DEVICE_CPU), (const double[]){2.5}, 1, 0);
    assert_sequence(ct_linspace(2.5, 9, 0, CT_F32, CT_DEVICE_CPU), NULL, 0, 0);
    /* Integer dtypes truncate the float positions, as torch.linspace does. */
    assert_sequence(ct_linspace(0, 10, 4, CT_I64, CT_DEVICE_CPU), (const double[]){0, 3, 6, 10}, 4, 0);
}

static void sequences_are_made_on_the_target_device(void **state)
{
    (void)state;
    ct_device fake = {CT_OPENCL, 1};
    ct_tensor *a = ct_arange(0, 6, 2, CT_F64, fake);
    assert_non_null(a);
    assert_true(ct_device_equal(ct_tensor_device(a), fake));
    ct_tensor *on_cpu = ct_to(a, CT_DEVICE_CPU);
    assert_sequence(on_cpu, (const double[]){0, 2, 4}, 3, 0);
    ct_tensor *l = ct_linspace(0, 1, 3, CT_F32, fake);
    assert_true(ct_device_equal(ct_tensor_device(l), fake));
    on_cpu = ct_to(l, CT_DEVICE_CPU);
    assert_sequence(on_cpu, (const double[]){0, 0.5, 1}, 3, 0);
    ct_release(l);
    ct_release(a);
}

static void expect_error(ct_tensor *t, ct_status status, const char *fragment)
{
    assert_null(t);
    assert_int_equal(ct_last_error(), status);
    if (!strstr(ct_last_error_message(), fragment))
        fail_msg("message \"%s\" lacks \"%s\"", ct_last_error_message(), fragment);
    ct_clear_error();
}

static void bad_ranges_steps_and_dtypes_are_errors(void **state)
{
    (void)state;
    expect_error(ct_arange(0, 5, 0, CT_F32, CT_DEVICE_CPU), CT_ERR_INVALID_ARGUMENT, "step must be finite and nonzero");
    expect_error(ct_arange(0, 5, -1, CT_F32, CT_DEVICE_CPU), CT_ERR_INVALID_ARGUMENT,
                 "upper bound and larger bound inconsistent with step sign");
    expect_error(ct_arange(5, 0, 1, CT_I64, CT_DEVICE_CPU), CT_ERR_INVALID_ARGUMENT, "inconsistent with step sign");
    expect_error(ct_arange(0, INFINITY, 1, CT_F32, CT_DEVICE_CPU), CT_ERR_INVALID_ARGUMENT, "unsupported range");
    expect_error(ct_arange(0, NAN, 1, CT_F32, CT_DEVICE_CPU), CT_ERR_INVALID_ARGUMENT, "unsupported range");
    expect_error(ct_arange(0, 1e300, 1e-300, CT_F32, CT_DEVICE_CPU), CT_ERR_INVALID_ARGUMENT, "more than a tensor can hold");
    expect_error(ct_arange(0, 2, 1, CT_BOOL, CT_DEVICE_CPU), CT_ERR_DTYPE, "not supported for bool");
    expect_error(ct_arange(0, 2, 1, (ct_dtype)42, CT_DEVICE_CPU), CT_ERR_DTYPE, "dtype 42");
    expect_error(ct_linspace(0, 1, -1, CT_F32, CT_DEVICE_CPU), CT_ERR_INVALID_ARGUMENT, "number of steps -1 is negative");
    expect_error(ct_linspace(0, 1, 2, CT_BOOL, CT_DEVICE_CPU), CT_ERR_DTYPE, "ct_linspace: not supported for bool");
    expect_error(ct_arange(0, 2, 1, CT_F32, (ct_device){CT_OPENCL, 5}), CT_ERR_DEVICE, "opencl:5");
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(arange_counts_ceil_of_the_range_over_the_step),
        cmocka_unit_test(arange_with_a_negative_step_counts_down),
        cmocka_unit_test(linspace_spans_both_ends_exactly),
        cmocka_unit_test(sequences_are_made_on_the_target_device),
        cmocka_unit_test(bad_ranges_steps_and_dtypes_are_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
