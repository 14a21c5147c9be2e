/* ct_device_kernel_launches counts what reaches each device: a kernel launch or a BLAS call is
 * one, on that device alone; an op with nothing to do (empty tensors) is none; index -1 reads
 * the current device's count; a NULL out or a device that is not there is an error. */
#include "test_common.h"

static uint64_t launches_of(ct_device device)
{
    uint64_t n = 0;
    assert_int_equal(ct_device_kernel_launches(device, &n), CT_OK);
    return n;
}

/* The launches an add and a matmul of 4x4 float32 tensors (1 kernel, 1 gemm) and an add of
 * empty ones (none) cost on device, and that no other device of the list counted them. */
static void expect_counts(ct_device device, const ct_device *others, int other_count)
{
    int64_t shape[2] = {4, 4}, empty[2] = {0, 4};
    ct_tensor *a = ct_ones(shape, 2, CT_F32, device), *b = ct_full(shape, 2, 2.0, CT_F32, device);
    ct_tensor *e = ct_zeros(empty, 2, CT_F32, device);
    assert_non_null(a), assert_non_null(b), assert_non_null(e);
    uint64_t others_before[8];
    for (int k = 0; k < other_count; k++) others_before[k] = launches_of(others[k]);
    uint64_t before = launches_of(device);
    ct_tensor *sum = ct_add(a, b);
    assert_non_null(sum);
    assert_int_equal(launches_of(device) - before, 1);
    ct_tensor *product = ct_matmul(a, b);
    assert_non_null(product);
    assert_int_equal(launches_of(device) - before, 2);
    ct_tensor *nothing = ct_add(e, e);
    assert_non_null(nothing);
    assert_int_equal(launches_of(device) - before, 2);
    for (int k = 0; k < other_count; k++) assert_int_equal(launches_of(others[k]), others_before[k]);
    ct_release(a), ct_release(b), ct_release(e), ct_release(sum), ct_release(product), ct_release(nothing);
}

static void the_cpu_counts_kernels_and_gemms(void **state)
{
    (void)state;
    ct_device opencl[1] = {{CT_OPENCL, 0}};
    expect_counts(CT_DEVICE_CPU, opencl, ct_device_count(CT_OPENCL) > 0 ? 1 : 0);
}

static void each_opencl_device_counts_its_own(void **state)
{
    (void)state;
    int count = ct_device_count(CT_OPENCL);
    if (count == 0) skip();
    for (int i = 0; i < count && i < 7; i++) {
        ct_device others[8] = {CT_DEVICE_CPU};
        int n = 1;
        for (int j = 0; j < count && n < 8; j++)
            if (j != i) others[n++] = (ct_device){CT_OPENCL, j};
        expect_counts((ct_device){CT_OPENCL, i}, others, n);
    }
}

static void index_minus_one_reads_the_current_device(void **state)
{
    (void)state;
    int count = ct_device_count(CT_OPENCL);
    if (count == 0) skip();
    ct_device last = {CT_OPENCL, count - 1};
    assert_int_equal(ct_set_device(last), CT_OK);
    int64_t shape[1] = {8};
    ct_tensor *a = ct_ones(shape, 1, CT_F32, last);
    uint64_t before = launches_of(last);
    ct_tensor *b = ct_neg(a);
    assert_non_null(b);
    assert_int_equal(launches_of((ct_device){CT_OPENCL, -1}), before + 1);
    assert_int_equal(ct_set_device((ct_device){CT_OPENCL, 0}), CT_OK);
    ct_release(a), ct_release(b);
}

static void a_missing_device_or_null_out_is_an_error(void **state)
{
    (void)state;
    uint64_t n = 7;
    assert_int_equal(ct_device_kernel_launches(CT_DEVICE_CPU, NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "launches is NULL");
    assert_int_equal(ct_device_kernel_launches((ct_device){CT_OPENCL, 99}, &n), CT_ERR_DEVICE);
    assert_error(CT_ERR_DEVICE, "opencl:99");
    assert_int_equal(ct_device_kernel_launches((ct_device){CT_CPU, -3}, &n), CT_ERR_DEVICE);
    assert_int_equal(n, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_cpu_counts_kernels_and_gemms),
        cmocka_unit_test(each_opencl_device_counts_its_own),
        cmocka_unit_test(index_minus_one_reads_the_current_device),
        cmocka_unit_test(a_missing_device_or_null_out_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
