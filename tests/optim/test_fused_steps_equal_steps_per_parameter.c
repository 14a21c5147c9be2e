/* Fused optimizer steps (a few tensors per launch) against steps per parameter: the same bits,
 * and a constant number of launches per step, on the CPU and on every OpenCL device (PoCL:
 * POCL_DEVICES="pthread pthread" gives two). See optim/fused_steps.h. */
#include "optim/fused_steps.h"

static void same_bits_on_the_cpu(void **state)
{
    (void)state;
    fused_check_same_bits(CT_DEVICE_CPU);
}

static void same_bits_on_opencl(void **state)
{
    (void)state;
    int count = ct_device_count(CT_OPENCL);
    if (count == 0) skip();
    for (int i = 0; i < count; i++) fused_check_same_bits((ct_device){CT_OPENCL, i});
}

static void launches_per_step_are_constant_on_the_cpu(void **state)
{
    (void)state;
    fused_check_launch_counts(CT_DEVICE_CPU);
}

static void launches_per_step_are_constant_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    fused_check_launch_counts((ct_device){CT_OPENCL, 0});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_bits_on_the_cpu),
        cmocka_unit_test(same_bits_on_opencl),
        cmocka_unit_test(launches_per_step_are_constant_on_the_cpu),
        cmocka_unit_test(launches_per_step_are_constant_on_opencl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
