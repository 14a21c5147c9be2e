/* Reductions and softmax run where their input is: on a (fake) accelerator the result stays on
 * that device, with the values the CPU gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "support/fake_device.h"

static void results_stay_on_the_input_device_and_match_the_cpu(void **state)
{
    (void)state;
    float data[6] = {1.0f, -2.0f, 3.5f, 0.25f, 8.0f, -1.0f};
    int64_t shape[2] = {2, 3};
    ct_device device = {CT_OPENCL, 1};
    ct_tensor *cpu = ct_tensor_from_data(data, CT_F32, shape, 2, CT_DEVICE_CPU);
    ct_tensor *on_device = ct_to(cpu, device);
    assert_non_null(on_device);
    int dim = 1;
    ct_tensor *pairs[5][2] = {
        {ct_sum(cpu, &dim, 1, false), ct_sum(on_device, &dim, 1, false)},
        {ct_max(cpu, NULL, 0, false), ct_max(on_device, NULL, 0, false)},
        {ct_var(cpu, &dim, 1, 1, true), ct_var(on_device, &dim, 1, 1, true)},
        {ct_argmin(cpu, 1, false), ct_argmin(on_device, 1, false)},
        {ct_softmax(cpu, 0), ct_softmax(on_device, 0)},
    };
    for (int i = 0; i < 5; i++) {
        assert_non_null(pairs[i][0]);
        assert_non_null(pairs[i][1]);
        assert_true(ct_device_equal(ct_tensor_device(pairs[i][1]), device));
        ct_tensor *back = ct_to(pairs[i][1], CT_DEVICE_CPU);
        double a[6] = {0}, b[6] = {0};
        int64_t n = ct_numel(back);
        size_t bytes = (size_t)n * ct_dtype_size(ct_tensor_dtype(back));
        assert_int_equal(ct_tensor_to_array(pairs[i][0], a, bytes), CT_OK);
        assert_int_equal(ct_tensor_to_array(back, b, bytes), CT_OK);
        assert_memory_equal(a, b, bytes);
        ct_release(back);
        ct_release(pairs[i][0]);
        ct_release(pairs[i][1]);
    }
    ct_release(on_device);
    ct_release(cpu);
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(results_stay_on_the_input_device_and_match_the_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
