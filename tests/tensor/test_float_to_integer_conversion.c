/* Numbers that an integer dtype cannot hold. Where PyTorch refuses them, ctorch does, with a
 * message naming the value and the dtype's range: a fill value (ct_full(300, uint8)), sequences
 * whose values overflow the dtype, item of NaN into an int64, one_hot's max(index) + 1 past int64.
 * Where PyTorch converts (tensor.to(int)), the conversion is defined and the same on every device:
 * truncation toward zero, saturated at the dtype's limits, NaN gives 0, uint8 the saturated int64
 * modulo 256. Each of these was undefined behaviour in C before (the sanitizer build stops on it). */
#include <math.h>

#include "test_common.h"

static void fill_values_must_fit_the_dtype(void **state)
{
    (void)state;
    const int64_t shape[1] = {3};
    ct_clear_error();
    assert_null(ct_full(shape, 1, 300, CT_U8, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_full: value 300 cannot be converted to uint8 without "
                 "overflow; uint8 holds integers from 0 to 255");
    assert_null(ct_full(shape, 1, -256, CT_U8, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "value -256 cannot be converted to uint8");
    assert_null(ct_full(shape, 1, -1.5, CT_U8, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "value -1.5 cannot be converted to uint8");
    assert_null(ct_full(shape, 1, NAN, CT_I32, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "value nan cannot be converted to int32");
    assert_null(ct_full(shape, 1, 1e30, CT_I32, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "value 1e+30 cannot be converted to int32");
    assert_null(ct_full(shape, 1, 9223372036854775808.0, CT_I64, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "cannot be converted to int64");
    assert_null(ct_full(shape, 1, INFINITY, CT_I64, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "value inf cannot be converted to int64");
    assert_null(ct_full(shape, 1, 1e300, CT_F32, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "cannot be converted to float32");

    /* what fits: the ends of each range (truncated toward zero), infinities and NaN in floats */
    struct { double value; ct_dtype dtype; double expected; } fits[] = {
        {255.5, CT_U8, 255}, {-0.5, CT_U8, 0}, {-1, CT_U8, 255}, {-255, CT_U8, 1}, {2147483647.9, CT_I32, 2147483647},
        {-2147483648.9, CT_I32, -2147483648.0}, {-9223372036854775808.0, CT_I64, -9223372036854775808.0},
        {INFINITY, CT_F32, INFINITY}, {1e300, CT_F64, 1e300}, {12345, CT_BOOL, 1},
    };
    for (size_t k = 0; k < sizeof fits / sizeof fits[0]; k++) {
        ct_tensor *t = ct_full(shape, 1, fits[k].value, fits[k].dtype, CT_DEVICE_CPU);
        assert_non_null(t);
        double value = 0;
        ct_tensor *first = ct_select(t, 0, 0);
        assert_int_equal(ct_item(first, &value), CT_OK);
        assert_true(value == fits[k].expected);
        ct_release(first);
        ct_release(t);
    }
    ct_tensor *nan_floats = ct_full(shape, 1, NAN, CT_F32, CT_DEVICE_CPU);
    assert_non_null(nan_floats);
    ct_release(nan_floats);
}

static void sequences_whose_values_overflow_the_dtype_are_refused(void **state)
{
    (void)state;
    ct_clear_error();
    assert_null(ct_arange(0, 5e9, 1e9, CT_I32, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_arange: the last value 4000000000 cannot be converted "
                 "to int32 without overflow");
    assert_null(ct_arange(-300, 0, 100, CT_U8, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_arange: start -300 cannot be converted to uint8");
    ct_tensor *wide = ct_arange(0, 5e9, 1e9, CT_I64, CT_DEVICE_CPU);
    assert_non_null(wide);
    int64_t values[5];
    assert_int_equal(ct_tensor_to_array(wide, values, sizeof values), CT_OK);
    assert_true(values[4] == 4000000000LL);
    ct_release(wide);
    assert_null(ct_linspace(0, 1e30, 5, CT_I32, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_linspace: end 1e+30 cannot be "
                 "converted to int32");
    assert_null(ct_linspace(NAN, 1, 5, CT_I64, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_linspace: start nan cannot be converted to int64");
    assert_null(ct_linspace(0, 256, 3, CT_U8, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "end 256");
    /* floating sequences keep their infinities and NaNs, as PyTorch's */
    ct_tensor *floats = ct_linspace(0, 1e30, 5, CT_F32, CT_DEVICE_CPU);
    assert_non_null(floats);
    ct_release(floats);
}

static void item_int64_refuses_what_an_int64_cannot_hold(void **state)
{
    (void)state;
    const double cases[] = {NAN, INFINITY, -INFINITY, 1e20, -1e20, 9223372036854775808.0};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ct_tensor *t = ct_full(NULL, 0, cases[k], CT_F64, CT_DEVICE_CPU);
        int64_t value = 7;
        assert_int_equal(ct_item_int64(t, &value), CT_ERR_INVALID_ARGUMENT);
        assert_error(CT_ERR_INVALID_ARGUMENT, "cannot be converted to an int64");
        assert_int_equal(value, 7);
        ct_release(t);
    }
    ct_tensor *t = ct_full(NULL, 0, -3.9, CT_F32, CT_DEVICE_CPU);
    int64_t value = 0;
    assert_int_equal(ct_item_int64(t, &value), CT_OK);
    assert_int_equal(value, -3);
    ct_release(t);
}

/* Converts values (float64, and float32 where they are finite in it) to dtype on device, also
 * through a strided view, and compares with expected (as doubles). */
static void check_conversion(ct_device device, const double *values, int n, ct_dtype dtype,
                             const double *expected)
{
    char name[CT_DEVICE_STRING_MAX];
    ct_device_format(device, name, sizeof name);
    for (int source = 0; source < 2; source++) {
        ct_dtype from = source == 0 ? CT_F64 : CT_F32;
        ct_tensor *host = ct_tensor_from_data(values, CT_F64, (const int64_t[]){n}, 1, CT_DEVICE_CPU);
        ct_tensor *typed = ct_to_dtype(host, from);
        ct_tensor *there = ct_to(typed, device);
        /* [n] as a [2, n/2] read column-major, so that the strided kernel runs too */
        ct_tensor *columns = ct_transpose(ct_view(there, (const int64_t[]){n / 2, 2}, 2), 0, 1);
        ct_tensor *flat_converted = ct_to_dtype(there, dtype);
        ct_tensor *strided_converted = ct_to_dtype(columns, dtype);
        assert_non_null(flat_converted);
        assert_non_null(strided_converted);
        ct_tensor *flat_back = ct_to_dtype(ct_to(flat_converted, CT_DEVICE_CPU), CT_F64);
        ct_tensor *strided_back = ct_to_dtype(ct_to(strided_converted, CT_DEVICE_CPU), CT_F64);
        double flat[16], strided[16];
        assert_int_equal(ct_tensor_to_array(flat_back, flat, sizeof flat), CT_OK);
        assert_int_equal(ct_tensor_to_array(ct_contiguous(strided_back), strided, sizeof strided), CT_OK);
        for (int i = 0; i < n; i++) {
            if (flat[i] != expected[i])
                fail_msg("%s: %s %.17g to %s gave %.17g, expected %.17g", name, ct_dtype_name(from),
                         values[i], ct_dtype_name(dtype), flat[i], expected[i]);
            int row = i % 2, col = i / 2; /* strided element [row][col] is values[col * 2 + row] */
            int at = row * (n / 2) + col;
            if (strided[at] != expected[i])
                fail_msg("%s (strided): %s %.17g to %s gave %.17g, expected %.17g", name,
                         ct_dtype_name(from), values[i], ct_dtype_name(dtype), strided[at], expected[i]);
        }
        ct_release(host);
        ct_release(typed);
        ct_release(there);
        ct_release(columns);
        ct_release(flat_converted);
        ct_release(strided_converted);
        ct_release(flat_back);
        ct_release(strided_back);
    }
}

static void float_to_integer_conversion_saturates_the_same_on_every_device(void **state)
{
    (void)state;
    ct_scope_push();
    /* each the same integer part in float32 and float64 */
    const double values[12] = {1e20, -1e20, NAN, INFINITY, -INFINITY, 3.9, -3.9, 2147483904.0,
                               -2147483904.0, 300.7, -0.9, 1e30};
    const double max64 = 9223372036854775807.0, min64 = -9223372036854775808.0;
    const double to_i64[12] = {max64, min64, 0, max64, min64, 3, -3, 2147483904.0, -2147483904.0, 300, 0, max64};
    const double to_i32[12] = {2147483647, -2147483648.0, 0, 2147483647, -2147483648.0, 3, -3,
                               2147483647, -2147483648.0, 300, 0, 2147483647};
    /* uint8: the saturated int64 modulo 256 (-3 is 253, as x86 C and PyTorch on a CPU give) */
    const double to_u8[12] = {255, 0, 0, 255, 0, 3, 253, 0, 0, 44, 0, 255};
    int count = 1 + ct_device_count(CT_OPENCL) + ct_device_count(CT_CUDA);
    for (int d = 0; d < count; d++) {
        ct_device device = CT_DEVICE_CPU;
        if (d > 0 && d <= ct_device_count(CT_OPENCL)) device = (ct_device){CT_OPENCL, d - 1};
        if (d > ct_device_count(CT_OPENCL)) device = (ct_device){CT_CUDA, d - 1 - ct_device_count(CT_OPENCL)};
        check_conversion(device, values, 12, CT_I64, to_i64);
        check_conversion(device, values, 12, CT_I32, to_i32);
        check_conversion(device, values, 12, CT_U8, to_u8);
    }
    assert_int_equal(ct_scope_pop(), CT_OK);
}

static void one_hot_of_the_largest_int64_is_refused(void **state)
{
    (void)state;
    const int64_t largest = INT64_MAX;
    ct_tensor *index = ct_tensor_from_data(&largest, CT_I64, (const int64_t[]){1}, 1, CT_DEVICE_CPU);
    ct_clear_error();
    assert_null(ct_one_hot(index, -1));
    assert_error(CT_ERR_INDEX, "class value 9223372036854775807 would need");
    assert_null(ct_one_hot(index, 5));
    assert_error(CT_ERR_INDEX, "out of range for num_classes 5");
    ct_release(index);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fill_values_must_fit_the_dtype),
        cmocka_unit_test(sequences_whose_values_overflow_the_dtype_are_refused),
        cmocka_unit_test(item_int64_refuses_what_an_int64_cannot_hold),
        cmocka_unit_test(float_to_integer_conversion_saturates_the_same_on_every_device),
        cmocka_unit_test(one_hot_of_the_largest_int64_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
