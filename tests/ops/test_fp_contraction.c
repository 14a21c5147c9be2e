/* No device fuses a * b + c into one rounding (an FMA): results must not depend on the compiler
 * or on the instruction set, and where the target has FMA clang contracts by default (GCC in its
 * GNU modes), PoCL too (it did here before FP_CONTRACT OFF), NVRTC unless told --fmad=false. See
 * -ffp-contract=off in CMakeLists.txt, FP_CONTRACT in kernels/dialect.h, cuda_programs.c.
 *
 * The probe: batch normalisation in evaluation computes y = (x - mean) * scale + bias per
 * element (kernels/batch_norm.ct, batch_norm_apply). With mean 0, variance 1, eps 0 (scale = weight),
 * weight = x = 1 + 2^-k and bias = -(1 + 2^-(k-1)), the product (1 + 2^-k)^2 = 1 + 2^-(k-1) + 2^-2k
 * rounds to 1 + 2^-(k-1) when k is past half the mantissa (k = 27 for float64, 12 for float32):
 * separate roundings give exactly 0, a fused one 2^-2k. */
#include <math.h>
#include <stdio.h>

#include "test_common.h"

static void check_device(ct_device device, ct_dtype dtype)
{
    int k = dtype == CT_F64 ? 27 : 12;
    double one_up = 1 + ldexp(1, -k), bias_value = -(1 + ldexp(1, -(k - 1)));
    double values[4] = {one_up, one_up, one_up, one_up};
    int64_t shape[2] = {4, 1}, channels = 1;
    double zero = 0, one = 1;
    char where[CT_DEVICE_STRING_MAX];
    ct_device_format(device, where, sizeof where);
    ct_scope_push();
    ct_tensor *x = ct_to(ct_to_dtype(ct_tensor_from_data(values, CT_F64, shape, 2, CT_DEVICE_CPU), dtype), device);
    ct_tensor *weight = ct_to(ct_to_dtype(ct_tensor_from_data(&one_up, CT_F64, &channels, 1, CT_DEVICE_CPU), dtype), device);
    ct_tensor *bias = ct_to(ct_to_dtype(ct_tensor_from_data(&bias_value, CT_F64, &channels, 1, CT_DEVICE_CPU), dtype), device);
    ct_tensor *mean = ct_to(ct_to_dtype(ct_tensor_from_data(&zero, CT_F64, &channels, 1, CT_DEVICE_CPU), dtype), device);
    ct_tensor *var = ct_to(ct_to_dtype(ct_tensor_from_data(&one, CT_F64, &channels, 1, CT_DEVICE_CPU), dtype), device);
    ct_tensor *y = ct_to_dtype(ct_to(ct_batch_norm(x, mean, var, weight, bias, false, 0.1, 0.0), CT_DEVICE_CPU), CT_F64);
    double got[4];
    if (!y || ct_tensor_to_array(y, got, sizeof got) != CT_OK)
        fail_msg("%s %s: %s", where, ct_dtype_name(dtype), ct_last_error_message());
    for (int i = 0; i < 4; i++)
        if (got[i] != 0)
            fail_msg("%s %s: (x - mean) * scale + bias gave %a where separate roundings give 0 "
                     "(%a is the fused result): the kernels were built with contraction on",
                     where, ct_dtype_name(dtype), got[i], ldexp(1, -2 * k));
    ct_scope_pop();
}

static void check_on(ct_device device)
{
    check_device(device, CT_F32);
    check_device(device, CT_F64);
}

static void no_contraction_on_the_cpu(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
}

static void no_contraction_on_the_devices(void **state)
{
    (void)state;
    const ct_device_type types[] = {CT_OPENCL, CT_CUDA};
    int seen = 0;
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < ct_device_count(types[t]); i++, seen++) check_on((ct_device){types[t], i});
    ct_clear_error();
    if (seen == 0) skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_contraction_on_the_cpu),
        cmocka_unit_test(no_contraction_on_the_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
