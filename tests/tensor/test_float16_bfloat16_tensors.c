/* float16 and bfloat16 tensors: created, converted, read back and printed on every device. The
 * kernels convert with the host's arithmetic (every 16-bit pattern to float32 and a sweep of
 * float32 values to 16 bits give the host's bits on the CPU and on each OpenCL device), values a
 * format cannot hold are refused as PyTorch refuses them, and the promotion of mixed dtypes is
 * PyTorch's. */
#include <math.h>

#include "support/devices.h"
#include "test_common.h"

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void every_pattern_widens_as_the_host_does(void **state)
{
    (void)state;
    static uint16_t patterns[65536];
    static float widened[65536];
    for (uint32_t k = 0; k < 65536; k++) patterns[k] = (uint16_t)k;
    const int64_t shape[1] = {65536};
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        for (int format = 0; format < 2; format++) {
            ct_dtype dtype = format ? CT_BF16 : CT_F16;
            ct_tensor *t = ct_tensor_from_data(patterns, dtype, shape, 1, devices[d]);
            ct_tensor *wide = ct_to_dtype(t, CT_F32);
            assert_non_null(wide);
            assert_int_equal(ct_tensor_to_array(wide, widened, sizeof widened), CT_OK);
            for (uint32_t k = 0; k < 65536; k++) {
                float expected = format ? ct_bf16_to_float((uint16_t)k) : ct_f16_to_float((uint16_t)k);
                if (isnan(expected) ? !isnan(widened[k]) : bits_of(expected) != bits_of(widened[k]))
                    fail_msg("%s pattern %04x on device %d: %a, the host gives %a", ct_dtype_name(dtype),
                             k, d, (double)widened[k], (double)expected);
            }
            ct_release(wide);
            ct_release(t);
        }
    }
}

static void floats_narrow_as_the_host_does(void **state)
{
    (void)state;
    enum { N = 1 << 18 };
    float *values = malloc(N * sizeof *values);
    uint16_t *narrowed = malloc(N * sizeof *narrowed);
    /* bit patterns across every exponent, and the ties of float16 near 1 and 65504 */
    for (uint32_t k = 0; k < N; k++) {
        uint32_t bits = k * 16381u;
        memcpy(&values[k], &bits, sizeof bits);
    }
    values[0] = 65520.0f, values[1] = 65519.0f, values[2] = 1.0f + 0x1p-11f, values[3] = 1.0f + 0x3p-11f;
    values[4] = 0x1p-25f, values[5] = 1.0f + 0x1p-8f, values[6] = -0.0f, values[7] = INFINITY;
    const int64_t shape[1] = {N};
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        ct_tensor *t = ct_tensor_from_data(values, CT_F32, shape, 1, devices[d]);
        for (int format = 0; format < 2; format++) {
            ct_dtype dtype = format ? CT_BF16 : CT_F16;
            ct_tensor *narrow = ct_to_dtype(t, dtype);
            assert_non_null(narrow);
            assert_int_equal(ct_tensor_to_array(narrow, narrowed, N * sizeof *narrowed), CT_OK);
            for (uint32_t k = 0; k < N; k++) {
                if (isnan(values[k])) continue; /* the payload is not promised */
                uint16_t expected = format ? ct_float_to_bf16(values[k]) : ct_float_to_f16(values[k]);
                if (narrowed[k] != expected)
                    fail_msg("%s of %a on device %d: %04x, the host gives %04x", ct_dtype_name(dtype),
                             (double)values[k], d, narrowed[k], expected);
            }
            ct_release(narrow);
        }
        ct_release(t);
    }
    free(values);
    free(narrowed);
}

static void values_read_back_print_and_fill_as_in_pytorch(void **state)
{
    (void)state;
    const int64_t shape[1] = {3};
    ct_clear_error();
    /* torch.full((3,), 1e5, dtype=torch.half) refuses; bfloat16 holds it (rounded) */
    assert_null(ct_full(shape, 1, 1e5, CT_F16, CT_DEVICE_CPU));
    assert_error(CT_ERR_INVALID_ARGUMENT, "value 100000 cannot be converted to float16 without "
                 "overflow; float16 holds finite values up to 65504");
    ct_tensor *b = ct_full(shape, 1, 1e5, CT_BF16, CT_DEVICE_CPU);
    ct_tensor *first = ct_select(b, 0, 0);
    double value = 0;
    assert_int_equal(ct_item(first, &value), CT_OK);
    assert_true(value == 99840.0); /* 1e5 in bfloat16 */
    ct_release(first);
    ct_release(b);

    const float data[3] = {1.5f, -2.0f, 0.1f};
    ct_tensor *f = ct_tensor_from_data(data, CT_F32, shape, 1, CT_DEVICE_CPU);
    ct_tensor *h = ct_to_dtype(f, CT_F16);
    char *text = ct_tensor_to_string(h);
    assert_string_equal(text, "tensor([ 1.5000, -2.0000,  0.1000], device='cpu', dtype=float16)");
    free(text);
    ct_tensor *third = ct_select(h, 0, 2);
    assert_int_equal(ct_item(third, &value), CT_OK);
    assert_true(value == (double)ct_f16_to_float(ct_float_to_f16(0.1f))); /* 0.0999755859375 */
    int64_t integer = 0;
    ct_tensor *second = ct_select(h, 0, 1);
    assert_int_equal(ct_item_int64(second, &integer), CT_OK);
    assert_int_equal(integer, -2);
    assert_int_equal(ct_tensor_dtype(h), CT_F16);
    assert_int_equal(ct_dtype_size(CT_F16), 2);
    assert_string_equal(ct_dtype_name(CT_BF16), "bfloat16");
    ct_release(second), ct_release(third), ct_release(h), ct_release(f);

    /* random numbers: the same for a seed on every device, and uniform ones below 1 */
    ct_device devices[8];
    int count = ct_test_devices(devices);
    const int64_t many[1] = {4096};
    for (int format = 0; format < 2; format++) {
        ct_dtype dtype = format ? CT_BF16 : CT_F16;
        uint16_t reference[4096], got[4096];
        for (int d = 0; d < count; d++) {
            ct_manual_seed(7);
            ct_tensor *u = ct_rand(many, 1, dtype, devices[d]);
            assert_int_equal(ct_tensor_to_array(u, d ? got : reference, sizeof got), CT_OK);
            if (d) assert_memory_equal(got, reference, sizeof got);
            ct_release(u);
        }
        for (int k = 0; k < 4096; k++) {
            float v = format ? ct_bf16_to_float(reference[k]) : ct_f16_to_float(reference[k]);
            assert_true(v >= 0.0f && v < 1.0f);
        }
    }
}

static void mixed_dtypes_promote_as_in_pytorch(void **state)
{
    (void)state;
    assert_int_equal(ct_promote_types(CT_F16, CT_F32), CT_F32);
    assert_int_equal(ct_promote_types(CT_BF16, CT_F64), CT_F64);
    assert_int_equal(ct_promote_types(CT_F16, CT_BF16), CT_F32);
    assert_int_equal(ct_promote_types(CT_BF16, CT_F16), CT_F32);
    assert_int_equal(ct_promote_types(CT_I64, CT_F16), CT_F16);
    assert_int_equal(ct_promote_types(CT_BF16, CT_U8), CT_BF16);
    assert_int_equal(ct_promote_types(CT_BOOL, CT_BF16), CT_BF16);
    assert_true(ct_dtype_is_floating(CT_F16) && ct_dtype_is_floating(CT_BF16));
    assert_false(ct_dtype_is_integral(CT_BF16));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_pattern_widens_as_the_host_does),
        cmocka_unit_test(floats_narrow_as_the_host_does),
        cmocka_unit_test(values_read_back_print_and_fill_as_in_pytorch),
        cmocka_unit_test(mixed_dtypes_promote_as_in_pytorch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
